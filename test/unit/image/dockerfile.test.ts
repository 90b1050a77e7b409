import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { attachmentFile, parseDockerfile, planFinalStage } from "../../../hack/image/dockerfile.ts";
import { repoRoot } from "../../support/binaries.ts";

const baseEnv = { PATH: "/usr/bin:/bin" };

describe("the Dockerfile, read for an image built without a container engine", () => {
  it("the final stage of ours runs node dist/operator.mjs as 65532, with a passwd entry made before USER", () => {
    const plan = planFinalStage(parseDockerfile(readFileSync(join(repoRoot, "Dockerfile"), "utf8")), baseEnv);
    assert.equal(plan.from, "node:24-slim");
    assert.equal(plan.user, "65532:65532");
    assert.deepEqual(plan.entrypoint, ["node", "dist/operator.mjs"]);
    assert.equal(plan.workdir, "/app");
    assert.equal(plan.env.HOME, "/home/nonroot");
    const runs = plan.steps.flatMap((step) => ("run" in step ? [step.run] : []));
    assert.ok(
      runs.some((run) => /useradd --uid 65532/.test(run)),
      "a passwd entry for the uid it runs as",
    );
    const outputs = { bundleDir: "/b", kustomize: "/k/kustomize" };
    assert.deepEqual(
      plan.attachments.map((a) => [a.target, attachmentFile(a, outputs)]),
      [
        ["/usr/local/bin/kustomize", "/k/kustomize"],
        ["/app/dist/operator.mjs", "/b/operator.mjs"],
        ["/app/dist/kargo-observer.mjs", "/b/kargo-observer.mjs"],
      ],
    );
  });

  it("joins continued lines, drops comments, and keeps each step's ENV and WORKDIR as they were then", () => {
    const text = [
      "FROM golang:1 AS tools",
      "RUN make",
      "FROM node:24-slim",
      "# a comment",
      "RUN apt-get update \\",
      "  # a comment inside",
      "  && apt-get install -y git",
      "ENV A=1 B=two",
      "WORKDIR /app",
      "RUN echo $A",
      "COPY --from=tools /out/kustomize /usr/local/bin/kustomize",
      'ENTRYPOINT ["node", "x.mjs"]',
    ].join("\n");
    const stages = parseDockerfile(text);
    assert.deepEqual(
      stages.map((s) => [s.from, s.name]),
      [
        ["golang:1", "tools"],
        ["node:24-slim", undefined],
      ],
    );
    const plan = planFinalStage(stages, baseEnv);
    assert.deepEqual(plan.steps[0], {
      run: "apt-get update && apt-get install -y git",
      env: baseEnv,
      workdir: "/",
      user: "root",
    });
    assert.deepEqual(plan.steps[2], {
      run: "echo $A",
      env: { ...baseEnv, A: "1", B: "two" },
      workdir: "/app",
      user: "root",
    });
    assert.deepEqual(attachmentFile(plan.attachments[0]!, { bundleDir: "/b", kustomize: "/k" }), {
      unknown: "COPY --from=tools /out/kustomize: hack/image/dockerfile.ts does not know that stage's file",
    });
  });

  it("refuses what it does not understand instead of building something else", () => {
    const refused = (line: string) => () =>
      planFinalStage(parseDockerfile(`FROM node:24-slim\n${line}\n`), baseEnv);
    assert.throws(refused("HEALTHCHECK CMD true"), /HEALTHCHECK in the final stage/);
    assert.throws(refused("COPY src/ /app/"), /only COPY --from/);
    assert.throws(refused("ENV PATH=$PATH:/x"), /variables are not understood/);
    assert.throws(refused('RUN ["true"]'), /only the shell form/);
  });
});
