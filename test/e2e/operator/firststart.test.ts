// A first start, as a new user makes it: the CRDs installed and the operator started at once.
// The API server answers "storage is (re)initializing" while it starts serving each new kind,
// which is its normal state, not a fault: the operator waits quietly, and logs no error for it.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { gitTargets } from "../../../generated/v1alpha3/index.ts";
import { applyMirror } from "../../support/mirror.ts";
import { mirrorUser, startMirrorEnvironment, type MirrorEnvironment } from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";

const namespace = "first";

describe("a first start", () => {
  let env: MirrorEnvironment;

  before(async () => {
    env = await startMirrorEnvironment([namespace]);
  });
  after(async () => {
    await env?.stop();
  });

  it("is quiet: the API server starting to serve our kinds is waited out, never logged as an error", async () => {
    await applyMirror(env.kc, namespace, env.url, mirrorUser, [
      { name: "configs", path: "clusters/first", rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
    ]);
    await eventually(
      async () =>
        (await gitTargets(env.kc).get(namespace, "configs"))?.status?.conditions?.some(
          (c) => c.type === "Ready" && c.status === "True",
        ),
      { timeoutMs: 60_000, description: "the GitTarget Ready" },
    );
    const informerErrors = env.operator.errors.filter((line) => line.startsWith("informer stopped"));
    assert.deepEqual(informerErrors, [], "no informer error on a first start");
  });
});
