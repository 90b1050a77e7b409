import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, EventsV1Api, type KubeConfig } from "@kubernetes/client-node";
import {
  gitBranches,
  gitTargets,
  resourceTypes,
  type GitBranch,
  type GitTarget,
} from "../../../generated/v1alpha3/index.ts";
import { progressingTrio, readyTrio } from "../../../internal/operator/conditions.ts";
import { Controller, type Request } from "../../../internal/operator/controller.ts";
import { EventRecorder } from "../../../internal/operator/events.ts";
import { ensureFinalizer, removeFinalizer } from "../../../internal/operator/finalizers.ts";
import type { InformerSource } from "../../../internal/kube/sources.ts";
import { Manager } from "../../../internal/operator/manager.ts";
import { anyOf, generationChanged, readyTransition } from "../../../internal/operator/predicates.ts";
import { StatusWriter } from "../../../internal/operator/status.ts";
import type { ResourceClient, ResourceType } from "../../../internal/kube/resourceclient.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { installCrds } from "../../support/manifests.ts";
import { eventually } from "../../support/wait.ts";
import { quiet } from "../../support/logger.ts";

const namespace = "runtime";

function sourceOf<T extends GitTarget | GitBranch>(
  client: ResourceClient<T>,
  type: ResourceType,
): InformerSource<T> {
  return {
    path: `/apis/${type.group}/${type.version}/${type.plural}`,
    list: async () => {
      const { items, resourceVersion } = await client.list();
      return {
        apiVersion: `${type.group}/${type.version}`,
        kind: `${type.kind}List`,
        items,
        metadata: { resourceVersion },
      };
    },
  };
}

