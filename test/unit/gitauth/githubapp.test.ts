import assert from "node:assert/strict";
import { verify } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { GitProvider } from "../../../generated/v1alpha3/index.ts";
import { withTransport } from "../../../internal/git/engine/transport.ts";
import {
  authorizationOf,
  readGitCredential,
  type CredentialRefusal,
  type GitHubAppCredential,
  type SecretCredential,
} from "../../../internal/gitauth/credentials.ts";
import {
  appJwt,
  exchangeInstallationToken,
  GitHubAppError,
  InstallationTokens,
  installationTokens,
  type GitHubApp,
  type IssuedToken,
} from "../../../internal/gitauth/githubapp.ts";
import { probeWith } from "../../../internal/gitprovider/remotecheck.ts";
import { generateAppKey, GitHubAppServer } from "../../support/githubapp.ts";

const secret = (values: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v).toString("base64")]));
const https = "https://github.com/example/fleet.git";
const key = generateAppKey();
const other = generateAppKey();

function app(result: SecretCredential | CredentialRefusal): GitHubAppCredential {
  assert.ok("kind" in result, `expected a credential, got: ${"message" in result ? result.message : "?"}`);
  assert.ok(result.kind === "githubApp");
  return result;
}
function refusal(result: SecretCredential | CredentialRefusal): string {
  assert.ok("reason" in result, "expected a refusal, got a credential");
  assert.equal(result.reason, "CredentialsInvalid");
  return result.message;
}
const decode = (part: string) =>
  JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as Record<string, number | string>;

describe("the GitHub App's JWT", () => {
  it("is RS256 over iat a minute back, exp at most ten minutes ahead and iss the App's ID, signed by its key", () => {
    const nowMs = Date.parse("2026-03-01T12:00:00Z");
    const jwt = appJwt("4242", key.privateKey, nowMs);
    const [head, body, signature] = jwt.split(".") as [string, string, string];
    assert.deepEqual(decode(head), { alg: "RS256", typ: "JWT" });
    const now = nowMs / 1000;
    const claims = decode(body);
    assert.deepEqual(claims, { iat: now - 60, exp: now + 540, iss: "4242" });
    const [iat, exp] = [Number(claims.iat), Number(claims.exp)];
    assert.ok(exp - now <= 600 && exp - iat <= 600);
    const data = Buffer.from(`${head}.${body}`);
    const sig = Buffer.from(signature, "base64url");
    assert.ok(verify("sha256", data, key.publicKey, sig), "verifies with the App's public key");
    assert.ok(!verify("sha256", data, other.publicKey, sig), "not with another key");
  });
});

