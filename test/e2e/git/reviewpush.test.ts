// Review before merge with no forge API: a GitBranch's spec.push, end to end through the operator.
// The harness's Git server records every push's options and ref updates with a post-receive hook,
// and takes refs/for/... as Gerrit and Gitea's AGit flow do: accepted every time, never stored
// under its own name.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { gitBranches, type GitBranch } from "../../../generated/v1alpha3/index.ts";
import type { GitServer, RecordedPush } from "../../support/gitserver.ts";
import { applyMirror } from "../../support/mirror.ts";
import {
  mirrorUser as user,
  startMirrorEnvironment,
  type MirrorEnvironment,
} from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";

const apiVersion = "configbutler.ai/v1alpha3" as const;
const rules = [{ apiGroups: [""], resources: ["configmaps"] }];

/** The error message the API server refused a request with. */
async function refusal(request: Promise<unknown>): Promise<string> {
  const err = await request.then(
    () => assert.fail("the API server accepted a GitBranch it should refuse"),
    (e: unknown) => e,
  );
  const body = (err as { body?: unknown }).body;
  return typeof body === "string" ? body : JSON.stringify(body ?? err);
}

describe("a GitBranch pushed for review before merge, with no forge API", () => {
  let env: MirrorEnvironment;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;

  before(async () => {
    env = await startMirrorEnvironment(["gitlab", "gerrit", "refused"]);
    ({ git, kc, core } = env);
    await git.recordPushes("state", { reviewRefs: true });
  });
  after(() => env?.stop());

  /** The GitBranch "main" of `namespace` with its spec.push, applied before the mirror that uses it. */
  const applyBranch = (namespace: string, spec: Omit<GitBranch["spec"], "gitProviderRef">) =>
    gitBranches(kc).apply(
      {
        apiVersion,
        kind: "GitBranch",
        metadata: { name: "main", namespace },
        spec: { gitProviderRef: { name: "state" }, ...spec },
      },
      "review",
    );
  const pushesTo = async (ref: string) =>
    (await git.pushes("state")).filter((p) => p.refs.some((r) => r.ref === ref));
  const pushedCommit = (push: RecordedPush, ref: string) => push.refs.find((r) => r.ref === ref)!.new;

  it("a push with GitLab's merge_request push options reaches the server with every option", async () => {
    const options = [
      "merge_request.create",
      "merge_request.target=main",
      "merge_request.title=Cluster changes from GitOps Reverser",
      "merge_request.remove_source_branch",
    ];
    const main = await git.branchHead("state", "main");
    await applyBranch("gitlab", { branch: "cluster/gitlab", parentBranch: "main", push: { options } });
    await applyMirror(
      kc,
      "gitlab",
      env.url,
      user,
      [{ name: "gitlab", path: "clusters/gitlab", rules, idleTimeout: "200ms" }],
      "cluster/gitlab",
      "main",
    );
    await core.createNamespacedConfigMap({
      namespace: "gitlab",
      body: { metadata: { name: "app" }, data: { color: "blue" } },
    });
    const path = "clusters/gitlab/gitlab/configmaps/app.yaml";
    await eventually(
      async () => (await git.fileAt("state", "cluster/gitlab", path))?.includes("color: blue"),
      { description: "the ConfigMap on the branch the merge request is opened from" },
    );
    const ref = "refs/heads/cluster/gitlab";
    const pushes = await pushesTo(ref);
    assert.ok(pushes.length > 0);
    for (const push of pushes) assert.deepEqual(push.options, options, "every option, on every push");
    assert.equal(
      pushedCommit(pushes.at(-1)!, ref),
      await git.branchHead("state", "cluster/gitlab"),
      "the branch itself is pushed, as without options",
    );
    assert.equal(
      await git.branchHead("state", "main"),
      main,
      "the target of the merge request is not written",
    );
  });

  it("a refs/for push leaves the branch untouched and the operator does not replay over it", async () => {
    const ref = "refs/for/main";
    const main = (await git.branchHead("state", "main"))!;
    await applyBranch("gerrit", { branch: "main", push: { refspec: ref } });
    await applyMirror(kc, "gerrit", env.url, user, [
      { name: "gerrit", path: "clusters/gerrit", rules, idleTimeout: "200ms" },
    ]);
    const path = (name: string) => `clusters/gerrit/gerrit/configmaps/${name}.yaml`;
    /** The first review push whose commit holds `name`'s file. */
    const reviewWith = (name: string) =>
      eventually(
        async () => {
          for (const push of await pushesTo(ref)) {
            const commit = pushedCommit(push, ref);
            if (await git.fileAt("state", commit, path(name))) return commit;
          }
          return undefined;
        },
        { description: `a push to ${ref} with ${name}` },
      );
    const parentOf = (commit: string) => git.gitIn("state", ["rev-parse", `${commit}^`]);

    await core.createNamespacedConfigMap({ namespace: "gerrit", body: { metadata: { name: "one" } } });
    const first = await reviewWith("one");
    assert.equal(await git.branchHead("state", "main"), main, "the branch is not written");

    // The next review push goes on from the last one: the branch has not moved.
    await core.createNamespacedConfigMap({ namespace: "gerrit", body: { metadata: { name: "two" } } });
    const second = await reviewWith("two");
    const reviewed = (await pushesTo(ref)).map((p) => pushedCommit(p, ref));
    assert.equal(await parentOf(second), reviewed[reviewed.indexOf(second) - 1], "on the last review push");
    await git.gitIn("state", ["merge-base", "--is-ancestor", first, second]);
    assert.equal(await git.branchHead("state", "main"), main);

    // Somebody moves the branch. The next review push is made on their commit, and nothing the
    // operator pushed for review before is replayed over it: only the write it had not pushed.
    const theirs = await git.pushForeignCommit("state", { files: { "docs/theirs.md": "theirs\n" } });
    await core.createNamespacedConfigMap({ namespace: "gerrit", body: { metadata: { name: "three" } } });
    const third = await reviewWith("three");
    assert.equal(await parentOf(third), theirs, "made on the branch's new tip");
    assert.equal(
      await git.fileAt("state", third, path("one")),
      undefined,
      "a write already under review is not replayed",
    );
    assert.equal(await git.branchHead("state", "main"), theirs, "their commit is the branch, untouched");

    const toBranch = await pushesTo("refs/heads/main");
    assert.deepEqual(
      toBranch.map((p) => pushedCommit(p, "refs/heads/main")),
      [theirs],
      "the only push to the branch is theirs",
    );
    const reviews = await pushesTo(ref);
    assert.ok(reviews.every((p) => p.refs.length === 1 && p.options.length === 0));
    assert.equal(
      (await git.gitIn("state", ["for-each-ref", "--format=%(refname)", "refs/for/"])).trim(),
      "",
      "the host keeps no refs/for ref",
    );
  });

  it("spec.push is checked at admission, and cannot change", async () => {
    const branch = (push: NonNullable<GitBranch["spec"]["push"]>, branchName = "main"): GitBranch => ({
      apiVersion,
      kind: "GitBranch",
      metadata: { name: `b-${Math.random().toString(36).slice(2, 8)}`, namespace: "refused" },
      spec: { gitProviderRef: { name: "state" }, branch: branchName, push },
    });
    const client = gitBranches(kc);
    assert.match(await refusal(client.apply(branch({ refspec: "for/main" }), "t")), /under refs\//);
    assert.match(
      await refusal(client.apply(branch({ refspec: "refs/heads/main" }), "t")),
      /not a branch or tag/,
    );
    assert.match(
      await refusal(client.apply(branch({ refspec: "refs/heads/other" }), "t")),
      /not a branch or tag/,
    );
    assert.match(
      await refusal(client.apply(branch({ refspec: "refs/for/ma in" }), "t")),
      /valid Git ref name/,
    );
    assert.match(
      await refusal(client.apply(branch({ options: ["merge_request.title=a\nb"] }), "t")),
      /key=value or a bare key/,
    );
    assert.match(
      await refusal(client.apply(branch({ options: ["=value"] }), "t")),
      /key=value or a bare key/,
    );
    const accepted = branch({
      refspec: "refs/for/main/cluster-sync",
      options: ["topic=cluster-sync", "title=Cluster changes", "force-push=true"],
    });
    await client.apply(accepted, "t");
    assert.match(
      await refusal(
        client.apply({ ...accepted, spec: { ...accepted.spec, push: { refspec: "refs/for/main" } } }, "t"),
      ),
      /push is immutable/,
    );
  });
});
