// Runs the real `kustomize build` on a folder of the worktree, to judge the folder as it renders.
// kustomize only judges: it never writes, and our in-place editor stays the only writer. The
// folder is a stranger's content, so the build runs shut in: plugins and exec functions off, an
// empty HOME so no plugin is found, no network (remote resources fail at once), a deadline, and
// kustomize's own load restrictor, which keeps each kustomization's files inside its root while
// letting an overlay build a base directory such as ../base.
import { execFile, type ExecFileException } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";

export interface KustomizeSettings {
  /** The kustomize binary: --kustomize-path, `kustomize` on PATH by default. */
  binary: string;
  /** How long one build may take; 60 s unless a test wants less (1,000 documents take seconds). */
  timeoutMs?: number;
}

/**
 * What one build gave: the rendered objects in output order, or kustomize's own message;
 * `missing` when the operator's kustomize itself could not be run, which no folder can fix.
 */
export type BuildResult = { ok: true; objects: unknown[] } | { ok: false; message: string; missing?: true };

const defaultTimeoutMs = 60_000;
// A rendered folder of 10,000 documents is tens of megabytes of YAML.
const maxOutputBytes = 512 * 1024 * 1024;
// A proxy nobody serves: kustomize's HTTP fetches of remote resources fail on the spot.
const noProxy = "http://127.0.0.1:9";

export async function kustomizeBuild(settings: KustomizeSettings, dir: string): Promise<BuildResult> {
  const home = await mkdtemp(join(tmpdir(), "kustomize-home-"));
  try {
    const { stdout, error, missing } = await run(settings, dir, home);
    if (error) return { ok: false, message: error, ...(missing ? { missing } : {}) };
    const objects = parseAllDocuments(stdout).map((doc) => doc.toJS() as unknown);
    return { ok: true, objects: objects.filter((o) => o !== null && o !== undefined) };
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

function run(
  settings: KustomizeSettings,
  dir: string,
  home: string,
): Promise<{ stdout: string; error?: string; missing?: true }> {
  const args = [
    "build",
    dir,
    "--load-restrictor=LoadRestrictionsRootOnly",
    "--enable-alpha-plugins=false",
    "--enable-exec=false",
    "--enable-helm=false",
    "--network=false",
  ];
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    XDG_CONFIG_HOME: home,
    XDG_CACHE_HOME: home,
    XDG_DATA_HOME: home,
    KUSTOMIZE_PLUGIN_HOME: join(home, "plugins"),
    HTTP_PROXY: noProxy,
    HTTPS_PROXY: noProxy,
    // A remote base is fetched with git: only local repositories may be read, never a remote.
    GIT_ALLOW_PROTOCOL: "file",
    GIT_TERMINAL_PROMPT: "0",
    GIT_CONFIG_NOSYSTEM: "1",
  };
  const timeoutMs = settings.timeoutMs ?? defaultTimeoutMs;
  return new Promise((resolve) => {
    execFile(
      settings.binary,
      args,
      { env, timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: maxOutputBytes, encoding: "utf8" },
      (err, stdout, stderr) => {
        if (!err) return resolve({ stdout });
        const missing = err.code === "ENOENT" ? { missing: true as const } : {};
        resolve({ stdout: "", error: failure(settings, err, stderr, timeoutMs), ...missing });
      },
    );
  });
}

function failure(
  settings: KustomizeSettings,
  err: ExecFileException,
  stderr: string,
  timeoutMs: number,
): string {
  if (err.code === "ENOENT")
    return `the operator's kustomize was not found at "${settings.binary}": install kustomize there, or start the operator with --kustomize-path naming it (make run and the image pass the pinned one)`;
  if (err.killed) return `kustomize build did not finish within ${timeoutMs / 1000}s`;
  const said = stderr.trim().replace(/^Error: /, "");
  return said === "" ? err.message : said;
}
