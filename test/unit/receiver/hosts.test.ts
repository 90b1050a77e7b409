// The push receiver's host types beyond Flux's: Bitbucket Cloud, Bitbucket Data Center, Azure
// DevOps, Gogs and Forgejo. Each delivery goes through what the listener does with it: the
// headers judged, the signature checked over the bytes, the payload read.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { GitBranch, GitProvider } from "../../../generated/v1alpha3/index.ts";
import { judgeHeaders, signatureHolds, type ReceiverType } from "../../../internal/receiver/auth.ts";
import { azureSpellings, readDelivery, type Delivery } from "../../../internal/receiver/payload.ts";
import { PushReceiver } from "../../../internal/receiver/receiver.ts";
import { branchesWoken } from "../../../internal/receiver/route.ts";
import {
  azureDevOpsPush,
  bitbucketPush,
  bitbucketServerPush,
  bitbucketServerTest,
  forgejoPush,
  gogsPush,
  type Delivery as Sent,
} from "./hosts.ts";

const token = "s3cret";

/** What the listener makes of a delivery: refused from its headers, refused by its signature, or read. */
function receive(
  type: ReceiverType,
  sent: Sent,
  key = token,
): "headers refused" | "signature refused" | Delivery {
  const verdict = judgeHeaders(type, sent.headers, key);
  if (verdict.kind === "refused") return "headers refused";
  const body = Buffer.from(sent.body);
  if (verdict.kind === "signed" && !signatureHolds(verdict, body, key)) return "signature refused";
  return readDelivery(type, sent.headers, body);
}

const pushOf = (urls: string[], ...branches: string[]): Delivery => ({ kind: "push", urls, branches });
const kindOf = (result: ReturnType<typeof receive>) => (typeof result === "string" ? result : result.kind);

describe("bitbucket: Bitbucket Cloud's repo:push, signed X-Hub-Signature: sha256=<hex HMAC>", () => {
  const html = "https://bitbucket.org/platform/state";

  it("a signed push names the repository's html link and the pushed branch", () => {
    assert.deepEqual(
      receive("bitbucket", bitbucketPush(token, html, "env/prod")),
      pushOf([html], "env/prod"),
    );
  });

  it("a signature under another secret, or over other bytes, is refused", () => {
    assert.equal(receive("bitbucket", bitbucketPush("other", html, "main")), "signature refused");
    const forged = bitbucketPush(token, html, "main");
    forged.body = forged.body.replace("Emma", "Mallory");
    assert.equal(receive("bitbucket", forged), "signature refused");
  });

  it("a hook without a secret sends no signature, and is refused from the headers", () => {
    const unsigned = bitbucketPush(undefined, html, "main");
    assert.equal(unsigned.headers["x-hub-signature"], undefined);
    assert.equal(receive("bitbucket", unsigned), "headers refused");
    const sha1 = bitbucketPush(token, html, "main");
    sha1.headers["x-hub-signature"] = sha1.headers["x-hub-signature"]!.replace("sha256=", "sha1=");
    assert.equal(receive("bitbucket", sha1), "headers refused", "only sha256 is Bitbucket's");
    const github = bitbucketPush(token, html, "main");
    github.headers["x-hub-signature-256"] = github.headers["x-hub-signature"]!;
    delete github.headers["x-hub-signature"];
    assert.equal(receive("bitbucket", github), "headers refused", "GitHub's header is not Bitbucket's");
  });

  it("every branch of a push wakes, a deleted one too; a tag or another event wakes nothing", () => {
    const two = bitbucketPush(token, html, [
      { kind: "branch", name: "main" },
      { kind: "tag", name: "v1" },
      { kind: "branch", name: "prod" },
    ]);
    assert.deepEqual(receive("bitbucket", two), pushOf([html], "main", "prod"));
    const deleted = bitbucketPush(token, html, "gone");
    const payload = JSON.parse(deleted.body) as { push: { changes: { new: unknown; closed: boolean }[] } };
    payload.push.changes[0]!.new = null;
    payload.push.changes[0]!.closed = true;
    assert.deepEqual(
      readDelivery("bitbucket", deleted.headers, Buffer.from(JSON.stringify(payload))),
      pushOf([html], "gone"),
    );
    assert.equal(
      kindOf(receive("bitbucket", bitbucketPush(token, html, [{ kind: "tag", name: "v1" }]))),
      "ignored",
    );
    assert.equal(
      kindOf(receive("bitbucket", bitbucketPush(token, html, "main", "pullrequest:created"))),
      "ignored",
    );
  });

  it("without a html link, full_name names the repository on bitbucket.org", () => {
    const payload = JSON.parse(bitbucketPush(token, html, "main").body) as {
      repository: { links?: unknown };
    };
    delete payload.repository.links;
    const read = readDelivery(
      "bitbucket",
      { "x-event-key": "repo:push" },
      Buffer.from(JSON.stringify(payload)),
    );
    assert.deepEqual(read, pushOf(["https://bitbucket.org/platform/state"], "main"));
  });

  it("reads Bitbucket Data Center's repo:refs_changed too, as Flux's bitbucket Receiver takes it", () => {
    const urls = {
      http: "https://bitbucket.example.com/scm/plat/state.git",
      ssh: "ssh://git@bitbucket.example.com:7999/plat/state.git",
    };
    assert.deepEqual(
      receive("bitbucket", bitbucketServerPush(token, urls, "main")),
      pushOf([urls.ssh, urls.http], "main"),
    );
  });
});

