// The pinned helm, run against a control plane as its admin, with caches of its own: the chart's
// test lints, installs and upgrades with it, and the overlays' test renders the chart to hold an
// overlay to what the chart makes of the same choice.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { readFileSync } from "node:fs";
import { parse, parseAllDocuments } from "yaml";
import { helmBinary, repoRoot } from "./binaries.ts";
import type { ControlPlane } from "./controlplane.ts";
import type { Kubectl } from "./kubectl.ts";
import type { Manifest } from "./rendered.ts";

const exec = promisify(execFile);

export const chart = join(repoRoot, "charts/gitops-reverser");

/** The operator's image at the chart's appVersion: what every install pins, config/ as the chart. */
export const releasedImage = `ghcr.io/configbutler/gitops-reverser-ts:${
  (parse(readFileSync(join(chart, "Chart.yaml"), "utf8")) as { appVersion: string }).appVersion
}`;

/** Runs the pinned helm against the plane; a failure is returned, not thrown. */
export async function helm(plane: ControlPlane, ...args: string[]): Promise<Kubectl> {
  try {
    const { stdout, stderr } = await exec(helmBinary(), ["--kubeconfig", plane.kubeconfigPath, ...args], {
      maxBuffer: 64 * 1024 * 1024,
      env: {
        ...process.env,
        HELM_CACHE_HOME: join(plane.dir, "helm-cache"),
        HELM_CONFIG_HOME: join(plane.dir, "helm-config"),
      },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? String(err) };
  }
}

/** The chart rendered as the release gitops-reverser in a namespace, CRDs included. */
export async function helmTemplate(
  plane: ControlPlane,
  namespace: string,
  ...sets: string[]
): Promise<{ text: string; objects: Manifest[] }> {
  const result = await helm(
    plane,
    "template",
    "gitops-reverser",
    chart,
    "--namespace",
    namespace,
    "--include-crds",
    ...sets,
  );
  assert.equal(result.code, 0, result.stderr);
  return {
    text: result.stdout,
    objects: parseAllDocuments(result.stdout)
      .map((d) => d.toJS() as Manifest | null)
      .filter((o): o is Manifest => o !== null),
  };
}
