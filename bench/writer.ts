// (f) One edit committed into the N-document folder the snapshot pushed, through the writer
// alone (no API server, no push): with a cold inventory, which reads and parses every file as
// each write did before the inventory was kept; with the warm inventory a worker keeps; and
// warm again after somebody else's commit was fetched, which re-reads only what that commit
// changed. Times are materialize(): the inventory refresh, the acceptance gate, the in-place
// edit and the commit, answered.
import { join } from "node:path";
import type { KubernetesObject } from "@kubernetes/client-node";
import { Clone } from "../internal/git/engine/clone.ts";
import { materialize } from "../internal/git/folder/materialize.ts";
import type { DecidedWrite } from "../internal/git/folder/writes.ts";
import { FolderInventory } from "../internal/manifest/inventory/inventory.ts";
import { kustomizationReferences } from "../internal/manifest/index.ts";
import type { GitServer } from "../test/support/gitserver.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../test/support/reaper.ts";
import { configMapIdentity } from "../test/support/streams.ts";
import { configMapData, configMapName, targetPath } from "./cluster.ts";

export interface WriterStep {
  ms: number;
  /** Files the inventory parsed for this write. */
  parsed: number;
}

export interface WriterResult {
  documents: number;
  /** A fresh inventory: the whole folder read and parsed, then one edit and its commit. */
  cold: WriterStep;
  /** The inventory the previous write left: one edit and its commit. */
  warm: WriterStep;
  /** After a fetched foreign commit that changed one file: that file re-read, one edit, commit. */
  afterFetch: WriterStep;
}

const committer = { name: "bench", email: "bench@example.com" };

function edit(namespace: string, index: number, round: number): DecidedWrite {
  const name = configMapName(index);
  const configMap: KubernetesObject & { data: Record<string, string> } = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace },
    data: { ...configMapData(index), alpha: `bench-writer-${round}` },
  };
  return {
    target: {
      key: `${namespace}/configs`,
      path: targetPath,
      timers: { idleTimeoutMs: 0, maxDurationMs: 0 },
      prune: "OnEvent",
    },
    reason: "live",
    changes: [
      {
        op: "upsert",
        identity: configMapIdentity(name, namespace),
        object: configMap,
      },
    ],
  };
}

export async function measureWriter(
  git: GitServer,
  repository: string,
  user: { username: string; password: string },
  namespace: string,
  size: number,
): Promise<WriterResult> {
  const dir = makeOwnedTempDir("bench-writer");
  try {
    const clone = new Clone({
      dir: join(dir, "clone"),
      url: git.repositoryUrl(repository),
      branch: "main",
      auth: user,
      buildsFrom: kustomizationReferences,
    });
    await clone.fetchAndReset();
    const inventory = new FolderInventory(targetPath);
    const options = {
      committer,
      additionalSensitive: [],
      message: () => "bench: one edit",
      onRefused: () => undefined,
    };
    const timed = async (write: DecidedWrite): Promise<WriterStep> => {
      const started = performance.now();
      await materialize(clone, inventory, write, options);
      await clone.settle();
      return { ms: performance.now() - started, parsed: inventory.lastRefreshParsed };
    };
    const cold = await timed(edit(namespace, 0, 1));
    const warm = await timed(edit(namespace, Math.floor(size / 2), 2));
    const last = size - 1;
    await git.pushForeignCommit(repository, {
      files: {
        [`${targetPath}/${namespace}/configmaps/${configMapName(last)}.yaml`]: `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${configMapName(last)}\n  namespace: ${namespace}\ndata:\n  alpha: foreign\n`,
      },
    });
    await clone.fetchAndReset();
    const afterFetch = await timed(edit(namespace, 1, 3));
    return { documents: inventory.documentCount, cold, warm, afterFetch };
  } finally {
    removeOwnedTempDir(dir);
  }
}
