// The operator's image run as the chart's Deployment runs it, without a container engine (these
// machines have none): the root filesystem hack/image/rootfs.ts built from the Dockerfile,
// bound read-only in a mount namespace of its own, the files the final stage copies from earlier
// stages attached where it copies them, a tmpfs for each emptyDir, the ServiceAccount's token
// where the kubelet projects it, and the process started as the pod's securityContext says: its
// uid and gid, fsGroup as its one supplementary group, no new privileges, no capabilities. It
// shares the host's network, so it reaches the control plane and the Git servers on loopback.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { V1Container, V1Deployment, V1PodSpec } from "@kubernetes/client-node";
import { attachmentFile, type StageOutputs } from "../../hack/image/dockerfile.ts";
import type { BuiltImage } from "../../hack/image/rootfs.ts";
import { servedPort, type OperatorProcess } from "./operator.ts";
import { ManagedProcess } from "./process.ts";

/** What the chart's Deployment says of how its one container runs. */
export interface PodRuntime {
  runAsUser: number;
  runAsGroup: number;
  fsGroup?: number;
  readOnlyRootFilesystem: boolean;
  noNewPrivileges: boolean;
  emptyDirs: { mountPath: string; sizeLimit?: string }[];
  args: string[];
  env: NonNullable<V1Container["env"]>;
}

/** The runtime of the rendered Deployment's container; an omission the pod relies on is an error. */
export function podRuntime(deployment: V1Deployment): PodRuntime {
  const pod = deployment.spec?.template.spec as V1PodSpec;
  const container = pod.containers[0]!;
  const { runAsUser, runAsGroup, fsGroup } = pod.securityContext ?? {};
  if (runAsUser === undefined || runAsGroup === undefined)
    throw new Error("the Deployment sets no runAsUser and runAsGroup: the image's USER would decide");
  const emptyDirs = (container.volumeMounts ?? []).flatMap((mount) => {
    const volume = pod.volumes?.find((v) => v.name === mount.name);
    return volume?.emptyDir
      ? [
          {
            mountPath: mount.mountPath,
            ...(volume.emptyDir.sizeLimit ? { sizeLimit: String(volume.emptyDir.sizeLimit) } : {}),
          },
        ]
      : [];
  });
  return {
    runAsUser,
    runAsGroup,
    ...(fsGroup !== undefined ? { fsGroup } : {}),
    readOnlyRootFilesystem: container.securityContext?.readOnlyRootFilesystem === true,
    noNewPrivileges: container.securityContext?.allowPrivilegeEscalation === false,
    emptyDirs,
    args: container.args ?? [],
    env: container.env ?? [],
  };
}

/** tmpfs's size option for a Kubernetes quantity (Mi, Gi, or bytes). */
function tmpfsSize(quantity: string): string {
  const match = /^(\d+)(Ki|Mi|Gi)?$/.exec(quantity);
  if (!match) throw new Error(`emptyDir sizeLimit ${quantity}: not understood here`);
  return `${match[1]}${match[2]?.[0]?.toLowerCase() ?? ""}`;
}

export interface ImageProcessOptions {
  image: BuiltImage;
  outputs: StageOutputs;
  pod: PodRuntime;
  /** Flags after the chart's: a later flag wins. */
  args: string[];
  /** The downward API's values the chart's env asks for, by fieldPath. */
  fields: Record<string, string>;
  /** What the kubelet gives a pod of the ServiceAccount: token, CA and namespace, and the API's address. */
  serviceAccount: { token: string; ca: string; namespace: string; host: string; port: number };
  /** Where the process's files and log go. */
  dir: string;
}

/**
 * Starts the image's ENTRYPOINT with the chart's args and `args`, as a pod of `pod` runs it.
 * Needs root (mount namespaces, chroot), as a container runtime does.
 */
