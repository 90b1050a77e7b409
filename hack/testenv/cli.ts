// make testenv-up / make testenv-down: a control plane, a Git server and Redis in the
// background, for people. `up` starts a detached `serve` process and waits for it to write
// .testenv/env; `down` signals it, and the harness's reaper takes everything it started.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, openSync } from "node:fs";
import { copyFile, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { repoRoot, testenvBinaries, typeScript } from "../../test/support/binaries.ts";
import { ControlPlane } from "../../test/support/controlplane.ts";
import { GitServer } from "../../test/support/gitserver.ts";
import { RedisServer } from "../../test/support/redis.ts";
import { eventually } from "../../test/support/wait.ts";

const stateDir = join(repoRoot, ".testenv");
const envFile = join(stateDir, "env");
const pidFile = join(stateDir, "pid");
const logFile = join(stateDir, "testenv.log");

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function runningPid(): Promise<number | undefined> {
  try {
    const pid = Number(await readFile(pidFile, "utf8"));
    return Number.isInteger(pid) && isAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Single-quotes a value for a POSIX shell. */
function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

async function serve(): Promise<void> {
  const password = randomBytes(12).toString("hex");
  const user = { username: "gitops", password };
  const plane = await ControlPlane.start();
  const git = await GitServer.start({ users: [user] });
  const redis = await RedisServer.start();
  const gitUrl = await git.createRepository("demo");
  const kubeconfig = join(stateDir, "kubeconfig");
  await copyFile(plane.kubeconfigPath, kubeconfig);
  const variables = {
    KUBECONFIG: kubeconfig,
    GIT_URL: gitUrl,
    GIT_USERNAME: user.username,
    GIT_PASSWORD: user.password,
    REDIS_ADDR: redis.address,
    // The pinned kubectl first: a distribution's may be too old for this server.
    PATH: `${dirname(testenvBinaries().kubectl)}:${process.env.PATH ?? ""}`,
  };
  const text = Object.entries(variables)
    .map(([name, value]) => `export ${name}=${shellQuote(value)}\n`)
    .join("");
  // Written last and atomically: its appearance is what `up` waits for.
  await writeFile(`${envFile}.tmp`, text, { mode: 0o600 });
  await rename(`${envFile}.tmp`, envFile);
  setInterval(() => undefined, 1 << 30);
}

async function up(): Promise<void> {
  await mkdir(stateDir, { recursive: true });
  if (!(await runningPid())) {
    await rm(envFile, { force: true });
    const child = spawn(process.execPath, [...typeScript, fileURLToPath(import.meta.url), "serve"], {
      cwd: repoRoot,
      detached: true,
      stdio: ["ignore", openSync(logFile, "w"), openSync(logFile, "a")],
    });
    child.unref();
    await writeFile(pidFile, String(child.pid));
    await eventually(
      () => {
        if (child.exitCode !== null) throw new Error(`the test environment failed to start; see ${logFile}`);
        return existsSync(envFile);
      },
      { timeoutMs: 180_000, intervalMs: 250, description: "the test environment to start" },
    ).catch(async (err: unknown) => {
      await down();
      throw err;
    });
  }
  const env = await readFile(envFile, "utf8");
  process.stdout.write(
    `The test environment is up (log: ${logFile}).\n\n${env}\nUse it with: source .testenv/env\n`,
  );
}

async function down(): Promise<void> {
  const pid = await runningPid();
  if (pid) {
    process.kill(pid, "SIGTERM");
    await eventually(() => !isAlive(pid), { timeoutMs: 30_000, description: `process ${pid} to exit` });
  }
  await Promise.all([envFile, pidFile, join(stateDir, "kubeconfig")].map((f) => rm(f, { force: true })));
  process.stdout.write(pid ? "The test environment is down.\n" : "No test environment was running.\n");
}

const commands: Record<string, () => Promise<void>> = { up, down, serve };
const command = commands[process.argv[2] ?? ""];
if (!command) {
  process.stderr.write("usage: testenv up | down\n");
  process.exit(2);
}
await command();
