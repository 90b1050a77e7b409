// The push receiver's pure parts: authentication per host type, what a payload names, which
// GitBranches a push wakes, how a burst of deliveries costs one look, and the GitReceiver status.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { describe, it } from "node:test";
import type { GitBranch, GitProvider, GitReceiver } from "../../../generated/v1alpha3/index.ts";
import { DeliveryLooks } from "../../../internal/git/worker/refresh.ts";
import { judgeHeaders, signatureHolds, webhookPath } from "../../../internal/receiver/auth.ts";
import { receiverStatus } from "../../../internal/receiver/decide.ts";
import { readDelivery } from "../../../internal/receiver/payload.ts";
import { branchesWoken } from "../../../internal/receiver/route.ts";

const token = "s3cret";
const body = Buffer.from(
  '{"ref":"refs/heads/main","repository":{"clone_url":"https://git.example.com/o/r.git"}}',
);
const hmac = (algorithm: string, key = token) => createHmac(algorithm, key).update(body).digest("hex");
const verified = (headers: Record<string, string>, type: Parameters<typeof judgeHeaders>[0]) => {
  const verdict = judgeHeaders(type, headers, token);
  if (verdict.kind === "signed") return signatureHolds(verdict, body, token);
  return verdict.kind === "accepted";
};

describe("a delivery is authenticated as Flux's Receiver of its type authenticates it", () => {
  it("github: X-Hub-Signature-256 is sha256=<hex HMAC of the body>", () => {
    assert.equal(verified({ "x-hub-signature-256": `sha256=${hmac("sha256")}` }, "github"), true);
    assert.equal(verified({ "x-hub-signature-256": `sha256=${hmac("sha256", "other")}` }, "github"), false);
    assert.equal(judgeHeaders("github", {}, token).kind, "refused", "no signature: refused from the headers");
    assert.equal(
      judgeHeaders("github", { "x-hub-signature-256": `sha1=${hmac("sha1")}` }, token).kind,
      "refused",
    );
  });

  it("gitlab: X-Gitlab-Token is the token, judged before any of the body", () => {
    assert.deepEqual(judgeHeaders("gitlab", { "x-gitlab-token": token }, token), { kind: "accepted" });
    assert.equal(judgeHeaders("gitlab", { "x-gitlab-token": "s3cre" }, token).kind, "refused");
    assert.equal(
      judgeHeaders("gitlab", { "x-gitlab-token": "" }, "").kind,
      "refused",
      "an empty token admits nothing",
    );
    assert.equal(judgeHeaders("gitlab", {}, "").kind, "refused");
  });

  it("gitea: X-Gitea-Signature is the bare hex HMAC-SHA256", () => {
    assert.equal(verified({ "x-gitea-signature": hmac("sha256") }, "gitea"), true);
    assert.equal(verified({ "x-gitea-signature": `sha256=${hmac("sha256")}` }, "gitea"), false);
  });

  it("generic-hmac: X-Signature names its algorithm, sha1, sha256 or sha512", () => {
    for (const algorithm of ["sha1", "sha256", "sha512"])
      assert.equal(
        verified({ "x-signature": `${algorithm}=${hmac(algorithm)}` }, "generic-hmac"),
        true,
        algorithm,
      );
    assert.equal(verified({ "x-signature": `md5=${hmac("md5")}` }, "generic-hmac"), false);
  });

  it("the webhook path is the hex HMAC of namespace/name keyed by the token", () => {
    const path = webhookPath("team-a", "github", token);
    assert.equal(path, `/git-push/${createHmac("sha256", token).update("team-a/github").digest("hex")}`);
    assert.notEqual(webhookPath("team-a", "github", "rotated"), path, "a new token moves the path");
  });
});

