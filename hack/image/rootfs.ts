// Builds the operator's image as a root filesystem, without a container engine: the base
// node:24-slim stands for is made from Debian's packages (mmdebstrap, minbase, the docs a slim
// image leaves out left out too) with the Node.js binary of the `node` package this repository
// pins, and then the Dockerfile's final stage is carried out on it step by step (its RUN lines
// run in a chroot, as `docker build` runs them). The files the final stage copies from earlier
// stages (the bundle, kustomize) are not baked in: the tests attach the ones they built, read-only,
// where the COPY puts them (test/support/image.ts), so one build serves every source change.
// Cached by a hash of the final stage, the base and this code, like the Go tools.
//   node --import ./hack/register.ts hack/image/rootfs.ts              build (or reuse)
//   node --import ./hack/register.ts hack/image/rootfs.ts --print-dir  where it is, building nothing
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseDockerfile, planFinalStage, type ImagePlan } from "./dockerfile.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The image, as built: its root filesystem and what the Dockerfile says it runs. */
export interface BuiltImage {
  rootfs: string;
  plan: ImagePlan;
  /** The Debian suite and the Node.js version standing in for the base. */
  base: { suite: string; node: string };
}

/** node:<major>-slim: Debian at this machine's suite (where its packages come from) and that Node.js. */
function base(from: string): {
  suite: string;
  node: string;
  nodeBinary: string;
  env: Record<string, string>;
} {
  const match = /^node:(\d+)-slim$/.exec(from);
  if (!match) throw new Error(`FROM ${from}: hack/image/rootfs.ts stands in only for node:<major>-slim`);
  const nodeBinary = join(root, "node_modules/node/bin/node");
  const node = execFileSync(nodeBinary, ["--version"], { encoding: "utf8" }).trim().replace(/^v/, "");
  if (node.split(".")[0] !== match[1])
    throw new Error(
      `FROM ${from}, but the pinned node package is ${node}: the image and the tests would differ`,
    );
  const suite = /^VERSION_CODENAME=(\S+)$/m.exec(readFileSync("/etc/os-release", "utf8"))?.[1];
  if (!suite) throw new Error("/etc/os-release names no VERSION_CODENAME: which Debian to build from?");
  // The node image's own ENV.
  const env = { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NODE_VERSION: node };
  return { suite, node, nodeBinary, env };
}

/** Where the image is (or will be) and how to build it. */
function describe() {
  const stages = parseDockerfile(readFileSync(join(root, "Dockerfile"), "utf8"));
  const b = base(stages.at(-1)!.from);
  const plan = planFinalStage(stages, b.env);
  const key = createHash("sha256")
    .update(JSON.stringify({ plan, suite: b.suite, node: b.node }))
    .update(readFileSync(fileURLToPath(import.meta.url)))
    .update(readFileSync(join(root, "hack/image/dockerfile.ts")))
    .digest("hex")
    .slice(0, 12);
  const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "gitops-reverser/tools");
  return { plan, base: b, dir: join(cache, `image-${key}`) };
}

/** The built image, or an error that says how to build it. */
export function builtImage(): BuiltImage {
  const { dir } = describe();
  const file = join(dir, "image.json");
  if (!existsSync(file))
    throw new Error(`the image's root filesystem is missing (${dir}): run \`make image\` first`);
  return {
    ...(JSON.parse(readFileSync(file, "utf8")) as Omit<BuiltImage, "rootfs">),
    rootfs: join(dir, "rootfs"),
  };
}

/** Builds the image into `dir` (through a .partial directory renamed when complete). */
function build(dir: string, plan: ImagePlan, b: ReturnType<typeof base>): void {
  const partial = `${dir}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  const rootfs = join(partial, "rootfs");
  const started = Date.now();
  console.log(`image: the base, Debian ${b.suite} (minbase, slim) with Node.js ${b.node}`);
  execFileSync(
    "mmdebstrap",
    [
      "--variant=minbase",
      "--mode=root",
      "--quiet",
      // What debian:*-slim leaves out.
      "--dpkgopt=path-exclude=/usr/share/doc/*",
      "--dpkgopt=path-exclude=/usr/share/man/*",
      "--dpkgopt=path-exclude=/usr/share/locale/*",
      "--dpkgopt=path-exclude=/usr/share/info/*",
      b.suite,
      rootfs,
    ],
    { stdio: "inherit" },
  );
  copyFileSync(b.nodeBinary, join(rootfs, "usr/local/bin/node"));
  chmodSync(join(rootfs, "usr/local/bin/node"), 0o755);
  // What a container runtime binds over: present, so a bind has somewhere to go.
  for (const file of ["etc/resolv.conf", "etc/hosts", "etc/hostname"])
    if (!existsSync(join(rootfs, file))) writeFileSync(join(rootfs, file), "");
  mkdirSync(join(rootfs, "run/secrets/kubernetes.io/serviceaccount"), { recursive: true });
  for (const step of plan.steps) {
    if ("run" in step) {
      console.log(`image: RUN ${step.run}`);
      run(rootfs, step);
    } else if ("mkdir" in step) {
      mkdirSync(join(rootfs, step.mkdir), { recursive: true });
    } else {
      // A placeholder the tests bind the stage's file over.
      mkdirSync(join(rootfs, dirname(step.attach.target)), { recursive: true });
      writeFileSync(join(rootfs, step.attach.target), "");
    }
  }
  writeFileSync(
    join(partial, "image.json"),
    JSON.stringify({ plan, base: { suite: b.suite, node: b.node } }, null, 2),
  );
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
  console.log(`image: built in ${Math.round((Date.now() - started) / 1000)}s: ${dir}`);
}

/** A RUN line in the root filesystem, as root, with the image's ENV so far and nothing else. */
function run(rootfs: string, step: Extract<ImagePlan["steps"][number], { run: string }>): void {
  if (step.user !== "root") throw new Error(`RUN after USER ${step.user}: not understood yet`);
  const env = Object.entries(step.env).map(([key, value]) => `${key}=${value}`);
  // Its own mount namespace: /dev, /proc and the host's DNS, gone when the step ends.
  const script =
    'set -e; r="$1"; shift; mount --rbind /dev "$r/dev"; mount -t proc proc "$r/proc"; ' +
    'mount --bind /etc/resolv.conf "$r/etc/resolv.conf"; exec chroot "$r" /usr/bin/env -i "$@"';
  execFileSync(
    "unshare",
    [
      "--mount",
      "--propagation",
      "private",
      "sh",
      "-c",
      script,
      "sh",
      rootfs,
      ...env,
      "DEBIAN_FRONTEND=noninteractive",
      "/bin/sh",
      "-c",
      `cd ${step.workdir} && ${step.run}`,
    ],
    { stdio: "inherit" },
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { plan, base: b, dir } = describe();
  if (process.argv[2] === "--print-dir") {
    console.log(dir);
  } else if (!existsSync(join(dir, "image.json"))) {
    // Not an error: the image's test is skipped without root too (test/e2e/operator/image.test.ts).
    if (process.getuid?.() !== 0)
      console.log("image: not built: a root filesystem needs root (mmdebstrap, chroot, mount)");
    else build(dir, plan, b);
  }
}
