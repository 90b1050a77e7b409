import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Controller, type ReconcileContext, type Request } from "../../../internal/operator/controller.ts";
import { recordingLogger } from "../../support/logger.ts";
import { eventually } from "../../support/wait.ts";

describe("each reconcile logs as itself", () => {
  it("a failing reconcile's error line names the controller, the object and a reconcile id unique to that reconcile", async () => {
    const logger = recordingLogger();
    const seen: { request: Request; context: ReconcileContext }[] = [];
    const controller = new Controller(
      "widgets",
      {
        reconcile: (request, context) => {
          seen.push({ request, context });
          context.logger.info("looked at it");
          return request.name === "broken" ? Promise.reject(new Error("it broke")) : Promise.resolve();
        },
      },
      logger,
    );
    controller.queue.add("team-a/fine");
    controller.queue.add("team-a/broken");
    const running = controller.run();
    try {
      await eventually(() => logger.lines.some((l) => l.level === "error"), {
        description: "the failed reconcile's error line",
      });
    } finally {
      await controller.stop();
      await running;
    }

    const failed = logger.lines.find((l) => l.level === "error")!;
    const broken = seen.find((s) => s.request.name === "broken")!;
    assert.equal(failed.message, "reconcile failed; retrying with backoff");
    assert.equal(failed.meta.controller, "widgets");
    assert.equal(failed.meta.object, "team-a/broken");
    assert.equal(failed.meta.error, "it broke");
    assert.equal(failed.meta.reconcileID, broken.context.reconcileID);

    // The reconciler's own lines carry the same fields, and the two reconciles differ.
    const fine = seen.find((s) => s.request.name === "fine")!;
    assert.notEqual(fine.context.reconcileID, broken.context.reconcileID);
    const own = logger.lines.filter((l) => l.message === "looked at it");
    assert.ok(
      own.some((l) => l.meta.object === "team-a/fine" && l.meta.reconcileID === fine.context.reconcileID),
    );
    assert.ok(own.every((l) => l.meta.controller === "widgets"));
    // Each reconcile's start is logged at debug, never at info.
    assert.ok(
      logger.lines.some(
        (l) => l.level === "debug" && l.message === "reconciling" && l.meta.object === "team-a/fine",
      ),
    );
    assert.ok(!logger.lines.some((l) => l.level === "info" && l.message === "reconciling"));
  });
});