describe("bitbucket-server: Bitbucket Data Center's repo:refs_changed, signed X-Hub-Signature: sha256=<hex HMAC>", () => {
  const urls = {
    http: "https://bitbucket.example.com/scm/plat/state.git",
    ssh: "ssh://git@bitbucket.example.com:7999/plat/state.git",
  };

  it("a signed push names both clone links and the branch of each change", () => {
    assert.deepEqual(
      receive("bitbucket-server", bitbucketServerPush(token, urls, "main")),
      pushOf([urls.ssh, urls.http], "main"),
    );
    const both = bitbucketServerPush(token, urls, [
      { kind: "branch", name: "main" },
      { kind: "branch", name: "feature/x" },
    ]);
    assert.deepEqual(receive("bitbucket-server", both), pushOf([urls.ssh, urls.http], "main", "feature/x"));
  });

  it("another secret is refused by the signature, no signature from the headers", () => {
    assert.equal(
      receive("bitbucket-server", bitbucketServerPush("other", urls, "main")),
      "signature refused",
    );
    const unsigned = bitbucketServerPush(token, urls, "main");
    delete unsigned.headers["x-hub-signature"];
    assert.equal(receive("bitbucket-server", unsigned), "headers refused");
  });

  it("Test connection, a tag, and Bitbucket Cloud's repo:push wake nothing", () => {
    assert.equal(kindOf(receive("bitbucket-server", bitbucketServerTest(token))), "ignored");
    const tag = bitbucketServerPush(token, urls, [{ kind: "tag", name: "v1.2.0" }]);
    assert.equal(kindOf(receive("bitbucket-server", tag)), "ignored");
    const cloud = bitbucketPush(token, "https://bitbucket.org/platform/state", "main");
    assert.equal(kindOf(receive("bitbucket-server", cloud)), "ignored");
  });
});

