// resource_condition reports the kstatus trio of a configuration object, with the status and
// reason each condition holds, and nothing else of its conditions.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { conditionSamples, unresolvedSample } from "../../../controllers/metrics.ts";

describe("resource_condition", () => {
  it("reports Ready, Reconciling and Stalled as 1 on their status and reason, and no other condition", () => {
    const condition = (type: string, status: "True" | "False", reason: string) => ({
      type,
      status,
      reason,
      message: "",
      lastTransitionTime: "2026-12-03T00:00:00Z",
    });
    const samples = conditionSamples("GitTarget", {
      metadata: { namespace: "team", name: "apps" },
      status: {
        conditions: [
          condition("Ready", "False", "GitPathRefused"),
          condition("Stalled", "True", "GitPathRefused"),
          condition("Reconciling", "False", "Stalled"),
          condition("GitPathAccepted", "False", "UnsupportedContent"),
        ],
      },
    });
    assert.deepEqual(
      samples.map(([labels, value]) => `${labels.condition}=${labels.status}/${labels.reason}:${value}`),
      ["Ready=False/GitPathRefused:1", "Stalled=True/GitPathRefused:1", "Reconciling=False/Stalled:1"],
    );
    assert.deepEqual(samples[0]![0], {
      resource_kind: "GitTarget",
      resource_namespace: "team",
      resource_name: "apps",
      condition: "Ready",
      status: "False",
      reason: "GitPathRefused",
    });
  });

  it("apply_operations_unresolved reads 1 only while a claim's status.operation is Unresolved", () => {
    const claim = (phase?: "Running" | "Unresolved" | "Succeeded") => ({
      metadata: { namespace: "team", name: "apps" },
      ...(phase ? { status: { operation: { phase } } } : {}),
    });
    const labels = { claim_kind: "FluxClaim", claim_namespace: "team", claim_name: "apps" };
    assert.deepEqual(unresolvedSample("FluxClaim", claim("Unresolved")), [labels, 1]);
    assert.deepEqual(unresolvedSample("FluxClaim", claim("Running")), [labels, 0]);
    assert.deepEqual(unresolvedSample("FluxClaim", claim()), [labels, 0]);
  });
});
