import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoordinationV1Api, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { Controller, type Request } from "../../../internal/operator/controller.ts";
import { informerSource, namespaceType } from "../../../internal/kube/sources.ts";
import { statusCodeOf } from "../../../internal/kube/resourceclient.ts";
import { LeaderElector } from "../../../internal/operator/leaderelection.ts";
import { Manager, type Runnable } from "../../../internal/operator/manager.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { eventually } from "../../support/wait.ts";
import { quiet } from "../../support/logger.ts";

const timings = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 200 };

/** A leader-only runnable that records whether it is running. */
function leaderWork(): Runnable & { running: boolean } {
  const work = {
    name: "leader-work",
    needLeaderElection: true,
    running: false,
    async start(signal: AbortSignal) {
      work.running = true;
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      work.running = false;
    },
  };
  return work;
}

describe("leader election on a Lease", () => {
  let plane: ControlPlane;
  let kc: KubeConfig;

  before(async () => {
    plane = await ControlPlane.start();
    kc = plane.kubeConfig();
  });
  after(async () => {
    await plane?.stop();
  });

  const holderOf = async (name: string) =>
    (await kc.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: "default", name })).spec;

  it("keeps a second manager standby until the first stops, then hands over", async () => {
    const lease = { namespace: "default", name: "two-managers", ...timings };
    const first = new Manager(kc, { leaderElection: { ...lease, identity: "first" }, logger: quiet });
    const firstWork = leaderWork();
    first.addRunnable(firstWork);
    const firstDone = first.start();
    await eventually(() => firstWork.running, { description: "the first manager to lead" });

    const observed: string[] = [];
    const second = new Manager(kc, {
      leaderElection: { ...lease, identity: "second" },
      logger: {
        ...quiet,
        info: (_m: string, meta?: object) => observed.push(String((meta as { identity?: string })?.identity)),
      },
    });
    const secondWork = leaderWork();
    second.addRunnable(secondWork);
    const secondDone = second.start();
    await eventually(() => observed.includes("first"), {
      description: "the second manager to see the first leading",
    });
    assert.equal(secondWork.running, false, "the standby runs no leader work");
    assert.equal((await holderOf("two-managers"))?.holderIdentity, "first");

    await first.stop();
    await firstDone;
    assert.equal(firstWork.running, false);
    await eventually(() => secondWork.running, {
      timeoutMs: 10_000,
      description: "the second manager to take over",
    });
    const spec = await holderOf("two-managers");
    assert.equal(spec?.holderIdentity, "second");
    assert.equal(spec?.leaseTransitions, 1);

    await second.stop();
    await secondDone;
  });

  it("a graceful stop gives the lease up only once the leader's work has stopped: a standby never writes beside it", async () => {
    const lease = { namespace: "default", name: "slow-handover", ...timings };
    const first = new Manager(kc, { leaderElection: { ...lease, identity: "first" }, logger: quiet });
    // A leader's work that takes a while to stop, as a branch worker publishing what it holds.
    let finishing = false;
    let finished = false;
    const publishing: Runnable = {
      name: "publishing",
      needLeaderElection: true,
      async start(signal) {
        await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
        finishing = true;
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        finished = true;
      },
    };
    first.addRunnable(publishing);
    const firstDone = first.start();
    await eventually(async () => (await holderOf("slow-handover"))?.holderIdentity === "first", {
      description: "the first manager to lead",
    });
    const second = new Manager(kc, { leaderElection: { ...lease, identity: "second" }, logger: quiet });
    let finishedWhenSecondLed: boolean | undefined;
    second.addRunnable({
      name: "second-work",
      needLeaderElection: true,
      async start(signal) {
        finishedWhenSecondLed = finished;
        await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      },
    });
    const secondDone = second.start();
    const stopping = first.stop();
    await eventually(() => finishing, { description: "the first's work to start stopping" });
    await stopping;
    await firstDone;
    await eventually(() => finishedWhenSecondLed !== undefined, {
      timeoutMs: 10_000,
      description: "the second manager to lead",
    });
    assert.equal(finishedWhenSecondLed, true, "the second led only after the first's work had stopped");
    await second.stop();
    await secondDone;
  });

  it("an every-replica controller reconciles on a standby too; the others only on the leader, and the new leader hears it leads", async () => {
    const lease = { namespace: "default", name: "every-replica", ...timings };
    const replica = (identity: string) => {
      const manager = new Manager(kc, { leaderElection: { ...lease, identity }, logger: quiet });
      const namespaces = manager.informer<KubernetesObject>(informerSource(kc, namespaceType));
      const seen = { everyReplica: new Set<string>(), leaderOnly: new Set<string>(), leading: 0 };
      const recorder = (into: Set<string>) => ({
        reconcile: (request: Request) => Promise.resolve(void into.add(request.name)),
      });
      manager.addController(
        new Controller("every", recorder(seen.everyReplica), quiet, { everyReplica: true }).for(namespaces),
      );
      manager.addController(new Controller("leader", recorder(seen.leaderOnly), quiet).for(namespaces));
      manager.onLeading(() => seen.leading++);
      return { manager, seen, done: manager.start() };
    };
    const first = replica("first");
    await eventually(() => first.seen.leaderOnly.has("default") && first.seen.leading === 1, {
      description: "the first manager to lead",
    });
    const second = replica("second");
    await eventually(() => second.seen.everyReplica.has("default"), {
      description: "the standby's every-replica controller to reconcile",
    });
    assert.equal(second.seen.leaderOnly.size, 0, "the standby runs no leader-only controller");
    assert.equal(second.seen.leading, 0);

    await first.manager.stop();
    await first.done;
    await eventually(() => second.seen.leaderOnly.has("default") && second.seen.leading === 1, {
      timeoutMs: 10_000,
      description: "the second manager to lead, and to hear it",
    });
    await second.manager.stop();
    await second.done;
  });

  it("stops the manager, and fails it, when it can no longer renew its lease", async () => {
    const lease = { namespace: "default", name: "stolen", ...timings };
    const manager = new Manager(kc, { leaderElection: { ...lease, identity: "victim" }, logger: quiet });
    const work = leaderWork();
    manager.addRunnable(work);
    const done = manager.start();
    await eventually(() => work.running, { description: "the manager to lead" });

    // Somebody else writes the lease, as a partitioned standby would after expiry.
    // A renew landing between its read and its write is a conflict: it reads and writes again.
    const api = kc.makeApiClient(CoordinationV1Api);
    await eventually(
      async () => {
        const stolen = await api.readNamespacedLease({ namespace: "default", name: "stolen" });
        stolen.spec = { ...stolen.spec, holderIdentity: "thief" };
        try {
          await api.replaceNamespacedLease({ namespace: "default", name: "stolen", body: stolen });
          return true;
        } catch (err) {
          if (statusCodeOf(err) === 409) return false;
          throw err;
        }
      },
      { description: "the lease written by somebody else" },
    );

    await assert.rejects(done, /lost the leader election lease/);
    assert.equal(work.running, false, "leader work stops with the lease");
  });

  it("takes over a lease whose holder died without releasing it, once it expires", async () => {
    const config = { namespace: "default", name: "crashed-holder", ...timings };
    const crashed = new AbortController();
    let crashedLeads = false;
    const dying = new LeaderElector(
      kc,
      { ...config, identity: "dying" },
      { onStartedLeading: () => (crashedLeads = true), onStoppedLeading: () => undefined },
      quiet,
    );
    const dyingRun = dying.run(crashed.signal);
    await eventually(() => crashedLeads, { description: "the first elector to lead" });
    crashed.abort();
    await dyingRun;

    const standby = new AbortController();
    let takenOver = false;
    const heir = new LeaderElector(
      kc,
      { ...config, identity: "heir" },
      { onStartedLeading: () => (takenOver = true), onStoppedLeading: () => undefined },
      quiet,
    );
    const heirRun = heir.run(standby.signal);
    await eventually(() => takenOver, {
      timeoutMs: 15_000,
      description: "the heir to take over the expired lease",
    });
    assert.equal((await holderOf("crashed-holder"))?.holderIdentity, "heir");
    standby.abort();
    await heirRun;
  });
});
