// The push receiver against the real thing: a GitReceiver per host type, deliveries in each
// host's format posted to the operator's listener, and the branch worker's reads of the remote
// counted where they land, on the Git server.
import assert from "node:assert/strict";
import { request } from "node:http";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { gitBranches, gitReceivers } from "../../../generated/v1alpha3/index.ts";
import { receiverDeliveries } from "../../../internal/telemetry/instruments.ts";
import { GitServer } from "../../support/gitserver.ts";
import { applyMirror, mirrorFieldManager } from "../../support/mirror.ts";
import { mirrorUser, startMirrorEnvironment, type MirrorEnvironment } from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";
import { conditionOf } from "../controllers/helpers.ts";
import { genericPush, giteaPush, githubPing, githubPush, gitlabPush, type Delivery } from "./payloads.ts";
import {
  azureDevOpsPush,
  bitbucketPush,
  bitbucketServerPush,
  bitbucketServerTest,
  forgejoPush,
  gogsPush,
} from "../../unit/receiver/hosts.ts";

const types = ["github", "gitlab", "gitea", "generic-hmac"] as const;
/** The host types beyond Flux's, each with a namespace of its own. */
const hostTypes = {
  bitbucket: "bb",
  "bitbucket-server": "bbs",
  "azure-devops": "az",
  gogs: "gg",
  forgejo: "fj",
} as const;
type HostType = keyof typeof hostTypes;
const namespaces = ["gh", "gl", "gt", "gen", "ssh", "burst", "quiet", ...Object.values(hostTypes)];
const typeOf = (ns: string) =>
  types[namespaces.indexOf(ns)] ??
  (Object.keys(hostTypes) as HostType[]).find((type) => hostTypes[type] === ns) ??
  "generic-hmac";
const configMaps = [{ apiGroups: [""], resources: ["configmaps"] }];
/** Who pushes by hand: the operator's own reads are the ones made as mirrorUser. */
const hand = { username: "hand", password: "hand-password" };

interface Answer {
  status: number;
  body: string;
  /** Whether the server asked for the body (100 Continue) before it answered. */
  continued: boolean;
}

