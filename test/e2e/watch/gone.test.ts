import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { compileWatchRule } from "../../../internal/rulestore/compile.ts";
import { RuleStore } from "../../../internal/rulestore/store.ts";
import { WatchManager } from "../../../internal/watch/manager.ts";
import type { ObjectItem } from "../../../internal/stream/stream.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { nextItem } from "../../support/streams.ts";
import { quiet } from "../../support/logger.ts";

/** Each object an item is about, with its data: a snapshot lists all of its objects. */
const describeItem = (item: ObjectItem): string[] => {
  const dataOf = (object: unknown) => JSON.stringify((object as { data?: unknown }).data);
  if (item.type === "snapshot") return item.objects.map((o) => `${o.identity.name} ${dataOf(o.object)}`);
  if (item.type === "delete") return [`delete ${item.identity.name}`];
  return [`upsert ${item.identity.name} ${dataOf(item.object)}`];
};

describe("a watch whose history expired", () => {
  let plane: ControlPlane;
  const stop = new AbortController();
  let running: Promise<void> | undefined;
  const infos: string[] = [];

  before(async () => {
    plane = await ControlPlane.start();
  });
  after(async () => {
    stop.abort();
    await running;
    await plane?.stop();
  });

  it("a 410 Gone re-initializes the collection", async () => {
    let core = plane.kubeConfig().makeApiClient(CoreV1Api);
    const configMap = (name: string, k: string) =>
      core.createNamespacedConfigMap({ namespace: "gone", body: { metadata: { name }, data: { k } } });
    const setK = (name: string, k: string) =>
      core.patchNamespacedConfigMap({
        namespace: "gone",
        name,
        body: [{ op: "replace", path: "/data/k", value: k }],
      });
    await core.createNamespace({ body: { metadata: { name: "gone" } } });
    await configMap("keep", "1");
    await configMap("doomed", "1");

    const rules = new RuleStore();
    rules.set(
      "WatchRule/gone/r",
      compileWatchRule({
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "WatchRule",
        metadata: { name: "r", namespace: "gone" },
        spec: { gitTargetRef: { name: "t" }, rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
      }),
    );
    const manager = new WatchManager(plane.kubeConfig(), rules, {
      ...quiet,
      info: (m: string) => infos.push(m),
    });
    manager.serve({ namespace: "gone", name: "t" });
    running = manager.start(stop.signal);
    const stream = manager.streamFor({ namespace: "gone", name: "t" });
    assert.deepEqual(describeItem(await nextItem(stream, "the first snapshot")), [
      'doomed {"k":"1"}',
      'keep {"k":"1"}',
    ]);
    await setK("keep", "2");
    assert.deepEqual(describeItem(await nextItem(stream, "the live update")), ['upsert keep {"k":"2"}']);

    // The cursor stays where it is: a paused stream's watch ends on its next event without
    // taking it, and waits to be woken before it resumes from that cursor.
    stream.pause();
    await configMap("added", "1");
    await setK("keep", "3");
    await core.deleteNamespacedConfigMap({ namespace: "gone", name: "doomed" });
    // The resume from that cursor is answered 410 Gone, deterministically. kube-apiserver
    // restarts, and its new watch cache starts at the revision it lists on start, after all
    // these changes: it answers a resume from before that 410 ("too old resource version"), and
    // until it is ready 429, which the collection retries with the same cursor. etcd is compacted
    // past the cursor first, so a watch etcd serves itself (a type whose watch cache is off)
    // is answered 410 as well. Compaction alone would not do: a running watch cache keeps a
    // history of its own, which etcd's compaction does not touch.
    await plane.compactEtcd();
    await plane.restartApiServer();
    core = plane.kubeConfig().makeApiClient(CoreV1Api);
    stream.resume();

    // The first item after the resume is a fresh snapshot: none of the changes came as live
    // events, and the removal is an object the snapshot no longer holds.
    const fresh = await nextItem(stream, "the fresh snapshot after the 410", 60_000);
    assert.equal(fresh.type, "snapshot", describeItem(fresh).join("; "));
    assert.deepEqual(describeItem(fresh), ['added {"k":"1"}', 'keep {"k":"3"}']);
    assert.ok(
      infos.some((m) => m.includes("watch history expired")),
      `the resume was answered 410 Gone: ${infos.join("; ")}`,
    );
    // Nothing queued behind it, and the collection is live again.
    await setK("added", "2");
    assert.deepEqual(describeItem(await nextItem(stream, "the next live update")), [
      'upsert added {"k":"2"}',
    ]);
    assert.equal(stream.pending, 0, "nothing more was delivered");
  });
});
