import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

/** The node flags that run this repository's TypeScript, for a process a test starts (hack/register.ts). */
export const typeScript = ["--import", join(repoRoot, "hack/register.ts")];

export interface TestenvBinaries {
  etcd: string;
  kubeApiserver: string;
  kubectl: string;
}

let cached: TestenvBinaries | undefined;

/**
 * The pinned etcd, kube-apiserver and kubectl built by `make testenv`. The directory comes
 * from hack/testenv/build.sh itself, so the versions and the cache key live in one place.
 * TESTENV_BIN_DIR overrides it, for binaries built some other way.
 */
export function testenvBinaries(): TestenvBinaries {
  if (cached) return cached;
  const dir =
    process.env.TESTENV_BIN_DIR ??
    execFileSync("bash", [join(repoRoot, "hack/testenv/build.sh"), "--print-dir"], {
      encoding: "utf8",
    }).trim();
  const binaries = {
    etcd: join(dir, "etcd"),
    kubeApiserver: join(dir, "kube-apiserver"),
    kubectl: join(dir, "kubectl"),
  };
  const missing = Object.values(binaries).filter((path) => !existsSync(path));
  if (missing.length > 0) {
    throw new Error(
      `test environment binaries are missing (${missing.join(", ")}): run \`make testenv\` first`,
    );
  }
  cached = binaries;
  return binaries;
}

const goTools = new Map<string, string>();

/** A tool hack/tools/gotool.sh builds: `override` (an environment variable) names another. */
function goTool(tool: "kustomize" | "sops" | "helm", override: string | undefined): string {
  let path = goTools.get(tool);
  if (!path) {
    path =
      override ??
      execFileSync("bash", [join(repoRoot, "hack/tools/gotool.sh"), tool, "--print-path"], {
        encoding: "utf8",
      }).trim();
    goTools.set(tool, path);
  }
  if (!existsSync(path)) throw new Error(`${tool} is missing (${path}): run \`make ${tool}\` first`);
  return path;
}

/**
 * The pinned kustomize built by `make kustomize`, which the operator runs to judge a folder as
 * it renders. KUSTOMIZE_PATH overrides it.
 */
export function kustomizeBinary(): string {
  return goTool("kustomize", process.env.KUSTOMIZE_PATH);
}

/** The pinned helm built by `make helm`, which lints, renders and installs the chart. HELM_PATH overrides it. */
export function helmBinary(): string {
  return goTool("helm", process.env.HELM_PATH);
}

/** The pinned sops built by `make sops`, which reads back what the operator encrypts. SOPS_PATH overrides it. */
export function sopsBinary(): string {
  return goTool("sops", process.env.SOPS_PATH);
}

/**
 * The bundle validator built by `make olm-validate` (hack/olm/validate, the operator-framework's
 * validation library). OLM_VALIDATE_PATH overrides it.
 */
export function olmValidateBinary(): string {
  const path =
    process.env.OLM_VALIDATE_PATH ??
    execFileSync("bash", [join(repoRoot, "hack/tools/olmvalidate.sh"), "--print-path"], {
      encoding: "utf8",
    }).trim();
  if (!existsSync(path))
    throw new Error(`the bundle validator is missing (${path}): run \`make olm-validate\` first`);
  return path;
}
