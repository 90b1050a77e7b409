// (g) A restart with Git already matching live: the operator is stopped and started again on
// the clone it left, and one edit is sent as it starts. Measured: from the new operator's start
// to the push that carries the edit, and the pushes before it (none, when the restart costs
// nothing: every collection is observed again, and nothing in Git needs to change).
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { sleep } from "../internal/timing/sleep.ts";
import { configMapName } from "./cluster.ts";
import type { PushLog } from "./pushlog.ts";

export interface RestartResult {
  /** From the new operator's start to the push that landed the edit. */
  firstEditMs: number | undefined;
  /** From the PATCH answered to that push. */
  editToPushMs: number | undefined;
  /** Pushes that landed before the edit's (a restart that costs nothing makes none). */
  pushesBefore: number;
}

export async function measureRestart(options: {
  kc: KubeConfig;
  namespace: string;
  folder: string;
  log: PushLog;
  timeoutMs: number;
  /** Starts the operator: in the benchmark's process, or as its own. */
  start: () => unknown;
}): Promise<RestartResult> {
  const { kc, namespace, folder, log } = options;
  const core = kc.makeApiClient(CoreV1Api);
  await log.skipExisting();
  const before = (await log.pushes()).length;
  // The shape the push log looks for in a diff (edits.ts).
  const token = `restart-${Date.now() % 1_000_000}-0`;
  const started = Date.now();
  await options.start();
  await core.patchNamespacedConfigMap({
    namespace,
    name: configMapName(0),
    body: [{ op: "replace", path: "/data/gamma", value: token }],
  });
  const answered = Date.now();
  while (!log.landed.has(token) && Date.now() < started + options.timeoutMs) {
    await sleep(20);
    await log.scan(folder);
  }
  const landedAt = log.landed.get(token);
  const pushes = await log.pushes();
  const edit = pushes.findIndex((p, i) => i >= before && landedAt !== undefined && p.at >= landedAt);
  return {
    firstEditMs: landedAt === undefined ? undefined : landedAt - started,
    editToPushMs: landedAt === undefined ? undefined : landedAt - answered,
    pushesBefore: (edit < 0 ? pushes.length : edit) - before,
  };
}