describe("the controller runtime against a real API server", () => {
  let plane: ControlPlane;
  let kc: KubeConfig;
  let manager: Manager;
  let running: Promise<void>;
  const reconciled: Request[] = [];
  let failuresLeft = 0;

  before(async () => {
    plane = await ControlPlane.start();
    kc = plane.kubeConfig();
    await installCrds(kc);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });

    const targets = gitTargets(kc);
    const branches = gitBranches(kc);
    manager = new Manager(kc, { logger: quiet });
    const targetInformer = manager.informer(sourceOf(targets, resourceTypes.GitTarget));
    const branchInformer = manager.informer(sourceOf(branches, resourceTypes.GitBranch));
    const status = new StatusWriter("gitops-reverser-test");

    // A reconciler shaped like the GitTarget one will be: load, validate, decide, write status.
    const controller = new Controller(
      "gittarget",
      {
        async reconcile(request) {
          reconciled.push(request);
          if (failuresLeft > 0) {
            failuresLeft--;
            throw new Error("injected failure");
          }
          const target = targetInformer.get(request.name, request.namespace);
          if (!target) return;
          const branch = branchInformer.get(target.spec.gitBranchRef.name, target.metadata.namespace);
          const generation = target.metadata.generation;
          await status.write(targets, target, {
            conditions: branch
              ? readyTrio("Succeeded", `GitBranch ${branch.metadata.name} exists`, generation)
              : progressingTrio(
                  "GitBranchNotFound",
                  `GitBranch ${target.spec.gitBranchRef.name} does not exist`,
                  generation,
                ),
          });
          return { requeueAfterMs: 60_000 };
        },
      },
      quiet,
    )
      .for(targetInformer)
      .watches(
        branchInformer,
        (branch) =>
          targetInformer
            .list(branch.metadata?.namespace)
            .filter((t) => t.spec.gitBranchRef.name === branch.metadata?.name)
            .map((t) => ({ namespace: t.metadata.namespace, name: t.metadata.name! })),
        anyOf(generationChanged, readyTransition),
      );
    manager.addController(controller);
    running = manager.start();
  });
  after(async () => {
    await manager?.stop();
    await running;
    await plane?.stop();
  });

  const target = (name: string, branch: string): GitTarget => ({
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "GitTarget",
    metadata: { name, namespace },
    spec: { gitBranchRef: { name: branch }, kubeProviderRef: { name: "k" }, path: name },
  });

  it("reconciles an object of its kind, and again when a dependency it maps to appears", async () => {
    const targets = gitTargets(kc);
    await targets.apply(target("waits-for-branch", "main"), "test");
    const notFound = await eventually(
      async () => {
        const t = await targets.get(namespace, "waits-for-branch");
        return t?.status?.conditions?.find((c) => c.type === "Ready")?.reason === "GitBranchNotFound" && t;
      },
      { description: "GitBranchNotFound in status" },
    );
    assert.equal(notFound.status?.observedGeneration, notFound.metadata.generation);

    await gitBranches(kc).apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitBranch",
        metadata: { name: "main", namespace },
        spec: { gitProviderRef: { name: "p" }, branch: "main" },
      },
      "test",
    );
    await eventually(
      async () =>
        (await targets.get(namespace, "waits-for-branch"))?.status?.conditions?.find(
          (c) => c.type === "Ready",
        )?.status === "True",
      { description: "the target to become Ready once its GitBranch exists" },
    );
  });

  it("writes status only when it changed", async () => {
    const targets = gitTargets(kc);
    const before = (await targets.get(namespace, "waits-for-branch"))!;
    const writer = new StatusWriter("gitops-reverser-test");
    const wrote = await writer.write(targets, before, {
      conditions: readyTrio("Succeeded", "GitBranch main exists", before.metadata.generation),
    });
    assert.equal(wrote, false);
    assert.equal(
      (await targets.get(namespace, "waits-for-branch"))?.metadata.resourceVersion,
      before.metadata.resourceVersion,
    );
  });

  it("retries a failing reconcile with backoff until it succeeds", async () => {
    failuresLeft = 3;
    const start = reconciled.length;
    await gitTargets(kc).apply(target("flaky", "main"), "test");
    await eventually(
      async () =>
        (await gitTargets(kc).get(namespace, "flaky"))?.status?.conditions?.find((c) => c.type === "Ready")
          ?.status === "True",
      { description: "the flaky target to be reconciled after its failures" },
    );
    assert.ok(reconciled.slice(start).filter((r) => r.name === "flaky").length >= 4);
  });

  it("adds and removes a finalizer, and records an Event", async () => {
    const targets = gitTargets(kc);
    const current = (await targets.get(namespace, "flaky"))!;
    const withFinalizer = await ensureFinalizer(targets, current, "configbutler.ai/test");
    assert.deepEqual(withFinalizer.metadata.finalizers, ["configbutler.ai/test"]);
    assert.equal(await ensureFinalizer(targets, withFinalizer, "configbutler.ai/test"), withFinalizer);
    await targets.delete(namespace, "flaky");
    const terminating = (await targets.get(namespace, "flaky"))!;
    assert.ok(terminating.metadata.deletionTimestamp, "the finalizer holds the object");
    await removeFinalizer(targets, terminating, "configbutler.ai/test");
    await eventually(async () => (await targets.get(namespace, "flaky")) === undefined, {
      description: "the object to go once its finalizer is removed",
    });

    const failures: string[] = [];
    const recorder = new EventRecorder(kc, "test-instance", {
      ...quiet,
      warn: (_m, meta) => failures.push(JSON.stringify(meta)),
    });
    const subject = (await targets.get(namespace, "waits-for-branch"))!;
    await recorder.record(subject, "Normal", "Adopted", "Adopt", "adopted the folder");
    const events = await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace });
    assert.deepEqual(failures, []);
    const event = events.items.find((e) => e.reason === "Adopted");
    assert.equal(event?.regarding?.uid, subject.metadata.uid);
    assert.equal(event?.reportingController, "configbutler.ai/gitops-reverser");
  });

  it("a manager stopped while its informers still list stops at once", async () => {
    // Stopped in the same turn it started, and again a few milliseconds in: a stopped informer
    // never syncs, so a start that waited for it would never return.
    for (const delayMs of [0, 0, 1, 5, 20]) {
      const early = new Manager(kc, { logger: quiet });
      early.informer(sourceOf(gitTargets(kc), resourceTypes.GitTarget));
      early.informer(sourceOf(gitBranches(kc), resourceTypes.GitBranch));
      const started = early.start();
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      const stopped = Promise.all([early.stop(), started]).then(() => true);
      const bound = new Promise<false>((resolve) => setTimeout(() => resolve(false), 10_000).unref());
      assert.ok(await Promise.race([stopped, bound]), `stopped within 10 s after ${delayMs} ms`);
    }
  });
});