describe("azure-devops: Azure DevOps' git.push service hook, the token as its basic-auth password", () => {
  const remote = "https://dev.azure.com/fabrikam/platform/_git/state";

  it("the right password, under any user name, is accepted from the headers alone", () => {
    const sent = azureDevOpsPush(token, remote, "main");
    assert.deepEqual(judgeHeaders("azure-devops", sent.headers, token), { kind: "accepted" });
    const read = receive("azure-devops", azureDevOpsPush(token, remote, "main", "git.push", "anyone"));
    assert.equal(kindOf(read), "push");
  });

  it("a wrong password, no Authorization, the token as the user name, or a bearer token is refused", () => {
    assert.equal(receive("azure-devops", azureDevOpsPush("s3cre", remote, "main")), "headers refused");
    const none = azureDevOpsPush(token, remote, "main");
    delete none.headers.authorization;
    assert.equal(receive("azure-devops", none), "headers refused");
    const asUser = azureDevOpsPush(token, remote, "main");
    asUser.headers.authorization = `Basic ${Buffer.from(`${token}:`).toString("base64")}`;
    assert.equal(receive("azure-devops", asUser), "headers refused");
    const bearer = azureDevOpsPush(token, remote, "main");
    bearer.headers.authorization = `Bearer ${token}`;
    assert.equal(receive("azure-devops", bearer), "headers refused");
    assert.equal(
      judgeHeaders("azure-devops", { authorization: "Basic Og==" }, "").kind,
      "refused",
      "an empty token admits nothing",
    );
  });

  it("names resource.repository.remoteUrl and every refs/heads/ of refUpdates", () => {
    const read = receive(
      "azure-devops",
      azureDevOpsPush(token, remote, ["refs/heads/main", "refs/tags/v1", "refs/heads/prod"]),
    );
    assert.ok(typeof read === "object" && read.kind === "push");
    assert.deepEqual(read.branches, ["main", "prod"]);
    assert.equal(read.urls[0], remote);
    assert.ok(read.urls.includes("git@ssh.dev.azure.com:v3/fabrikam/platform/state"));
  });

  it("another event, a tag push, or a body that is not JSON wakes nothing", () => {
    const pr = azureDevOpsPush(token, remote, "main", "git.pullrequest.created");
    assert.equal(kindOf(receive("azure-devops", pr)), "ignored");
    assert.equal(
      kindOf(receive("azure-devops", azureDevOpsPush(token, remote, ["refs/tags/v1"]))),
      "ignored",
    );
    const garbage = { ...azureDevOpsPush(token, remote, "main"), body: "<xml/>" };
    assert.equal(kindOf(receive("azure-devops", garbage)), "unreadable");
  });

  it("a push to the https URL wakes the provider that names the repository's SSH URL, or its visualstudio.com URL", () => {
    const provider = (name: string, url: string) =>
      ({ metadata: { namespace: "a", name }, spec: { url } }) as GitProvider;
    const branch = (name: string) =>
      ({
        metadata: { namespace: "a", name },
        spec: { gitProviderRef: { name }, branch: "main" },
      }) as GitBranch;
    const providers = [
      provider("ssh", "git@ssh.dev.azure.com:v3/fabrikam/platform/state"),
      provider("vs", "https://fabrikam.visualstudio.com/DefaultCollection/platform/_git/state"),
      provider("other", "git@ssh.dev.azure.com:v3/fabrikam/platform/other"),
    ];
    const read = receive("azure-devops", azureDevOpsPush(token, remote, "main"));
    assert.ok(typeof read === "object" && read.kind === "push");
    const branches = ["ssh", "vs", "other"].map(branch);
    assert.deepEqual(branchesWoken(read.urls, "main", providers, branches), ["a/ssh", "a/vs"]);
  });

  it("spells a repository named like its project both ways, and leaves Azure DevOps Server's URLs alone", () => {
    const spellings = azureSpellings("https://fabrikam.visualstudio.com/DefaultCollection/_git/state");
    assert.ok(spellings.includes("https://dev.azure.com/fabrikam/state/_git/state"));
    assert.ok(spellings.includes("https://dev.azure.com/fabrikam/_git/state"));
    assert.ok(spellings.includes("fabrikam@vs-ssh.visualstudio.com:v3/fabrikam/state/state"));
    const server = "https://tfs.example.com/tfs/DefaultCollection/platform/_git/state";
    assert.deepEqual(azureSpellings(server), [server]);
    assert.deepEqual(azureSpellings("https://dev.azure.com/fabrikam"), ["https://dev.azure.com/fabrikam"]);
  });
});