describe("what a push delivery names", () => {
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));
  it("reads each host's repository URLs and the pushed branch", () => {
    const github = readDelivery(
      "github",
      { "x-github-event": "push" },
      json({
        ref: "refs/heads/env/prod",
        repository: { clone_url: "https://h/o/r.git", ssh_url: "git@h:o/r.git" },
      }),
    );
    assert.deepEqual(github, {
      kind: "push",
      urls: ["https://h/o/r.git", "git@h:o/r.git"],
      branches: ["env/prod"],
    });
    const gitlab = readDelivery(
      "gitlab",
      { "x-gitlab-event": "Push Hook" },
      json({
        ref: "refs/heads/main",
        project: { git_http_url: "https://h/o/r.git", git_ssh_url: "git@h:o/r.git" },
      }),
    );
    assert.equal(gitlab.kind === "push" && gitlab.urls.length, 2);
  });

  it("a ping, another event, or a tag wakes nothing; a body that is not JSON is unreadable", () => {
    assert.equal(readDelivery("github", { "x-github-event": "ping" }, json({ zen: "x" })).kind, "ignored");
    assert.equal(readDelivery("gitlab", { "x-gitlab-event": "Tag Push Hook" }, json({})).kind, "ignored");
    const tag = json({ ref: "refs/tags/v1", repository: "https://h/o/r.git" });
    assert.equal(readDelivery("generic-hmac", {}, tag).kind, "ignored");
    assert.equal(readDelivery("generic-hmac", {}, Buffer.from("<xml/>")).kind, "unreadable");
  });
});

describe("a push wakes the GitBranches of every GitProvider whose spec.url names its repository", () => {
  const provider = (namespace: string, name: string, url: string) =>
    ({ metadata: { namespace, name }, spec: { url } }) as GitProvider;
  const branch = (namespace: string, name: string, provider: string, spelled: string) =>
    ({
      metadata: { namespace, name },
      spec: { gitProviderRef: { name: provider }, branch: spelled },
    }) as GitBranch;
  const providers = [
    provider("team-a", "state", "https://git.example.com/platform/state.git"),
    provider("team-b", "state", "https://git.example.com/platform/other.git"),
  ];
  const branches = [
    branch("team-a", "main", "state", "main"),
    branch("team-a", "prod", "state", "prod"),
    branch("team-b", "main", "state", "main"),
  ];

  it("an ssh URL names the repository of the https URL; only the pushed branch wakes", () => {
    assert.deepEqual(branchesWoken(["git@git.example.com:platform/state.git"], "main", providers, branches), [
      "team-a/main",
    ]);
    assert.deepEqual(branchesWoken(["https://GIT.example.com/platform/state"], "prod", providers, branches), [
      "team-a/prod",
    ]);
  });

  it("a repository no GitProvider names wakes nothing", () => {
    assert.deepEqual(
      branchesWoken(["https://git.example.com/someone/else.git"], "main", providers, branches),
      [],
    );
  });
});

describe("a burst of deliveries costs one look", () => {
  it("at most one wake-up waits in the queue, and the look waits a moment for the rest of the burst", () => {
    const looks = new DeliveryLooks(1_000);
    assert.equal(looks.noticed(), true);
    assert.equal(looks.noticed(), false, "a second delivery adds nothing to the queue");
    looks.taken(0);
    assert.equal(looks.start(999), false);
    assert.equal(looks.noticed(), false, "nor does one while the look waits");
    assert.equal(looks.start(1_000), true);
    assert.equal(looks.due, undefined);
    assert.equal(looks.noticed(), true, "one after the look started asks for the next");
  });
});

describe("a GitReceiver's status", () => {
  const receiver = {
    metadata: { namespace: "team-a", name: "hook", generation: 1 },
    spec: { type: "github", secretRef: { name: "hook" } },
  } as GitReceiver;
  const ready = (status: ReturnType<typeof receiverStatus>) =>
    status.conditions.find((c) => c.type === "Ready");

  it("publishes the path once the Secret holds a token, and is Ready only with a listener", () => {
    const listening = receiverStatus(receiver, { found: true, token }, true);
    assert.equal(listening.webhookPath, webhookPath("team-a", "hook", token));
    assert.equal(ready(listening)?.status, "True");
    const off = receiverStatus(receiver, { found: true, token }, false);
    assert.equal(ready(off)?.reason, "ListenerDisabled");
    assert.match(ready(off)!.message, /--receiver-bind-address/);
  });

  it("says what is missing: the Secret, or its token key", () => {
    assert.equal(ready(receiverStatus(receiver, { found: false }, true))?.reason, "SecretNotFound");
    const forbidden = receiverStatus(
      receiver,
      { found: false, forbidden: "The operator may not read Secret team-a/hook (403 Forbidden)." },
      true,
    );
    assert.match(ready(forbidden)!.message, /403 Forbidden/);
    const missing = receiverStatus(receiver, { found: true }, true);
    assert.equal(ready(missing)?.reason, "TokenMissing");
    assert.equal(missing.webhookPath, undefined);
  });
});
