// Shard Leases on a real API server: replicas that all run share shards out, hand a shard over
// (its work stopped first) before its Lease goes, and take over from a replica that stopped.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  CoordinationV1Api,
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
} from "@kubernetes/client-node";
import { informerSource, namespaceType } from "../../../internal/kube/sources.ts";
import { Controller, type Ownership, type Request } from "../../../internal/operator/controller.ts";
import { SharedInformer } from "../../../internal/operator/informer.ts";
import { leaseKindLabel, shardAnnotation, ShardLeases } from "../../../internal/operator/shardleases.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { eventually } from "../../support/wait.ts";
import { quiet } from "../../support/logger.ts";

const timings = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 200 };
const shards = Array.from({ length: 30 }, (_, i) => `https://git.example/state.git#branch-${i}`);
/** The shards there is work for: all, until a test lets one go. */
let wanted = shards;

describe("shard Leases on a real API server", () => {
  let plane: ControlPlane;
  let kc: KubeConfig;
  const replicas: ShardLeases[] = [];
  /** What each replica's work is doing, by identity: the shards it works, and those it handed over. */
  const working = new Map<string, Set<string>>();
  const handedOver: { identity: string; shard: string; heldWhileStopping: boolean }[] = [];

  function replica(identity: string): ShardLeases {
    working.set(identity, new Set());
    const work = {
      wanted: () => wanted,
      handOver: async (shard: string) => {
        working.get(identity)!.delete(shard);
        // The work stops while the Lease still names this replica: nobody else may take it yet.
        const lease = await kc
          .makeApiClient(CoordinationV1Api)
          .listNamespacedLease({ namespace: "default", labelSelector: `${leaseKindLabel}=shard` });
        const mine = lease.items.find((l) => l.metadata?.annotations?.[shardAnnotation] === shard);
        handedOver.push({ identity, shard, heldWhileStopping: mine?.spec?.holderIdentity === identity });
      },
    };
    const leases: ShardLeases = new ShardLeases(
      kc,
      { ...timings, namespace: "default", prefix: "test", identity },
      work,
      quiet,
    );
    leases.onChanged((changed) => {
      for (const shard of changed) if (leases.holds(shard)) working.get(identity)!.add(shard);
    });
    replicas.push(leases);
    leases.start();
    return leases;
  }

  const counts = () => replicas.map((r) => r.held().length);

  before(async () => {
    plane = await ControlPlane.start();
    kc = plane.kubeConfig();
  });
  after(async () => {
    for (const r of replicas) await r.stop();
    await plane?.stop();
  });

  it("thirty shards are shared out by three replicas, each holding one at a time", async () => {
    const [a] = [replica("a")];
    await eventually(() => a.held().length === 30, { timeoutMs: 20_000, description: "a alone holds all" });
    replica("b");
    replica("c");
    await eventually(() => counts().every((n) => n === 10), {
      timeoutMs: 30_000,
      description: () => `ten each, held ${counts().join("/")}`,
    });
    const held = replicas.flatMap((r) => r.held());
    assert.equal(new Set(held).size, 30, "no shard held twice");
    // a handed twenty over, each while its Lease still named a.
    assert.equal(handedOver.filter((h) => h.identity === "a").length, 20);
    assert.ok(
      handedOver.every((h) => h.heldWhileStopping),
      "every handover ran before its Lease went",
    );
    const leases = await kc
      .makeApiClient(CoordinationV1Api)
      .listNamespacedLease({ namespace: "default", labelSelector: `${leaseKindLabel}=shard` });
    const byHolder = new Map<string, number>();
    for (const l of leases.items)
      byHolder.set(l.spec!.holderIdentity!, (byHolder.get(l.spec!.holderIdentity!) ?? 0) + 1);
    assert.deepEqual(Object.fromEntries(byHolder), { a: 10, b: 10, c: 10 }, "the Leases say who holds what");
  });

  it("a replica that stops releases its shards, and the others take them at once", async () => {
    const [, b, c] = replicas;
    const stopped = replicas[0]!;
    replicas.splice(0, 1);
    await stopped.stop();
    await eventually(() => b!.held().length === 15 && c!.held().length === 15, {
      timeoutMs: 10_000,
      description: () => `fifteen each, held ${counts().join("/")}`,
    });
    const heartbeats = await kc
      .makeApiClient(CoordinationV1Api)
      .listNamespacedLease({ namespace: "default", labelSelector: `${leaseKindLabel}=replica` });
    assert.deepEqual(
      heartbeats.items.map((l) => l.spec?.holderIdentity).sort(),
      ["b", "c"],
      "the stopped replica's heartbeat is gone",
    );
  });

  it("a replica killed mid-term is replaced a lease duration after its last renewal, not a round later", async () => {
    const namespace = "killed";
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    const leasesOf = (identity: string, retryPeriodMs: number) =>
      new ShardLeases(
        kc,
        { ...timings, retryPeriodMs, namespace, prefix: "killed", identity },
        { wanted: () => ["the-shard"], handOver: () => Promise.resolve() },
        quiet,
      );
    const holder = leasesOf("holder", timings.retryPeriodMs);
    // A round every 20 s: only the watch can have it take the shard within seconds.
    const taker = leasesOf("taker", 20_000);
    holder.start();
    await eventually(() => holder.holds("the-shard"), {
      timeoutMs: 10_000,
      description: "the holder's take",
    });
    const bothHeartbeats = async () =>
      (
        await kc
          .makeApiClient(CoordinationV1Api)
          .listNamespacedLease({ namespace, labelSelector: `${leaseKindLabel}=replica` })
      ).items.length === 2;
    taker.start();
    try {
      // The taker's first round has run (its heartbeat is there): its next is 20 s away.
      await eventually(bothHeartbeats, { timeoutMs: 10_000, description: "the taker's first round" });
      // Killed: its loop ends where it stands, nothing released, as SIGKILL leaves it.
      (holder as unknown as { running: { abort: AbortController } }).running.abort.abort();
      const killedAt = performance.now();
      await eventually(() => taker.holds("the-shard"), {
        timeoutMs: 8_000,
        description: "the taker holding the shard",
      });
      const takenAfterMs = performance.now() - killedAt;
      assert.ok(
        takenAfterMs < timings.leaseDurationMs + 3_000,
        `taken ${Math.round(takenAfterMs)} ms after the kill (a ${timings.leaseDurationMs} ms Lease)`,
      );
    } finally {
      await taker.stop();
    }
  });

  it("a shard nobody wants any more is handed over and its Lease deleted", async () => {
    const gone = shards[0]!;
    wanted = shards.slice(1);
    const shardLeases = async () =>
      (
        await kc
          .makeApiClient(CoordinationV1Api)
          .listNamespacedLease({ namespace: "default", labelSelector: `${leaseKindLabel}=shard` })
      ).items.map((l) => l.metadata?.annotations?.[shardAnnotation]);
    await eventually(async () => !(await shardLeases()).includes(gone), {
      timeoutMs: 10_000,
      description: "the Lease of the shard nobody wants deleted",
    });
    assert.ok(replicas.every((r) => !r.held().includes(gone)));
    assert.equal((await shardLeases()).length, 29);
  });

  it("a sharded controller reconciles only the objects of the shards its replica holds, disowns the others, and looks again at both when a shard moves", async () => {
    const core = kc.makeApiClient(CoreV1Api);
    for (const name of ["shard-a-1", "shard-b-1"])
      await core.createNamespace({ body: { metadata: { name } } });
    let held = new Set(["a"]);
    const listeners: ((shards: readonly string[] | "leader") => void)[] = [];
    const ownership: Ownership = {
      owns: (shard) => shard !== undefined && held.has(shard),
      onChanged: (listener) => {
        listeners.push(listener);
        return () => listeners.splice(listeners.indexOf(listener), 1);
      },
    };
    const seen: string[] = [];
    const informer = new SharedInformer<KubernetesObject>(kc, informerSource(kc, namespaceType), quiet);
    const controller = new Controller(
      "sharded",
      {
        reconcile: (request: Request) => Promise.resolve(void seen.push(`reconciled ${request.name}`)),
        disown: (request: Request) => Promise.resolve(void seen.push(`disowned ${request.name}`)),
      },
      quiet,
      { shardOf: (r) => /^shard-(\w)-/.exec(r.name)?.[1] },
    ).for(informer);
    controller.shareBy(ownership);
    await informer.start();
    const running = controller.run();
    try {
      await eventually(() => seen.includes("reconciled shard-a-1") && seen.includes("disowned shard-b-1"), {
        timeoutMs: 10_000,
        description: () => `a reconciled, b disowned: ${seen.join(", ")}`,
      });
      assert.ok(!seen.includes("reconciled shard-b-1"), "nothing of a shard held elsewhere is reconciled");
      seen.length = 0;
      held = new Set(["b"]);
      for (const listener of [...listeners]) listener(["a", "b"]);
      await eventually(() => seen.includes("reconciled shard-b-1") && seen.includes("disowned shard-a-1"), {
        timeoutMs: 10_000,
        description: () => `after the move, b reconciled and a disowned: ${seen.join(", ")}`,
      });
      assert.ok(
        seen.every((line) => line.includes("shard-")),
        `only the objects of the shards that moved are looked at again: ${seen.join(", ")}`,
      );
    } finally {
      await controller.stop();
      await running;
      await informer.stop();
    }
    assert.equal(listeners.length, 0, "a stopped controller stops listening");
  });
});