describe("gogs: X-Gogs-Signature is the bare hex HMAC-SHA256", () => {
  const clone = "https://gogs.example.com/platform/state.git";
  const ssh = "ssh://git@gogs.example.com:2222/platform/state.git";

  it("a signed push names the repository's URLs and the branch", () => {
    const read = receive("gogs", gogsPush(token, clone, ssh, "main"));
    assert.deepEqual(read, pushOf([clone, ssh, "https://gogs.example.com/platform/state"], "main"));
  });

  it("another secret, a prefixed signature, or only Gitea's header is refused", () => {
    assert.equal(receive("gogs", gogsPush("other", clone, ssh, "main")), "signature refused");
    const prefixed = gogsPush(token, clone, ssh, "main");
    prefixed.headers["x-gogs-signature"] = `sha256=${prefixed.headers["x-gogs-signature"]}`;
    assert.equal(receive("gogs", prefixed), "headers refused");
    const gitea = gogsPush(token, clone, ssh, "main");
    gitea.headers["x-gitea-signature"] = gitea.headers["x-gogs-signature"]!;
    delete gitea.headers["x-gogs-signature"];
    assert.equal(receive("gogs", gitea), "headers refused");
  });

  it("a create event or a tag push wakes nothing", () => {
    assert.equal(kindOf(receive("gogs", gogsPush(token, clone, ssh, "main", "create"))), "ignored");
    assert.equal(
      kindOf(receive("gogs", gogsPush(token, clone, ssh, { kind: "tag", name: "v1" }))),
      "ignored",
    );
  });
});

describe("forgejo: X-Forgejo-Signature is the bare hex HMAC-SHA256", () => {
  const clone = "https://codeberg.example.org/platform/state.git";
  const ssh = "git@codeberg.example.org:platform/state.git";

  it("a signed push names the repository's URLs and the branch", () => {
    const read = receive("forgejo", forgejoPush(token, clone, ssh, "env/prod"));
    assert.deepEqual(read, pushOf([clone, ssh, "https://codeberg.example.org/platform/state"], "env/prod"));
  });

  it("another secret is refused; X-Gitea-Signature alone does not stand in for Forgejo's", () => {
    assert.equal(receive("forgejo", forgejoPush("other", clone, ssh, "main")), "signature refused");
    const giteaOnly = forgejoPush(token, clone, ssh, "main");
    delete giteaOnly.headers["x-forgejo-signature"];
    assert.equal(receive("forgejo", giteaOnly), "headers refused");
  });

  it("a push Forgejo sends is also a Gitea push (it signs both headers)", () => {
    assert.equal(kindOf(receive("gitea", forgejoPush(token, clone, ssh, "main"))), "push");
  });

  it("another event or a tag push wakes nothing", () => {
    assert.equal(kindOf(receive("forgejo", forgejoPush(token, clone, ssh, "main", "create"))), "ignored");
    assert.equal(
      kindOf(receive("forgejo", forgejoPush(token, clone, ssh, { kind: "tag", name: "v1" }))),
      "ignored",
    );
  });
});

describe("the listener routes each branch a push moved", () => {
  const quiet = { error() {}, warn() {}, info() {}, debug() {} };

  it("a Bitbucket push of two branches routes both; an unsigned one is a 401 and routes nothing", async () => {
    const routed: string[] = [];
    const receiver = new PushReceiver({
      host: "127.0.0.1",
      port: 0,
      logger: quiet,
      route: ({ urls, branch }) => routed.push(`${urls[0]} ${branch}`),
    });
    const stop = new AbortController();
    const running = receiver.start(stop.signal);
    try {
      while (!receiver.address) await new Promise((r) => setTimeout(r, 5));
      receiver.register("/git-push/abc", { namespace: "a", name: "hook" }, "bitbucket", token);
      const { host, port } = receiver.address;
      const post = async (sent: Sent) =>
        (
          await fetch(`http://${host}:${port}/git-push/abc`, {
            method: "POST",
            headers: sent.headers,
            body: sent.body,
          })
        ).status;
      const html = "https://bitbucket.org/platform/state";
      const two = bitbucketPush(token, html, [
        { kind: "branch", name: "main" },
        { kind: "branch", name: "prod" },
      ]);
      assert.equal(await post(two), 202);
      assert.deepEqual(routed, [`${html} main`, `${html} prod`]);
      assert.equal(await post(bitbucketPush(undefined, html, "main")), 401);
      assert.equal(routed.length, 2);
    } finally {
      stop.abort();
      await running;
    }
  });
});
