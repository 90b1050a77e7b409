import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  authorizationOf,
  readGitCredential,
  secretValuesOf,
  type CredentialRefusal,
  type SecretCredential,
} from "../../../internal/gitauth/credentials.ts";

/** Secret data as the API returns it: every value base64-encoded. */
const secret = (values: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v).toString("base64")]));

const https = "https://github.com/example/fleet.git";
const sshUrl = "ssh://git@github.com/example/fleet.git";
const scpUrl = "git@github.com:example/fleet.git";
const privateKey =
  "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n";
const caCert = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ\n-----END CERTIFICATE-----\n";

function credential(result: SecretCredential | CredentialRefusal): SecretCredential {
  assert.ok("kind" in result, `expected a credential, got: ${"message" in result ? result.message : "?"}`);
  return result;
}
function refusal(result: SecretCredential | CredentialRefusal): CredentialRefusal {
  assert.ok("reason" in result, "expected a refusal, got a credential");
  assert.equal(result.reason, "CredentialsInvalid");
  return result;
}

describe("readGitCredential", () => {
  it("reads username and password as basic auth, with ca.crt beside it", () => {
    assert.deepEqual(
      readGitCredential(secret({ username: "bot", password: "s3cret", "ca.crt": caCert }), https),
      { kind: "basic", username: "bot", password: "s3cret", caCert },
    );
  });

  it("reads token as a token, over bearerToken", () => {
    assert.deepEqual(readGitCredential(secret({ token: "tok-a", bearerToken: "tok-b" }), https), {
      kind: "token",
      token: "tok-a",
    });
  });

  it("reads bearerToken alone as a bearer token (Flux and Argo CD)", () => {
    assert.deepEqual(readGitCredential(secret({ bearerToken: "tok-b\n" }), "http://git.internal/fleet"), {
      kind: "bearer",
      token: "tok-b",
    });
  });

  it("reads a client certificate from tls.crt and tls.key, with ca.crt, beside basic auth", () => {
    assert.deepEqual(
      readGitCredential(
        secret({ username: "bot", password: "pw", "tls.crt": "CERT", "tls.key": "KEY", "ca.crt": caCert }),
        https,
      ),
      { kind: "basic", username: "bot", password: "pw", caCert, clientCert: "CERT", clientKey: "KEY" },
    );
  });

  it("reads Argo CD's tlsClientCertData and tlsClientCertKey as a client certificate", () => {
    assert.deepEqual(
      readGitCredential(
        secret({ tlsClientCertData: "CERT", tlsClientCertKey: "KEY", bearerToken: "t" }),
        https,
      ),
      { kind: "bearer", token: "t", clientCert: "CERT", clientKey: "KEY" },
    );
  });

  it("reads TLS material alone (a kubernetes.io/tls Secret, or a CA alone) as a credential of its own", () => {
    assert.deepEqual(readGitCredential(secret({ "tls.crt": "CERT", "tls.key": "KEY" }), https), {
      kind: "tls",
      clientCert: "CERT",
      clientKey: "KEY",
    });
    assert.deepEqual(readGitCredential(secret({ caFile: caCert }), https), { kind: "tls", caCert });
    assert.deepEqual(readGitCredential(secret({ "ca.crt": caCert, caFile: "legacy" }), https), {
      kind: "tls",
      caCert,
    });
  });

  it("refuses half a client certificate pair, naming the missing key", () => {
    assert.match(
      refusal(readGitCredential(secret({ token: "t", "tls.crt": "CERT" }), https)).message,
      /holds tls\.crt but no tls\.key/,
    );
    assert.match(
      refusal(readGitCredential(secret({ tlsClientCertKey: "KEY" }), https)).message,
      /holds tlsClientCertKey but no tlsClientCertData/,
    );
  });

  it("reads a password without a username as a token", () => {
    assert.deepEqual(readGitCredential(secret({ password: "ghp_abc" }), https), {
      kind: "token",
      token: "ghp_abc",
    });
  });

  it("basic wins over a token for an http URL", () => {
    const result = credential(
      readGitCredential(secret({ username: "bot", password: "pw", token: "tok" }), https),
    );
    assert.equal(result.kind, "basic");
  });

  it("reads an SSH key from ssh-privatekey, identity or sshPrivateKey, in that order", () => {
    const keyOf = (values: Record<string, string>) => {
      const result = credential(readGitCredential(secret(values), scpUrl));
      return result.kind === "ssh" ? result.privateKey : undefined;
    };
    assert.equal(keyOf({ "ssh-privatekey": "k8s", identity: "flux", sshPrivateKey: "argo" }), "k8s");
    assert.equal(keyOf({ identity: "flux", sshPrivateKey: "argo" }), "flux");
    assert.equal(keyOf({ sshPrivateKey: "argo" }), "argo");
  });

  it("reads Flux's known_hosts, and its password as the key's passphrase", () => {
    assert.deepEqual(
      readGitCredential(
        secret({ identity: privateKey, known_hosts: "github.com ssh-ed25519 AAAA", password: "phrase" }),
        sshUrl,
      ),
      { kind: "ssh", privateKey, knownHosts: "github.com ssh-ed25519 AAAA", passphrase: "phrase" },
    );
  });

  it("an SSH key wins over HTTP keys for an SSH URL", () => {
    const result = credential(
      readGitCredential(secret({ sshPrivateKey: privateKey, username: "u", token: "t" }), scpUrl),
    );
    assert.equal(result.kind, "ssh");
  });

  it("an SSH key does not fit an https URL, even beside Flux's passphrase", () => {
    const { message } = refusal(
      readGitCredential(secret({ identity: privateKey, password: "phrase" }), https),
    );
    assert.match(message, /SSH private key \(identity\).*does not fit an http\(s\) URL/);
    assert.match(message, /username and password, token/);
  });

  it("basic or token credentials do not fit an ssh:// or scp-like URL", () => {
    for (const url of [sshUrl, scpUrl]) {
      const { message } = refusal(readGitCredential(secret({ username: "bot", password: "pw" }), url));
      assert.match(message, /HTTP credentials \(username, password\).*do not fit an SSH URL/);
      assert.match(message, /ssh-privatekey, identity, sshPrivateKey/);
    }
    assert.match(refusal(readGitCredential(secret({ token: "tok" }), scpUrl)).message, /\(token\)/);
  });

  it("refuses a Secret with no key it reads, listing the keys found", () => {
    const { message } = refusal(readGitCredential(secret({ url: https, type: "git" }), https));
    assert.match(message, /its keys are: type, url\./);
    assert.match(refusal(readGitCredential(undefined, scpUrl)).message, /its keys are: none\./);
  });

  it("counts blank values as absent and trims tokens", () => {
    assert.deepEqual(readGitCredential(secret({ username: " ", password: "ghp_abc\n" }), https), {
      kind: "token",
      token: "ghp_abc",
    });
    refusal(readGitCredential(secret({ token: "\n" }), https));
  });

  it("refuses a URL that is neither http(s) nor SSH", () => {
    assert.match(
      refusal(readGitCredential(secret({ token: "t" }), "file:///srv/git/fleet")).message,
      /neither/,
    );
  });

  it("never puts a secret value in a refusal message", () => {
    const values = {
      username: "user-VALUE-1",
      password: "pass-VALUE-2",
      token: "tok-VALUE-3",
      bearerToken: "bearer-VALUE-4",
      identity: "key-VALUE-5",
      known_hosts: "hosts-VALUE-6",
      "ca.crt": "ca-VALUE-7",
      "tls.key": "tlskey-VALUE-9",
    };
    const cases: [Record<string, string>, string][] = [
      [{ identity: values.identity, password: values.password, known_hosts: values.known_hosts }, https],
      [{ username: values.username, password: values.password, "ca.crt": values["ca.crt"] }, scpUrl],
      [{ token: values.token, bearerToken: values.bearerToken }, sshUrl],
      [{ username: values.username }, https],
      [{ username: values.username, "tls.key": values["tls.key"] }, https],
      [values, "ftp://user:pass-VALUE-8@example.com/fleet.git"],
    ];
    for (const [data, url] of cases) {
      const { message } = refusal(readGitCredential(secret(data), url));
      for (const value of [...Object.values(values), "pass-VALUE-8"]) {
        assert.ok(!message.includes(value), `message leaks ${value}: ${message}`);
        assert.ok(!message.includes(Buffer.from(value).toString("base64")), `message leaks ${value} encoded`);
      }
    }
  });
});