export function startImageProcess(options: ImageProcessOptions): OperatorProcess {
  const { image, pod, dir, serviceAccount: sa } = options;
  const { plan } = image;
  mkdirSync(join(dir, "mnt"), { recursive: true });
  const secrets = join(dir, "serviceaccount");
  mkdirSync(secrets, { recursive: true });
  writeFileSync(join(secrets, "token"), sa.token);
  writeFileSync(join(secrets, "ca.crt"), sa.ca);
  writeFileSync(join(secrets, "namespace"), sa.namespace);
  const podName = "gitops-reverser-0";
  writeFileSync(join(dir, "hostname"), `${podName}\n`);
  writeFileSync(join(dir, "hosts"), `127.0.0.1\tlocalhost\n127.0.0.1\t${podName}\n`);

  const attachments = plan.attachments.map((attachment) => {
    const file = attachmentFile(attachment, options.outputs);
    if (typeof file !== "string") throw new Error(file.unknown);
    return [file, attachment.target] as const;
  });
  const env = {
    ...plan.env,
    ...podEnv(pod, options.fields),
    HOSTNAME: podName,
    KUBERNETES_SERVICE_HOST: sa.host,
    KUBERNETES_SERVICE_PORT: String(sa.port),
  };
  const group = pod.fsGroup ?? pod.runAsGroup;
  const mounts = [
    `mount --bind ${q(image.rootfs)} "$m"`,
    ...attachments.flatMap(([file, target]) => readOnlyBind(file, `"$m"${q(target)}`)),
    `mount -t proc proc "$m/proc"`,
    // A container's /dev: a tmpfs with the few devices a runtime gives it.
    `mount -t tmpfs -o mode=755,size=64k tmpfs "$m/dev"`,
    `for d in null zero full random urandom tty; do touch "$m/dev/$d"; mount --bind "/dev/$d" "$m/dev/$d"; done`,
    `ln -s /proc/self/fd "$m/dev/fd"`,
    ...pod.emptyDirs.map(
      ({ mountPath, sizeLimit }) =>
        `mount -t tmpfs -o mode=2777,gid=${group}${sizeLimit ? `,size=${tmpfsSize(sizeLimit)}` : ""} tmpfs "$m"${q(mountPath)}`,
    ),
    ...readOnlyBind(secrets, `"$m/run/secrets/kubernetes.io/serviceaccount"`),
    ...readOnlyBind(join(dir, "hosts"), `"$m/etc/hosts"`),
    ...readOnlyBind(join(dir, "hostname"), `"$m/etc/hostname"`),
    ...(pod.readOnlyRootFilesystem ? [`mount -o remount,bind,ro "$m"`] : []),
  ];
  const exec = [
    ...(pod.noNewPrivileges ? ["setpriv", "--no-new-privs"] : []),
    "chroot",
    `--userspec=${pod.runAsUser}:${pod.runAsGroup}`,
    `--groups=${group}`,
    '"$m"',
    "/usr/bin/env",
    "-i",
    "-C",
    q(plan.workdir),
    ...Object.entries(env).map(([key, value]) => q(`${key}=${value}`)),
    ...[...plan.entrypoint, ...pod.args, ...options.args].map(q),
  ].join(" ");
  const script = [`set -e`, `m=${q(join(dir, "mnt"))}`, ...mounts, `exec ${exec}`].join("\n");
  const logFile = join(dir, "operator.log");
  const started = ManagedProcess.start({
    name: "gitops-reverser (image)",
    command: "unshare",
    args: ["--mount", "--propagation", "private", "sh", "-c", script],
    env: { PATH: process.env.PATH },
    logFile,
  });
  return { process: started, logFile, port: (server) => servedPort(started, logFile, server) };
}

/** The chart's env: literal values, and the downward API's fields from `fields`. */
function podEnv(pod: PodRuntime, fields: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { name, value, valueFrom } of pod.env) {
    const path = valueFrom?.fieldRef?.fieldPath;
    const resolved = value ?? (path !== undefined ? fields[path] : undefined);
    if (resolved === undefined)
      throw new Error(`env ${name}: no value for it here (${JSON.stringify(valueFrom)})`);
    env[name] = resolved;
  }
  return env;
}

/** A bind mount made read-only (a bind takes the flag only on a remount). */
function readOnlyBind(source: string, target: string): string[] {
  return [`mount --bind ${q(source)} ${target}`, `mount -o remount,bind,ro ${target}`];
}

/** Single-quoted for sh. */
function q(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