describe("GitReceiver: a push delivery wakes the branch workers of the repository it names", () => {
  let env: MirrorEnvironment;
  let git: GitServer;
  /** A second Git server on port 80 of a loopback address of its own: its URLs name no port. */
  let plain: GitServer;
  let kc: KubeConfig;
  const paths = new Map<string, string>();
  const serverOf = (ns: string) => (ns === "ssh" ? plain : git);

  const deliver = (path: string, delivery: Delivery, expectContinue = false): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const { host, port } = env.operator.receiver!.address!;
      const headers = {
        ...delivery.headers,
        "content-length": String(Buffer.byteLength(delivery.body)),
        ...(expectContinue ? { expect: "100-continue" } : {}),
      };
      let continued = false;
      const req = request({ host, port, path, method: "POST", headers }, (res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body, continued }));
      });
      req.on("error", reject);
      if (expectContinue) {
        req.on("continue", () => {
          continued = true;
          req.end(delivery.body);
        });
      } else req.end(delivery.body);
    });
  /** The operator's fetches (pack exchanges of upload-pack) of a repository since `since`. */
  const fetchesOf = (server: GitServer, repository: string, since: number, advertisement = false) =>
    server.requests
      .slice(since)
      .filter(
        (r) =>
          r.repository === repository &&
          r.service === "upload-pack" &&
          r.advertisement === advertisement &&
          r.username === mirrorUser.username,
      ).length;
  const noticeOf = async (ns: string) => (await gitBranches(kc).get(ns, "main"))?.status?.lastPushNoticeAt;

  before(async () => {
    env = await startMirrorEnvironment(namespaces, { receiverBindAddress: "127.0.0.1:0" });
    ({ git, kc } = env);
    plain = await startPlainServer();
    for (const server of [git, plain]) server.addUser(hand);
    const core = kc.makeApiClient(CoreV1Api);
    for (const ns of namespaces) {
      const server = serverOf(ns);
      const url = await server.createRepository(`state-${ns}`);
      await server.pushForeignCommit(`state-${ns}`, { files: { "README.md": "# State\n" }, as: hand });
      await core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name: "seed" }, data: { k: "v1" } },
      });
      // "quiet" keeps a window open for half a minute: a delivery's look finds it open.
      const window = ns === "quiet" ? { idleTimeout: "30s", maxDuration: "60s" } : {};
      await applyMirror(kc, ns, url, mirrorUser, [
        { name: "t", path: `clusters/${ns}`, rules: configMaps, ...window },
      ]);
      await core.createNamespacedSecret({
        namespace: ns,
        body: { metadata: { name: "hook" }, stringData: { token: `token-${ns}` } },
      });
      const type = typeOf(ns);
      await gitReceivers(kc).apply(
        {
          apiVersion: "configbutler.ai/v1alpha3",
          kind: "GitReceiver",
          metadata: { name: "hook", namespace: ns },
          spec: { type, secretRef: { name: "hook" } },
        },
        mirrorFieldManager,
      );
    }
    for (const ns of namespaces) {
      const ready = await conditionOf(gitReceivers(kc), ns, "hook", "Ready", "True");
      paths.set(ns, ready.status!.webhookPath!);
      await eventually(
        () => serverOf(ns).fileAt(`state-${ns}`, "main", `clusters/${ns}/${ns}/configmaps/seed.yaml`),
        {
          timeoutMs: 60_000,
          description: `${ns}'s first mirror`,
        },
      );
    }
  });
  after(async () => {
    await env?.stop();
    await plain?.close();
  });

  const payloadFor = (ns: string, type: (typeof types)[number], token: string) => {
    const url = git.repositoryUrl(`state-${ns}`);
    const ssh = `git@git.example.com:platform/state-${ns}.git`;
    if (type === "github") return githubPush(token, url, ssh, "main");
    if (type === "gitlab") return gitlabPush(token, url, ssh, "main");
    if (type === "gitea") return giteaPush(token, url, ssh, "main");
    return genericPush(token, url, "main");
  };

  for (const type of types) {
    const ns = namespaces[types.indexOf(type)]!;
    it(`a ${type} push delivery, signed as ${type} signs it, has the worker fetch the foreign commit within seconds`, async () => {
      const since = git.requests.length;
      const foreign = await git.pushForeignCommit(`state-${ns}`, {
        files: { "docs/notes.md": `pushed by hand (${type})\n` },
        as: hand,
      });
      const answer = await deliver(paths.get(ns)!, payloadFor(ns, type, `token-${ns}`));
      assert.deepEqual([answer.status, answer.body], [202, ""], "202, with nothing about what was woken");
      // The refresh interval is 10 minutes: only the delivery can have asked this soon.
      await eventually(() => fetchesOf(git, `state-${ns}`, since) > 0, {
        timeoutMs: 15_000,
        description: `the ${ns} worker to fetch ${foreign}`,
      });
      assert.ok(await eventually(() => noticeOf(ns), { description: "lastPushNoticeAt" }));
      const { values } = await receiverDeliveries.get();
      assert.ok(
        values.some(
          (v) => v.labels.receiver_namespace === ns && v.labels.outcome === "accepted" && v.value >= 1,
        ),
        "counted as accepted",
      );
    });
  }

  /**
   * Per host type beyond Flux's: its push, a delivery of another event (a test delivery, a tag
   * push), and deliveries with a bad signature, each with whether its headers alone refuse it.
   */
  const hostDeliveries = (type: HostType, ns: string, token: string) => {
    const url = git.repositoryUrl(`state-${ns}`);
    // The host's web URL: Bitbucket's html link and Azure DevOps' remoteUrl carry no .git.
    const web = url.replace(/\.git$/, "");
    const ssh = `git@git.example.com:platform/state-${ns}.git`;
    const tag = { kind: "tag", name: "v1.0.0" } as const;
    switch (type) {
      case "bitbucket":
        return {
          push: bitbucketPush(token, web, "main"),
          other: bitbucketPush(token, web, [tag]),
          bad: [
            { sent: bitbucketPush("not-the-token", web, "main"), fromHeaders: false },
            // A Bitbucket Cloud hook without a secret signs nothing.
            { sent: bitbucketPush(undefined, web, "main"), fromHeaders: true },
          ],
        };
      case "bitbucket-server": {
        const clone = { http: url, ssh: `ssh://git@git.example.com:7999/plat/state-${ns}.git` };
        return {
          push: bitbucketServerPush(token, clone, "main"),
          other: bitbucketServerTest(token),
          bad: [{ sent: bitbucketServerPush("not-the-token", clone, "main"), fromHeaders: false }],
        };
      }
      case "azure-devops":
        return {
          push: azureDevOpsPush(token, web, "main"),
          other: azureDevOpsPush(token, web, "main", "git.pullrequest.created"),
          bad: [{ sent: azureDevOpsPush("not-the-token", web, "main"), fromHeaders: true }],
        };
      case "gogs":
        return {
          push: gogsPush(token, url, ssh, "main"),
          other: gogsPush(token, url, ssh, tag),
          bad: [{ sent: gogsPush("not-the-token", url, ssh, "main"), fromHeaders: false }],
        };
      case "forgejo":
        return {
          push: forgejoPush(token, url, ssh, "main"),
          other: forgejoPush(token, url, ssh, "main", "create"),
          bad: [{ sent: forgejoPush("not-the-token", url, ssh, "main"), fromHeaders: false }],
        };
    }
  };
  /** How many deliveries to namespace `ns`'s receiver were counted with `outcome`. */
  const counted = async (ns: string, outcome: string) =>
    (await receiverDeliveries.get()).values
      .filter((v) => v.labels.receiver_namespace === ns && v.labels.outcome === outcome)
      .reduce((n, v) => n + v.value, 0);

  it("GitHub's ping is answered and wakes nothing", async () => {
    const since = git.requests.length;
    const answer = await deliver(paths.get("gh")!, githubPing("token-gh"));
    assert.equal(answer.status, 202);
    assert.equal(fetchesOf(git, "state-gh", since, true), 0);
  });

  it("a wrong signature is refused before the body is read", async () => {
    // A token header is judged from the headers: the client is never asked for its body.
    const wrongToken = gitlabPush("not-the-token", git.repositoryUrl("state-gl"), "", "main");
    const refused = await deliver(paths.get("gl")!, wrongToken, true);
    assert.deepEqual([refused.status, refused.body, refused.continued], [401, "", false]);
    const unsigned = githubPush("token-gh", git.repositoryUrl("state-gh"), "", "main");
    delete unsigned.headers["x-hub-signature-256"];
    assert.deepEqual(Object.values(await deliver(paths.get("gh")!, unsigned, true)), [401, "", false]);
    // An HMAC is checked over the exact bytes before anything parses them.
    const forged = githubPush("token-gh", git.repositoryUrl("state-gh"), "", "main");
    forged.body = forged.body.replace("octocat", "mallory");
    assert.equal((await deliver(paths.get("gh")!, forged)).status, 401);
    const { values } = await receiverDeliveries.get();
    const unauthorized = values
      .filter((v) => v.labels.outcome === "unauthorized")
      .reduce((n, v) => n + v.value, 0);
    assert.ok(unauthorized >= 3, `${unauthorized} unauthorized deliveries counted`);
  });

  it("an unknown webhook path is a 404 that tells nothing", async () => {
    const delivery = genericPush("token-gen", git.repositoryUrl("state-gen"), "main");
    for (const path of ["/git-push/0123abcd", "/git-push/", "/metrics", paths.get("gen")!.toUpperCase()]) {
      const answer = await deliver(path, delivery);
      assert.deepEqual([answer.status, answer.body], [404, ""], path);
    }
  });

  it("a delivery for a repository no GitProvider names wakes nothing", async () => {
    // Judged by this delivery alone: a branch it woke records its notice at once (the first of a
    // burst), while any worker may read its remote for reasons of its own meanwhile.
    const others = namespaces.filter((ns) => ns !== "gen");
    const before = await Promise.all(others.map(noticeOf));
    const stranger = genericPush("token-gen", git.repositoryUrl("somebody-elses"), "main");
    assert.equal((await deliver(paths.get("gen")!, stranger)).status, 202, "the answer tells nothing");
    // Deliveries are routed in the order they arrive: once a later one has been acted on, the
    // first would have been too.
    await git.pushForeignCommit("state-gen", { files: { "docs/barrier.md": "x\n" }, as: hand });
    const barrier = git.requests.length;
    await deliver(paths.get("gen")!, genericPush("token-gen", git.repositoryUrl("state-gen"), "main"));
    await eventually(() => fetchesOf(git, "state-gen", barrier) > 0, {
      timeoutMs: 15_000,
      description: "the barrier",
    });
    assert.deepEqual(await Promise.all(others.map(noticeOf)), before, "no other branch heard a push notice");
  });

  it("a delivery naming an ssh URL wakes the provider that uses the https URL of the same repository", async () => {
    const since = plain.requests.length;
    await plain.pushForeignCommit("state-ssh", { files: { "docs/notes.md": "by hand\n" }, as: hand });
    // The provider's URL is http://<host>/state-ssh.git; the delivery names only git@<host>:state-ssh.git.
    const ssh = `git@${plain.host}:state-ssh.git`;
    assert.equal((await deliver(paths.get("ssh")!, genericPush("token-ssh", ssh, "main"))).status, 202);
    await eventually(() => fetchesOf(plain, "state-ssh", since) > 0, {
      timeoutMs: 15_000,
      description: "the worker of the https spelling to fetch",
    });
  });

  it("a delivery looked at while the window holds a write that changes nothing in Git still has the worker fetch the foreign commit", async () => {
    // An edit and its undoing in one window: the window holds writes whose publication commits
    // and pushes nothing (the document ends as Git has it), so no rejected push fetches for them.
    const worker = () => env.operator.workers.worker("quiet/main");
    for (const value of ["v2", "v1"])
      await kc.makeApiClient(CoreV1Api).patchNamespacedConfigMap({
        namespace: "quiet",
        name: "seed",
        body: [{ op: "replace", path: "/data/k", value }],
      });
    await eventually(() => (worker()?.windowOpen ?? false) && worker(), {
      timeoutMs: 15_000,
      description: "the window open on the write",
    });
    const foreign = await git.pushForeignCommit("state-quiet", {
      files: { "docs/notes.md": "pushed while a window was open\n" },
      as: hand,
    });
    const answer = await deliver(
      paths.get("quiet")!,
      genericPush("token-quiet", git.repositoryUrl("state-quiet"), "main"),
    );
    assert.equal(answer.status, 202);
    // The refresh interval is 10 minutes: only the delivery's look can have read the remote.
    await eventually(() => worker()?.branchTip === foreign, {
      timeoutMs: 15_000,
      description: () => `the worker at ${foreign}, not ${worker()?.branchTip}`,
    });
  });

  it("a hundred deliveries in a second cost at most two ref advertisements and delay no write", async () => {
    // Nothing moved: each look is one ref advertisement and costs no fetch, so they are counted alone.
    const since = git.requests.length;
    const delivery = genericPush("token-burst", git.repositoryUrl("state-burst"), "main");
    const answers = await Promise.all(
      Array.from({ length: 100 }, () => deliver(paths.get("burst")!, delivery)),
    );
    assert.ok(answers.every((a) => a.status === 202));
    await eventually(() => fetchesOf(git, "state-burst", since, true) > 0, {
      timeoutMs: 15_000,
      description: "the burst's look",
    });
    // A write after the burst is committed behind at most those looks: looks queued one per
    // delivery would hold it behind a hundred advertisements, which the count below would show
    // (counted, not timed: a loaded machine makes any time bound a flake).
    await kc.makeApiClient(CoreV1Api).patchNamespacedConfigMap({
      namespace: "burst",
      name: "seed",
      body: [{ op: "replace", path: "/data/k", value: "after-the-burst" }],
    });
    await eventually(
      async () =>
        (await git.fileAt("state-burst", "main", "clusters/burst/burst/configmaps/seed.yaml"))?.includes(
          "after-the-burst",
        ),
      { timeoutMs: 15_000, description: "the edit after the burst in Git" },
    );
    const advertisements = fetchesOf(git, "state-burst", since, true);
    assert.ok(advertisements <= 2, `${advertisements} upload-pack advertisements`);
  });

  // Last: each host's worker may look at its remote once more after its test, which the
  // tests above, counting every worker's reads, would see.
  for (const type of Object.keys(hostTypes) as HostType[]) {
    const ns = hostTypes[type];
    it(`a ${type} push delivery, signed as ${type} signs it, wakes the branch, and a bad signature is refused`, async () => {
      const deliveries = hostDeliveries(type, ns, `token-${ns}`);
      const since = git.requests.length;
      const foreign = await git.pushForeignCommit(`state-${ns}`, {
        files: { "docs/notes.md": `pushed by hand (${type})\n` },
        as: hand,
      });
      const answer = await deliver(paths.get(ns)!, deliveries.push);
      assert.deepEqual([answer.status, answer.body], [202, ""], "202, with nothing about what was woken");
      // The refresh interval is 10 minutes: only the delivery can have asked this soon.
      await eventually(() => fetchesOf(git, `state-${ns}`, since) > 0, {
        timeoutMs: 15_000,
        description: `the ${ns} worker to fetch ${foreign}`,
      });
      assert.ok(await eventually(() => noticeOf(ns), { description: "lastPushNoticeAt" }));
      assert.equal(await counted(ns, "accepted"), 1, "counted as accepted");
      // Another event is answered as a push is, and counted as ignored.
      const other = await deliver(paths.get(ns)!, deliveries.other);
      assert.deepEqual([other.status, other.body], [202, ""]);
      assert.equal(await counted(ns, "ignored"), 1, "counted as ignored");
      // A bad signature is a 401; what the headers refuse is refused before the body is sent.
      for (const [i, { sent, fromHeaders }] of deliveries.bad.entries()) {
        const refused = await deliver(paths.get(ns)!, sent, true);
        assert.deepEqual(
          [refused.status, refused.body, refused.continued],
          [401, "", !fromHeaders],
          `bad #${i}`,
        );
      }
      assert.equal(await counted(ns, "unauthorized"), deliveries.bad.length);
      assert.equal(await counted(ns, "accepted"), 1, "nothing refused was counted as accepted");
    });
  }
});

/**
 * A Git server on port 80 of a random 127/8 address, so its URLs carry no port, as a hosted
 * repository's https URL does not: another address is tried if one is taken.
 */
async function startPlainServer(): Promise<GitServer> {
  for (let attempt = 0; ; attempt++) {
    const host = `127.${1 + Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${2 + Math.floor(Math.random() * 250)}`;
    try {
      return await GitServer.start({ users: [mirrorUser], host, port: 80 });
    } catch (err) {
      if (attempt >= 5) throw err;
    }
  }
}
