// The pinned kubectl, run as a control plane's admin, for tests that need what only kubectl does
// (kustomize, server-side apply of a folder).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { testenvBinaries } from "./binaries.ts";
import type { ControlPlane } from "./controlplane.ts";

const exec = promisify(execFile);

export interface Kubectl {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the pinned kubectl as the control plane's admin; a failure is returned, not thrown. */
export async function kubectl(plane: ControlPlane, ...args: string[]): Promise<Kubectl> {
  try {
    const { stdout, stderr } = await exec(
      testenvBinaries().kubectl,
      ["--kubeconfig", plane.kubeconfigPath, ...args],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? String(err) };
  }
}

/** Runs kubectl as the plane's admin, and fails the test if it fails. */
export async function kubectlOk(plane: ControlPlane, ...args: string[]): Promise<string> {
  const result = await kubectl(plane, ...args);
  assert.equal(result.code, 0, result.stderr);
  return result.stdout;
}
