// Where the next process resumes a collection, against the real API server: the stored cursor
// never runs past an event whose item the branch worker has not taken. An item waiting for its
// author is in no durable queue yet; a process killed then loses it with its memory, and the
// process that takes over must read its event again (with its author), not find its value in the
// confirming snapshot, authored by nobody.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { compileWatchRule } from "../../../internal/rulestore/compile.ts";
import { RuleStore } from "../../../internal/rulestore/store.ts";
import type { ObjectItem } from "../../../internal/stream/stream.ts";
import type { Author } from "../../../internal/types/signature.ts";
import type { LiveChange } from "../../../internal/watch/attributor.ts";
import type { CursorKey, CursorStore } from "../../../internal/watch/cursor.ts";
import { WatchManager } from "../../../internal/watch/manager.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { quiet } from "../../support/logger.ts";
import { nextItem } from "../../support/streams.ts";
import { eventually } from "../../support/wait.ts";

const namespace = "held";
const alice: Author = { name: "alice", email: "alice@example.com", kind: "user", username: "alice" };

/** A cursor store that keeps what it was last told, as Redis would for the next process. */
class StoredCursor implements CursorStore {
  last: string | undefined;
  load(_key: CursorKey): Promise<string | undefined> {
    return Promise.resolve(this.last);
  }
  save(_key: CursorKey, resourceVersion: string): void {
    this.last = resourceVersion;
  }
  forget(_key: CursorKey): void {
    this.last = undefined;
  }
}

describe("the resume cursor a process leaves for the next", () => {
  let plane: ControlPlane;
  const stop = new AbortController();
  let running: Promise<void> | undefined;

  before(async () => {
    plane = await ControlPlane.start();
  });
  after(async () => {
    stop.abort();
    await running;
    await plane?.stop();
  });

  it("never runs past an event whose item waits for its author and is not taken yet", async () => {
    const core = plane.kubeConfig().makeApiClient(CoreV1Api);
    const setK = async (name: string, k: string) =>
      (
        await core.patchNamespacedConfigMap({
          namespace,
          name,
          body: [{ op: "replace", path: "/data/k", value: k }],
        })
      ).metadata!.resourceVersion!;
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    for (const name of ["slow", "fast"])
      await core.createNamespacedConfigMap({ namespace, body: { metadata: { name }, data: { k: "1" } } });

    // The author of "slow" is known only once the test says so; every other answer is at once.
    const asked: LiveChange[] = [];
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const author = async (change: LiveChange) => {
      asked.push(change);
      if (change.name === "slow") await answered;
      return alice;
    };
    const rules = new RuleStore();
    rules.set(
      `WatchRule/${namespace}/r`,
      compileWatchRule({
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "WatchRule",
        metadata: { name: "r", namespace },
        spec: { gitTargetRef: { name: "t" }, rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
      }),
    );
    const cursor = new StoredCursor();
    const manager = new WatchManager(plane.kubeConfig(), rules, quiet, {
      attribute: () => ({ author, release: () => undefined }),
      cursors: cursor,
    });
    manager.serve({ namespace, name: "t" });
    running = manager.start(stop.signal);
    const stream = manager.streamFor({ namespace, name: "t" });
    /** The next item, taken as the branch worker takes it once its durable queue keeps it. */
    const take = (what: string): Promise<ObjectItem> => nextItem(stream, what);

    assert.equal((await take("the snapshot")).type, "snapshot");
    const taken = await setK("fast", "2");
    assert.equal((await take("fast at 2")).type, "upsert");
    await eventually(() => cursor.last === taken, {
      timeoutMs: 10_000,
      description: "the cursor at fast's 2",
    });

    // slow's edit waits for its author, and fast's next edit waits behind it, in the watch's order.
    const held = await setK("slow", "2");
    const behind = await setK("fast", "3");
    await eventually(() => asked.some((c) => c.resourceVersion === behind), {
      timeoutMs: 10_000,
      description: "the watch to have read fast's 3",
    });
    assert.equal(cursor.last, taken, "read, not taken: the next process would read both again");

    answer();
    const slow = await take("slow at 2");
    assert.equal(slow.type === "upsert" && slow.identity.name, "slow");
    assert.ok(cursor.last === held || cursor.last === taken, "at most the last item taken");
    await take("fast at 3");
    await eventually(() => cursor.last === behind, {
      timeoutMs: 10_000,
      description: "the cursor past every event read once every item is taken",
    });
  });
});
