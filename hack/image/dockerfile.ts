// The operator's image as the Dockerfile describes it, read without a container engine: these
// machines have no Docker daemon and no registry to pull node:24-slim from, so hack/image/rootfs.ts
// builds the same final stage as a root filesystem and the tests run the operator in it, as the
// uid the chart runs it as. Reading the Dockerfile itself (not a copy of its steps) keeps the two
// from drifting: an instruction this reader does not know is refused, never skipped.
import { join } from "node:path";

/** One instruction of a stage: its keyword (upper case) and the rest of its line, joined. */
export interface Instruction {
  keyword: string;
  rest: string;
}

export interface Stage {
  /** The image it starts from: `node:24-slim`, say. */
  from: string;
  /** Its `AS` name, if any. */
  name?: string;
  instructions: Instruction[];
}

/** The Dockerfile's stages, in order; continuation lines joined, comments and blank lines left out. */
export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  for (const line of logicalLines(text)) {
    const match = /^(\S+)\s*(.*)$/.exec(line)!;
    const keyword = match[1]!.toUpperCase();
    const rest = match[2]!.trim();
    if (keyword === "FROM") {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest);
      if (!from) throw new Error(`FROM ${rest}: expected an image and an optional AS name`);
      stages.push({ from: from[1]!, ...(from[2] ? { name: from[2] } : {}), instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`${keyword} before the first FROM`);
    stage.instructions.push({ keyword, rest });
  }
  if (stages.length === 0) throw new Error("the Dockerfile has no FROM");
  return stages;
}

/** Lines as Docker reads them: a trailing backslash continues the line; comments go. */
function logicalLines(text: string): string[] {
  const lines: string[] = [];
  let pending = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (pending === "" && (line === "" || line.startsWith("#"))) continue;
    // A comment line inside a continued instruction is dropped, as Docker drops it.
    if (pending !== "" && line.startsWith("#")) continue;
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1).trim()} `;
      continue;
    }
    lines.push(`${pending}${line}`.trim());
    pending = "";
  }
  if (pending.trim() !== "") lines.push(pending.trim());
  return lines;
}

/** A file the final stage copies from an earlier stage, which the tests provide themselves. */
export interface Attachment {
  stage: string;
  source: string;
  /** Its path in the image. */
  target: string;
}

/** What the final stage makes of its base: each step, in order, and the process it runs. */
export interface ImagePlan {
  from: string;
  steps: Step[];
  env: Record<string, string>;
  workdir: string;
  user: string;
  entrypoint: string[];
  attachments: Attachment[];
}

export type Step =
  | { run: string; env: Record<string, string>; workdir: string; user: string }
  | { mkdir: string }
  | { attach: Attachment };

/**
 * The plan of the Dockerfile's last stage on top of `baseEnv` (the base image's own ENV). Only
 * what our Dockerfile uses is understood: RUN (shell form), ENV key=value, WORKDIR, COPY
 * --from=<stage>, USER and ENTRYPOINT (exec form); anything else is an error naming it.
 */
export function planFinalStage(stages: Stage[], baseEnv: Record<string, string>): ImagePlan {
  const final = stages.at(-1)!;
  const plan: ImagePlan = {
    from: final.from,
    steps: [],
    env: { ...baseEnv },
    workdir: "/",
    user: "root",
    entrypoint: [],
    attachments: [],
  };
  for (const { keyword, rest } of final.instructions) {
    switch (keyword) {
      case "RUN":
        if (rest.startsWith("[")) throw new Error(`RUN ${rest}: only the shell form is understood`);
        plan.steps.push({ run: rest, env: { ...plan.env }, workdir: plan.workdir, user: plan.user });
        break;
      case "ENV":
        for (const [key, value] of envPairs(rest)) plan.env[key] = value;
        break;
      case "WORKDIR":
        plan.workdir = rest.startsWith("/") ? rest : join(plan.workdir, rest);
        plan.steps.push({ mkdir: plan.workdir });
        break;
      case "COPY": {
        const attachment = copied(rest, plan.workdir);
        plan.attachments.push(attachment);
        plan.steps.push({ attach: attachment });
        break;
      }
      case "USER":
        plan.user = rest;
        break;
      case "ENTRYPOINT":
        plan.entrypoint = JSON.parse(rest) as string[];
        break;
      default:
        throw new Error(`${keyword} in the final stage: hack/image/dockerfile.ts does not understand it yet`);
    }
  }
  return plan;
}

/** `ENV a=b c=d`: no quoting, no variable expansion (refused rather than guessed). */
function envPairs(rest: string): [string, string][] {
  if (rest.includes("$") || rest.includes('"') || rest.includes("'"))
    throw new Error(`ENV ${rest}: quoting and variables are not understood`);
  return rest.split(/\s+/).map((pair) => {
    const at = pair.indexOf("=");
    if (at <= 0) throw new Error(`ENV ${rest}: only the key=value form is understood`);
    return [pair.slice(0, at), pair.slice(at + 1)];
  });
}

/** `COPY --from=<stage> <source> <target>`: one file from an earlier stage. */
function copied(rest: string, workdir: string): Attachment {
  const match = /^--from=(\S+)\s+(\S+)\s+(\S+)$/.exec(rest);
  if (!match) throw new Error(`COPY ${rest}: only COPY --from=<stage> <file> <path> is understood`);
  const [, stage, source, to] = match as unknown as [string, string, string, string];
  const absolute = to.startsWith("/") ? to : join(workdir, to);
  const target = to.endsWith("/") ? join(absolute, source.split("/").at(-1)!) : absolute;
  return { stage, source, target };
}

/** Where the tests find what an earlier stage would have made: the bundle, kustomize. */
export interface StageOutputs {
  /** The directory `node hack/bundle.ts <dir>/operator.mjs` wrote (the build stage's /src/dist). */
  bundleDir: string;
  /** The pinned kustomize (the kustomize stage's /out/kustomize). */
  kustomize: string;
}

/** The local file an attachment is, or why there is none. */
export function attachmentFile(attachment: Attachment, outputs: StageOutputs): string | { unknown: string } {
  const { stage, source } = attachment;
  if (stage === "build" && source.startsWith("/src/dist/"))
    return join(outputs.bundleDir, source.slice("/src/dist/".length));
  if (stage === "kustomize" && source === "/out/kustomize") return outputs.kustomize;
  return {
    unknown: `COPY --from=${stage} ${source}: hack/image/dockerfile.ts does not know that stage's file`,
  };
}
