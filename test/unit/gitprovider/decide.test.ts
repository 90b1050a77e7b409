import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decideProvider } from "../../../internal/gitprovider/decide.ts";
import { describeCheck } from "../../../internal/gitprovider/describe.ts";
import {
  defaultRecheckIntervals,
  gitBranchRecheckIntervals,
  nextPass,
  recheckRateLimiter,
  RetryWithBackoff,
} from "../../../internal/gitprovider/recheck.ts";
import type { RemoteCheck } from "../../../internal/gitprovider/remotecheck.ts";
import type { ConditionUpdate } from "../../../internal/operator/conditions.ts";

const context = {
  url: "https://bot:hunter22@git.example.com/org/repo.git",
  provider: "team-a/repo",
  secret: "team-a/git-creds",
};
const find = (conditions: ConditionUpdate[], type: string) => conditions.find((c) => c.type === type)!;

const everyCheck: RemoteCheck[] = [
  { kind: "answered" },
  { kind: "secretNotFound", secret: "team-a/git-creds" },
  { kind: "credentialUnreadable", message: "The credential Secret holds nothing an http(s) URL can use." },
  { kind: "refused", status: 401 },
  { kind: "refused", status: 403 },
  { kind: "notFound" },
  { kind: "failed", transient: true, detail: "the connection was refused (ECONNREFUSED)" },
  { kind: "failed", transient: false, detail: "the URL answered, but not as a Git smart HTTP server" },
];

describe("GitProvider status", () => {
  it("a repository that answered is Ready, Validated and Reachable, and verified now", () => {
    const d = decideProvider({ kind: "answered" }, context, 3);
    assert.equal(find(d.conditions, "Ready").status, "True");
    assert.equal(find(d.conditions, "Ready").reason, "Succeeded");
    assert.equal(find(d.conditions, "Validated").status, "True");
    assert.equal(find(d.conditions, "Reachable").status, "True");
    assert.equal(find(d.conditions, "Ready").observedGeneration, 3);
    assert.equal(d.verified, true);
    assert.equal(d.recheck, "steady");
  });

  it("a missing Secret is SecretNotFound: not Validated, reachability not checked, looked at again", () => {
    const d = decideProvider({ kind: "secretNotFound", secret: "team-a/git-creds" }, context, 1);
    assert.equal(find(d.conditions, "Ready").reason, "SecretNotFound");
    assert.equal(find(d.conditions, "Stalled").status, "True");
    assert.equal(find(d.conditions, "Validated").status, "False");
    assert.equal(find(d.conditions, "Reachable").status, "Unknown");
    assert.match(find(d.conditions, "Ready").message, /Secret team-a\/git-creds .* does not exist/);
    assert.equal(d.verified, false);
    assert.equal(d.recheck, "blocked");
  });

  it("an unreadable Secret and a refused credential are both CredentialsInvalid", () => {
    const unreadable = decideProvider(everyCheck[2]!, context, 1);
    assert.equal(find(unreadable.conditions, "Validated").reason, "CredentialsInvalid");
    for (const status of [401, 403] as const) {
      const refused = decideProvider({ kind: "refused", status }, context, 1);
      assert.equal(find(refused.conditions, "Ready").reason, "CredentialsInvalid");
      assert.equal(find(refused.conditions, "Validated").status, "True");
      assert.equal(find(refused.conditions, "Reachable").status, "False");
      assert.equal(find(refused.conditions, "Stalled").status, "True");
      assert.equal(refused.recheck, "blocked");
    }
  });

  it("a 404 and a network error are RepositoryUnreachable; only the network error backs off", () => {
    const notFound = decideProvider({ kind: "notFound" }, context, 1);
    assert.equal(find(notFound.conditions, "Ready").reason, "RepositoryUnreachable");
    assert.equal(notFound.recheck, "blocked");
    const down = decideProvider(everyCheck[6]!, context, 1);
    assert.equal(find(down.conditions, "Ready").reason, "RepositoryUnreachable");
    assert.equal(find(down.conditions, "Reconciling").status, "True");
    assert.equal(find(down.conditions, "Stalled").status, "False");
    assert.equal(down.recheck, "backoff");
  });

  it("a wrong credential's message says what to fix", () => {
    const d = decideProvider({ kind: "refused", status: 401 }, context, 1);
    assert.equal(
      find(d.conditions, "Ready").message,
      "https://git.example.com/org/repo.git did not accept the credential in Secret team-a/git-creds (401 Unauthorized): check its username and password, or its token.",
    );
  });

  it("a URL carrying user info is not called anonymous", () => {
    assert.equal(
      describeCheck({ kind: "answered" }, { ...context, secret: undefined, forPush: false }),
      "https://git.example.com/org/repo.git answered a ref advertisement with the user info in spec.url.",
    );
  });

  it("no message carries the URL's password", () => {
    for (const check of everyCheck) {
      for (const forPush of [false, true]) {
        const message = describeCheck(check, { ...context, forPush });
        assert.ok(!message.includes("hunter22"), message);
      }
      for (const c of decideProvider(check, context, 1).conditions)
        assert.ok(!c.message.includes("hunter22"));
    }
  });

  it("a push session refused with 403 reads as a read-only credential", () => {
    assert.match(
      describeCheck({ kind: "refused", status: 403 }, { ...context, forPush: true }),
      /refused a push session .* it may read the repository but not push to it/,
    );
  });

  it("an anonymous provider asked for a credential says spec.secretRef names none", () => {
    assert.match(
      describeCheck(
        { kind: "refused", status: 401 },
        { ...context, url: "https://git.example.com/org/repo.git", secret: undefined, forPush: false },
      ),
      /asks for a credential \(401 Unauthorized\), and the GitProvider's spec.secretRef names none/,
    );
  });
});

describe("when a credential is checked again", () => {
  it("a working credential is re-proved every 5 minutes", () => {
    assert.deepEqual(nextPass("steady", defaultRecheckIntervals, "m"), { requeueAfterMs: 300_000 });
  });

  it("a credential a human must fix is looked at again every minute", () => {
    assert.deepEqual(nextPass("blocked", defaultRecheckIntervals, "m"), { requeueAfterMs: 60_000 });
  });

  it("a transient failure retries with backoff from a second, never waiting longer than the steady interval", () => {
    assert.throws(() => nextPass("backoff", defaultRecheckIntervals, "down"), RetryWithBackoff);
    // A random source of 1 takes the jitter's ceiling: the schedule itself.
    const limiter = recheckRateLimiter(defaultRecheckIntervals, () => 1);
    const delays = Array.from({ length: 12 }, () => limiter.when("team-a/repo"));
    assert.deepEqual(delays.slice(0, 3), [1_000, 2_000, 4_000]);
    assert.equal(Math.max(...delays), 300_000);
  });

  it("a GitBranch whose remote cannot be reached is looked at again within 10 s, however long the outage", () => {
    const limiter = recheckRateLimiter(gitBranchRecheckIntervals, () => 1);
    const delays = Array.from({ length: 30 }, () => limiter.when("team-a/main"));
    assert.deepEqual(delays.slice(0, 4), [1_000, 2_000, 4_000, 8_000]);
    assert.equal(Math.max(...delays), 10_000);
  });

  it("a block a watch will clear waits for the watch", () => {
    assert.deepEqual(nextPass(undefined, defaultRecheckIntervals, "m"), {});
  });
});
