// A source that cannot be discovered when its watch plane starts is asked again, with backoff,
// until it answers: a context is never left dead by a failed first discovery. The source is a
// real kube-apiserver reached through a TCP relay the test opens once discovery has failed.
import assert from "node:assert/strict";
import { connect, createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { compileWatchRule } from "../../../internal/rulestore/compile.ts";
import { RuleStore } from "../../../internal/rulestore/store.ts";
import { WatchManager } from "../../../internal/watch/manager.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { recordingLogger } from "../../support/logger.ts";
import { nextItem } from "../../support/streams.ts";
import { eventually } from "../../support/wait.ts";

/** A relay to `target` that refuses every connection until it is opened. */
async function relay(target: URL): Promise<{ server: Server; port: number; open: () => void }> {
  let open = false;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    if (!open) return void client.destroy();
    const upstream = connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  server.on("close", () => sockets.forEach((s) => s.destroy()));
  return { server, port, open: () => void (open = true) };
}

describe("a source discovered late", () => {
  let plane: ControlPlane;
  let relayed: Awaited<ReturnType<typeof relay>>;
  const stop = new AbortController();
  let running: Promise<void> | undefined;

  before(async () => {
    plane = await ControlPlane.start();
    relayed = await relay(new URL(plane.kubeConfig().getCurrentCluster()!.server));
  });
  after(async () => {
    stop.abort();
    await running;
    relayed?.server.close();
    await plane?.stop();
  });

  it("a first discovery that fails is tried again until the source answers, and the target's watches then start", async () => {
    const core = plane.kubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "late" } } });
    await core.createNamespacedConfigMap({ namespace: "late", body: { metadata: { name: "there" } } });
    const rules = new RuleStore();
    rules.set(
      "WatchRule/late/r",
      compileWatchRule({
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "WatchRule",
        metadata: { name: "r", namespace: "late" },
        spec: { gitTargetRef: { name: "t" }, rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
      }),
    );
    // The plane's own credentials and CA, reaching it through the relay.
    const through = new KubeConfig();
    through.loadFromString(plane.kubeConfig().exportConfig());
    const cluster = through.getCurrentCluster()!;
    through.clusters = [{ ...cluster, server: `https://127.0.0.1:${relayed.port}` }];
    const logger = recordingLogger();
    const manager = new WatchManager(through, rules, logger, { source: "late/source" });
    manager.serve({ namespace: "late", name: "t" });
    running = manager.start(stop.signal);
    await eventually(
      () =>
        logger.lines.some(
          (l) => l.message === "discovery failed; trying again" && l.meta.source === "late/source",
        ),
      { description: "the first discovery to fail and be tried again" },
    );
    relayed.open();
    const first = await nextItem(manager.streamFor({ namespace: "late", name: "t" }), "the first snapshot");
    assert.equal(first.type, "snapshot");
    assert.deepEqual(first.type === "snapshot" ? first.objects.map((o) => o.identity.name) : [], ["there"]);
  });
});
