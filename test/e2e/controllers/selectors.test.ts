import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { watchRules } from "../../../generated/v1alpha3/index.ts";
import type { GitServer } from "../../support/gitserver.ts";
import { applyMirror, mirrorFieldManager } from "../../support/mirror.ts";
import {
  mirrorUser as user,
  startMirrorEnvironment,
  type MirrorEnvironment,
} from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";

const namespace = "apps";
const target = { namespace, name: "selected" };
const selected = (sel: string) => ({
  apiGroups: [""],
  resources: ["configmaps"],
  objectSelector: { matchLabels: { sel } },
});

describe("one GitTarget, two WatchRules on ConfigMaps with different objectSelectors, prune Always", () => {
  let env: MirrorEnvironment;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  const path = (name: string) => `clusters/selected/apps/configmaps/${name}.yaml`;
  const show = (name: string) => git.fileAt("state", "main", path(name));
  /** Every commit that removed the document: a delete and re-create leaves one behind. */
  const deletions = (name: string) =>
    git.gitIn("state", ["log", "--diff-filter=D", "--format=%h %s", "main", "--", path(name)]);
  const create = (name: string, sel: string) =>
    core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name, labels: { sel } }, data: { k: name } },
    });
  const inGit = (name: string, sel: string) =>
    eventually(async () => (await show(name))?.includes(`sel: ${sel}`), {
      timeoutMs: 60_000,
      description: `${name} in Git labelled sel: ${sel}`,
    });

  before(async () => {
    env = await startMirrorEnvironment([namespace]);
    ({ git, kc, core } = env);
    await applyMirror(kc, namespace, env.url, user, [
      { name: target.name, path: "clusters/selected", rules: [selected("a")], prune: "Always" },
    ]);
    await watchRules(kc).apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "WatchRule",
        metadata: { name: "selected-b", namespace },
        spec: { gitTargetRef: { name: target.name }, rules: [selected("b")] },
      },
      mirrorFieldManager,
    );
  });
  after(() => env?.stop());

  it("a snapshot of one selector never sweeps another selector's documents", async () => {
    await create("a1", "a");
    await create("b1", "b");
    await inGit("a1", "a");
    await inGit("b1", "b");

    // A fresh snapshot of the sel=b collection alone, as the write side asks for one.
    env.operator.sourceContexts.resync(target, [`/configmaps@${namespace}?sel=b`]);
    // A create after the resync reaches Git with that snapshot's commit or after it.
    await create("b2", "b");
    await inGit("b2", "b");
    assert.ok(await show("a1"), "the sel=a document survives the sel=b snapshot");
    assert.equal(await deletions("a1"), "", "and was never removed on the way");
    assert.ok(await show("b1"));
  });

  it("a relabel from one selector to the other keeps the document", async () => {
    await create("moving", "a");
    await inGit("moving", "a");
    // Each move is a DELETED on one watch and an ADDED on the other, in either order.
    for (const sel of ["b", "a", "b"]) {
      await core.patchNamespacedConfigMap({
        namespace,
        name: "moving",
        body: [{ op: "replace", path: "/metadata/labels/sel", value: sel }],
      });
      await inGit("moving", sel);
      assert.equal(await deletions("moving"), "", `the move to sel=${sel} never removed the document`);
    }
  });

  it("an object relabelled out of both selectors, or deleted, is removed", async () => {
    await create("leaving", "a");
    await create("deleted", "b");
    await inGit("leaving", "a");
    await inGit("deleted", "b");
    await core.patchNamespacedConfigMap({
      namespace,
      name: "leaving",
      body: [{ op: "replace", path: "/metadata/labels/sel", value: "c" }],
    });
    await core.deleteNamespacedConfigMap({ namespace, name: "deleted" });
    for (const name of ["leaving", "deleted"]) {
      await eventually(async () => (await show(name)) === undefined, {
        timeoutMs: 60_000,
        description: `${name}'s document removed`,
      });
    }
  });
});