describe("reading a GitHub App from a credential Secret", () => {
  const values = {
    githubAppID: "4242",
    githubAppInstallationID: "77\n",
    githubAppPrivateKey: key.privateKey,
  };

  it("reads Flux's keys, with githubAppBaseURL as the API's base", () => {
    const read = app(
      readGitCredential(
        secret({ ...values, githubAppBaseURL: "https://ghe.example.com/api/v3/", "ca.crt": "CA" }),
        https,
      ),
    );
    assert.deepEqual(read, {
      kind: "githubApp",
      appId: "4242",
      installationId: "77",
      privateKey: key.privateKey,
      apiUrl: "https://ghe.example.com/api/v3",
      caCert: "CA",
    });
  });

  it("reads Argo CD's keys, with githubAppEnterpriseBaseUrl as the API's base", () => {
    const read = app(
      readGitCredential(
        secret({ ...values, githubAppEnterpriseBaseUrl: "https://ghe.example.com/api/v3" }),
        https,
      ),
    );
    assert.equal(read.apiUrl, "https://ghe.example.com/api/v3");
  });

  it("reaches https://api.github.com when no base is named, and takes the App over username and password", () => {
    const read = app(readGitCredential(secret({ ...values, username: "u", password: "p" }), https));
    assert.equal(read.apiUrl, "https://api.github.com");
  });

  it("refuses an App missing a key, naming it, and Flux's githubAppInstallationOwner in its place", () => {
    assert.match(
      refusal(readGitCredential(secret({ githubAppID: "1", githubAppPrivateKey: key.privateKey }), https)),
      /holds a GitHub App without githubAppInstallationID: an App needs githubAppID, githubAppInstallationID, githubAppPrivateKey/,
    );
    assert.match(
      refusal(
        readGitCredential(
          secret({
            githubAppID: "1",
            githubAppInstallationOwner: "example",
            githubAppPrivateKey: key.privateKey,
          }),
          https,
        ),
      ),
      /githubAppInstallationOwner is not read/,
    );
  });

  it("refuses a key that is not RSA PEM, an installation ID that is not a number, and a base URL that is not http(s)", () => {
    assert.match(
      refusal(
        readGitCredential(
          secret({ ...values, githubAppPrivateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\n..." }),
          https,
        ),
      ),
      /githubAppPrivateKey is not an RSA private key in PEM/,
    );
    assert.match(
      refusal(readGitCredential(secret({ ...values, githubAppInstallationID: "my-org" }), https)),
      /githubAppInstallationID is not a number/,
    );
    const message = refusal(
      readGitCredential(
        secret({ ...values, githubAppBaseURL: "https://u:pw-SECRET@ghe.example.com/api/v3" }),
        https,
      ),
    );
    assert.match(message, /githubAppBaseURL is not an http\(s\) URL without user info/);
    assert.ok(!message.includes("pw-SECRET"));
  });

  it("does not fit an SSH URL", () => {
    assert.match(
      refusal(readGitCredential(secret(values), "git@github.com:example/fleet.git")),
      /HTTP credentials \(githubAppID, githubAppInstallationID, githubAppPrivateKey\).*do not fit an SSH URL/,
    );
  });

  it("never puts the private key in a refusal", () => {
    const message = refusal(readGitCredential(secret({ ...values, githubAppInstallationID: "x" }), https));
    assert.ok(!message.includes("PRIVATE KEY"));
  });
});

describe("InstallationTokens", () => {
  const appOf = (privateKey = "KEY-A"): GitHubApp => ({
    appId: "4242",
    installationId: "77",
    privateKey,
    apiUrl: "https://api.github.com",
  });
  /** A cache on a clock the test moves, whose exchange issues `tok-N` tokens living `lifeMs`. */
  const fixture = (lifeMs: number, marginMs: number) => {
    let now = 1_000_000;
    const calls: number[] = [];
    let fail: GitHubAppError | undefined;
    const tokens = new InstallationTokens({
      marginMs,
      now: () => now,
      exchange: (_app, nowMs): Promise<IssuedToken> => {
        calls.push(nowMs);
        if (fail) return Promise.reject(fail);
        return Promise.resolve({ token: `tok-${calls.length}`, expiresAt: nowMs + lifeMs, fetchedAt: nowMs });
      },
    });
    return {
      tokens,
      calls,
      advance: (ms: number) => (now += ms),
      failWith: (err: GitHubAppError | undefined) => (fail = err),
    };
  };

  it("reuses a token until the margin before it expires, then fetches a new one while the old still works", async () => {
    const { tokens, calls, advance } = fixture(60 * 60_000, 5 * 60_000);
    assert.equal(await tokens.token(appOf()), "tok-1");
    advance(54 * 60_000);
    assert.equal(await tokens.token(appOf()), "tok-1", "55 minutes before expiry: still the first");
    advance(60_000 + 1);
    assert.equal(await tokens.token(appOf()), "tok-2", "inside the five minutes: a new one");
    assert.equal(calls.length, 2);
    assert.equal(await tokens.token(appOf()), "tok-2");
  });

  it("never keeps a token past half its life, whatever the margin", async () => {
    const { tokens, advance } = fixture(10_000, 5 * 60_000);
    assert.equal(await tokens.token(appOf()), "tok-1");
    advance(4_999);
    assert.equal(await tokens.token(appOf()), "tok-1");
    advance(1);
    assert.equal(await tokens.token(appOf()), "tok-2");
  });

  it("shares one exchange between calls made at once, and keeps a token per key", async () => {
    const { tokens, calls } = fixture(60 * 60_000, 5 * 60_000);
    const both = await Promise.all([tokens.token(appOf()), tokens.token(appOf())]);
    assert.deepEqual(both, ["tok-1", "tok-1"]);
    assert.equal(await tokens.token(appOf("KEY-B")), "tok-2", "a replaced key is proven with an exchange");
    assert.equal(calls.length, 2);
  });

  it("keeps using a token that still works when a refresh fails for a while, and throws a refusal", async () => {
    const { tokens, advance, failWith } = fixture(60 * 60_000, 5 * 60_000);
    await tokens.token(appOf());
    advance(56 * 60_000);
    failWith(new GitHubAppError("unreachable", "unreachable", true));
    assert.equal(await tokens.token(appOf()), "tok-1", "the API down: the token in hand");
    failWith(new GitHubAppError("the App's private key was refused", "refused", false));
    await assert.rejects(tokens.token(appOf()), /private key was refused/);
    failWith(new GitHubAppError("unreachable", "unreachable", true));
    advance(4 * 60_000);
    await assert.rejects(tokens.token(appOf()), /unreachable/, "too close to its expiry to be used");
  });
});

describe("the installation token exchange", () => {
  let github: GitHubAppServer;
  before(async () => {
    github = await GitHubAppServer.start({
      appId: "4242",
      installations: ["77"],
      tokenLifetimeMs: 60 * 60_000,
    });
  });
  after(() => github?.close());
  const appWith = (overrides: Partial<GitHubApp> = {}): GitHubApp => ({
    appId: "4242",
    installationId: "77",
    privateKey: github.privateKey,
    apiUrl: github.apiUrl,
    ...overrides,
  });

  it("answers a token and its expiry for the App's JWT", async () => {
    const issued = await exchangeInstallationToken(appWith());
    assert.equal(issued.token, github.issued.at(-1)!.token);
    assert.equal(issued.expiresAt, github.issued.at(-1)!.expiresAt);
    assert.equal(github.checkPassword("x-access-token", issued.token), github.issued.at(-1)!.name);
  });

  it("names a refused key and a missing installation, quoting neither the key, the JWT nor a token", async () => {
    const badKey = await exchangeInstallationToken(appWith({ privateKey: other.privateKey })).catch(
      (e: unknown) => e,
    );
    assert.ok(badKey instanceof GitHubAppError && badKey.why === "refused" && !badKey.transient);
    assert.match(badKey.message, /GitHub App 4242: the App's private key was refused \(401/);
    const missing = await exchangeInstallationToken(appWith({ installationId: "99" })).catch(
      (e: unknown) => e,
    );
    assert.ok(missing instanceof GitHubAppError && missing.why === "refused");
    assert.match(missing.message, /installation 99 does not exist or is not installed for this App \(404/);
    for (const message of [badKey.message, missing.message]) {
      assert.ok(!/PRIVATE KEY|eyJ|ghs_/.test(message), message);
    }
  });

  it("takes an API that cannot be reached as transient", async () => {
    const down = await exchangeInstallationToken(appWith({ apiUrl: "http://127.0.0.1:1/api/v3" })).catch(
      (e: unknown) => e,
    );
    assert.ok(down instanceof GitHubAppError && down.why === "unreachable" && down.transient);
    assert.match(down.message, /could not be reached: ECONNREFUSED/);
  });

  it("a GitProvider's probe reports a refused exchange as an unusable credential, before the remote is asked", async () => {
    const provider = {
      metadata: { name: "p", namespace: "ns" },
      spec: { url: "http://127.0.0.1:1/fleet.git" },
    };
    const check = await probeWith(
      provider as GitProvider,
      { kind: "githubApp", ...appWith({ installationId: "99" }) },
      { forPush: false },
    );
    assert.equal(check.kind, "credentialUnreadable");
    assert.match("message" in check ? check.message : "", /installation 99 does not exist/);
  });

  it("a worker's transport asks for the header on every call", async () => {
    installationTokens.clear();
    const credential: GitHubAppCredential = { kind: "githubApp", ...appWith() };
    const authorization = authorizationOf(credential);
    assert.equal(typeof authorization, "function");
    const header = (env: Record<string, string>) => Promise.resolve(env.GIT_CONFIG_VALUE_0);
    const before = github.issued.length;
    const first = await withTransport({ kind: "http", authorization }, header);
    const basic = `Authorization: Basic ${Buffer.from(`x-access-token:${github.issued.at(-1)!.token}`).toString("base64")}`;
    assert.equal(first, basic);
    assert.equal(await withTransport({ kind: "http", authorization }, header), basic, "the cached token");
    assert.equal(github.issued.length, before + 1);
    installationTokens.clear();
    assert.notEqual(
      await withTransport({ kind: "http", authorization }, header),
      basic,
      "asked again: a new one",
    );
    installationTokens.clear();
  });
});
