import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { normalizeRepositoryUrl } from "../../../internal/types/repourl.ts";
import { applierClaimCondition, type ClaimFacts } from "../../../internal/gittarget/claim.ts";

const condition = (type: string, status: string, reason: string, message = "") => ({
  type,
  status: status as "True" | "False" | "Unknown",
  reason,
  message,
  lastTransitionTime: "2026-12-02T10:00:00Z",
});

const facts = (status?: ClaimFacts["status"]): ClaimFacts => ({
  kind: "FluxClaim",
  name: "apps",
  ...(status ? { status } : {}),
  writes: { repository: normalizeRepositoryUrl("https://git.example/state"), branch: "main" },
});

const ready = {
  conditions: [condition("Configured", "True", "Succeeded"), condition("Ready", "True", "Suspended")],
  source: { kind: "GitRepository", url: "https://git.example/state.git", branch: "main" },
};

describe("ApplierClaimReady gates the GitTarget on its applier claim", () => {
  it("a claim that does not exist is ApplierClaimNotFound", () => {
    assert.equal(applierClaimCondition(facts(), 1).reason, "ApplierClaimNotFound");
  });

  it("a claim that has not observed the GitTarget yet reads Unknown", () => {
    const status = {
      conditions: [
        condition("Configured", "Unknown", "NotReferenced"),
        condition("Ready", "True", "NotReferenced"),
      ],
    };
    assert.equal(applierClaimCondition(facts(status), 1).status, "Unknown");
  });

  it("a claim that is Ready and applies this repository and branch is True", () => {
    assert.equal(applierClaimCondition(facts(ready), 1).status, "True");
  });

  it("a Ready claim whose source fetches another branch is not this target's", () => {
    const status = { ...ready, source: { ...ready.source, branch: "dev" } };
    const result = applierClaimCondition(facts(status), 1);
    assert.equal(result.status, "False");
    assert.match(result.message, /branch dev/);
  });

  it("a refused claim passes its reason on in the message", () => {
    const status = {
      conditions: [
        condition("Configured", "False", "SuspendOwnedElsewhere", "Field manager helm applies spec.suspend"),
        condition("Ready", "False", "SuspendOwnedElsewhere"),
      ],
    };
    const result = applierClaimCondition(facts(status), 1);
    assert.equal(result.reason, "ApplierClaimNotReady");
    assert.match(result.message, /helm/);
  });
});
