import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { writtenKinds } from "../../../generated/v1alpha3/written.ts";
import { fieldPaths, missingFields, type FieldSchema } from "../../../internal/operator/crdcheck.ts";

const status: FieldSchema = {
  type: "object",
  properties: {
    heldBy: { type: "string" },
    conditions: { type: "array", items: { type: "object", properties: { type: { type: "string" } } } },
    operation: { type: "object", properties: { phase: { type: "string" } } },
  },
};

describe("the start-up check of the served CRDs", () => {
  it("names every field by its path, arrays by their items", () => {
    assert.deepEqual(fieldPaths(status, "status"), [
      "status",
      "status.heldBy",
      "status.conditions",
      "status.conditions[]",
      "status.conditions[].type",
      "status.operation",
      "status.operation.phase",
    ]);
  });

  it("finds what an older schema lacks, and nothing a schema keeping unknown fields would keep", () => {
    const written = fieldPaths(status, "status");
    assert.deepEqual(missingFields(status, written), []);
    const older: FieldSchema = { type: "object", properties: { conditions: status.properties!.conditions! } };
    assert.deepEqual(missingFields(older, written), [
      "status.heldBy",
      "status.operation",
      "status.operation.phase",
    ]);
    const open: FieldSchema = { type: "object", "x-kubernetes-preserve-unknown-fields": true };
    assert.deepEqual(missingFields(open, written), []);
    assert.deepEqual(missingFields(undefined, ["status.heldBy"]), ["status.heldBy"]);
  });

  it("this version writes GitBranch's status.heldBy and a claim's status.operation, and names their manifests", () => {
    const kind = (crd: string) => writtenKinds.find((k) => k.crd === crd)!;
    assert.ok(kind("gitbranches.configbutler.ai").fields.includes("status.heldBy"));
    assert.equal(
      kind("gitbranches.configbutler.ai").manifest,
      "config/crd/bases/configbutler.ai_gitbranches.yaml",
    );
    assert.ok(kind("fluxclaims.configbutler.ai").fields.includes("status.operation"));
    assert.ok(kind("webhookclaims.configbutler.ai").fields.includes("status.operation"));
    assert.equal(writtenKinds.length, 11);
  });
});
