// CommitRequest with attribution on: a request's author is the audit fact of the write that
// created it, and it saves only its own author's window. Real kube-apiserver audit webhook,
// real identities (client certificates), the memory fact transport.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { gitTargets } from "../../../generated/v1alpha3/index.ts";
import { startAttributedMirror, type AttributedMirror } from "../../support/attributedmirror.ts";
import { grantEditing } from "../../support/attributionenv.ts";
import { defaultAuditPolicy } from "../../support/audit.ts";
import type { TestIdentity } from "../../support/controlplane.ts";
import { mirrorFieldManager, mirrorGitTarget } from "../../support/mirror.ts";
import { eventually } from "../../support/wait.ts";
import { conditionOfRequest, createRequest, finishedRequest, readyOf } from "./fixture.ts";

const namespace = "team-a";
const folder = "clusters/dev";
const rules = [{ apiGroups: [""], resources: ["configmaps"] }];
const fileOf = (name: string) => `${folder}/${namespace}/configmaps/${name}.yaml`;

describe("CommitRequest with attribution: one user's request never finalizes another user's work", () => {
  let mirror: AttributedMirror;
  let alice: TestIdentity;
  let bob: TestIdentity;
  const edit = (who: TestIdentity, name: string, value: string) =>
    who.kubeConfig
      .makeApiClient(CoreV1Api)
      .patchNamespacedConfigMap({ namespace, name, body: [{ op: "replace", path: "/data/k", value }] });

  before(async () => {
    mirror = await startAttributedMirror({
      namespace,
      folder,
      rules,
      // The create of the request "unheard" is never audited: no fact names its creator.
      policy: {
        ...defaultAuditPolicy,
        rules: [
          {
            level: "None",
            resources: [
              { group: "configbutler.ai", resources: ["commitrequests"], resourceNames: ["unheard"] },
            ],
          },
          ...defaultAuditPolicy.rules,
        ],
      },
    });
    const { plane, kc } = mirror;
    [alice, bob] = [await plane.mintUser("alice"), await plane.mintUser("bob")];
    const users = [alice, bob].map((u) => ({
      kind: "User",
      name: u.name,
      apiGroup: "rbac.authorization.k8s.io",
    }));
    await grantEditing(kc, namespace, users);
    const core = kc.makeApiClient(CoreV1Api);
    for (const name of ["shared", "quiet"])
      await core.createNamespacedConfigMap({ namespace, body: { metadata: { name }, data: { k: "v1" } } });
    await mirror.authorOnce(fileOf("quiet"));
    // A window only a request closes within a test.
    await gitTargets(kc).apply(
      mirrorGitTarget(namespace, {
        name: "configs",
        path: folder,
        rules,
        idleTimeout: "60s",
        maxDuration: "120s",
      }),
      mirrorFieldManager,
    );
    await eventually(
      async () => {
        const target = await gitTargets(kc).get(namespace, "configs");
        return target?.status?.observedGeneration === target?.metadata.generation;
      },
      { description: "the GitTarget's new window reconciled" },
    );
  });
  after(() => mirror?.stop());

  it("another author's window refuses it: WindowMismatch", async () => {
    await edit(alice, "shared", "v2");
    await createRequest(bob.kubeConfig, namespace, "bobs", {
      target: "configs",
      message: "Bob saves",
      window: { attachTimeout: "5s" },
    });
    const done = await finishedRequest(mirror.kc, namespace, "bobs");
    assert.equal(done.status?.author, "bob");
    assert.equal(readyOf(done)?.reason, "WindowMismatch", JSON.stringify(done.status));
    assert.equal(readyOf(done)?.status, "True", "a benign no-commit");
    assert.equal(conditionOfRequest(done, "Pushed")?.status, "False");
    assert.equal(
      await mirror.show(fileOf("shared")).then((f) => f?.includes("k: v2")),
      false,
      "alice's window stays open",
    );
  });

  it("a request attaches to its author's open window and the commit carries its message", async () => {
    await createRequest(alice.kubeConfig, namespace, "alices", { target: "configs", message: "Alice saves" });
    const done = await finishedRequest(mirror.kc, namespace, "alices");
    assert.equal(readyOf(done)?.reason, "Committed", JSON.stringify(done.status));
    assert.equal(done.status?.author, "alice");
    assert.equal(conditionOfRequest(done, "AuthorAttributed")?.reason, "AttributedFromAudit");
    const commit = done.status.commit!;
    assert.equal(
      await mirror.git.gitIn("state", ["log", "-1", "--format=%s|%an", commit]),
      "Alice saves|alice",
      "her message, on her commit",
    );
    assert.match((await mirror.git.fileAt("state", commit, fileOf("shared")))!, /k: v2/);
  });

  it("a request no fact names, on a provider that has received facts, is AuthorUnresolved", async () => {
    await edit(alice, "quiet", "v2");
    await createRequest(alice.kubeConfig, namespace, "unheard", {
      target: "configs",
      message: "Nobody knows",
    });
    const done = await finishedRequest(mirror.kc, namespace, "unheard");
    assert.equal(readyOf(done)?.reason, "AuthorUnresolved", JSON.stringify(done.status));
    assert.equal(conditionOfRequest(done, "Stalled")?.status, "True");
    assert.match(readyOf(done)!.message, /audit policy/);
    assert.equal(done.status?.author, undefined);
  });
});