describe("authorizationOf", () => {
  it("sends basic auth as written", () => {
    assert.equal(
      authorizationOf({ kind: "basic", username: "bot", password: "pw" }),
      `Basic ${Buffer.from("bot:pw").toString("base64")}`,
    );
  });

  it("sends a token as the password beside the username git", () => {
    assert.equal(
      authorizationOf({ kind: "token", token: "ghp_abc" }),
      `Basic ${Buffer.from("git:ghp_abc").toString("base64")}`,
    );
  });

  it("sends a bearer token as a bearer token, and TLS material alone as no header", () => {
    assert.equal(authorizationOf({ kind: "bearer", token: "tok" }), "Bearer tok");
    assert.equal(authorizationOf({ kind: "tls", clientCert: "C", clientKey: "K" }), undefined);
  });
});

describe("secretValuesOf", () => {
  it("names the password, the token and the client key, never the certificates", () => {
    assert.deepEqual(
      secretValuesOf({
        kind: "basic",
        username: "bot",
        password: "pass",
        caCert,
        clientCert: "CERT",
        clientKey: "KEY-1",
      }),
      ["pass", "KEY-1"],
    );
    assert.deepEqual(secretValuesOf({ kind: "bearer", token: "tok-1" }), ["tok-1"]);
  });
});
