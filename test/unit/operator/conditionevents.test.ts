import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { ConditionEvents, type KnownCondition } from "../../../internal/operator/conditionevents.ts";
import type { Condition } from "../../../internal/operator/conditions.ts";
import { gitBranchEventRules } from "../../../internal/gitbranch/events.ts";
import { gitTargetEventRules } from "../../../internal/gittarget/events.ts";
import { outcomeEvent } from "../../../internal/commitrequest/outcome.ts";

const c = (type: string, status: KnownCondition["status"], reason = "Succeeded", message = "m") => ({
  type,
  status,
  reason,
  message,
});

/** Feeds each status in turn to one object, and returns the Events as "type reason". */
async function eventsOf(
  rules: typeof gitTargetEventRules,
  statuses: KnownCondition[][],
  stored: Condition[] = [],
): Promise<string[]> {
  const recorded: string[] = [];
  const events = new ConditionEvents(
    { record: (_o, type, reason) => Promise.resolve(void recorded.push(`${type} ${reason}`)) },
    rules,
  );
  const object: KubernetesObject & { status: { conditions: Condition[] } } = {
    metadata: { uid: "u1", namespace: "team-a", name: "apps" },
    status: { conditions: stored },
  };
  for (const status of statuses) await events.observe("team-a/apps", object, status);
  return recorded;
}

describe("Events on condition transitions", () => {
  it("a folder refused is one Warning however many reconciles say so, and accepted again is one Normal", async () => {
    const refused = c("GitPathAccepted", "False", "UnsupportedContent", "kustomize patches");
    assert.deepEqual(
      await eventsOf(gitTargetEventRules, [
        [c("GitPathAccepted", "True")],
        [refused],
        [refused],
        [c("GitPathAccepted", "Unknown", "GitBranchNotReady")],
        [refused],
        [c("GitPathAccepted", "True")],
        [c("GitPathAccepted", "True")],
      ]),
      ["Warning UnsupportedContent", "Normal GitPathAccepted"],
    );
  });

  it("a target's first acceptance is no Event: only acceptance after a refusal is", async () => {
    assert.deepEqual(
      await eventsOf(gitTargetEventRules, [
        [c("GitPathAccepted", "Unknown", "GitBranchNotReady")],
        [c("GitPathAccepted", "True")],
      ]),
      [],
    );
  });

  it("encryption refused is one Warning per transition, not one per refused Secret", async () => {
    assert.deepEqual(
      await eventsOf(gitTargetEventRules, [
        [c("EncryptionConfigured", "False", "EncryptionNotConfigured", "refused: secrets team-a/one")],
        [c("EncryptionConfigured", "False", "EncryptionNotConfigured", "refused: secrets team-a/one, two")],
        [c("EncryptionConfigured", "True")],
      ]),
      ["Warning EncryptionNotConfigured", "Normal EncryptionConfigured"],
    );
  });

  it("a push failing is a Warning when it starts and when what fails changes, and PushRecovered when Ready again", async () => {
    const down = c("Ready", "False", "RemoteUnreachable", "since 10:00");
    assert.deepEqual(
      await eventsOf(gitBranchEventRules, [
        [c("Ready", "True")],
        [down],
        [{ ...down, message: "since 10:00, 3 writes kept" }],
        [c("Ready", "False", "LocalWriteFailed")],
        [c("Ready", "Unknown", "Progressing")],
        [c("Ready", "True")],
        [c("Ready", "True")],
      ]),
      ["Warning RemoteUnreachable", "Warning LocalWriteFailed", "Normal PushRecovered"],
    );
  });

  it("a push session refused while it is retried (Ready Unknown) is no Event; refused for good (Ready False) is", async () => {
    assert.deepEqual(
      await eventsOf(gitBranchEventRules, [
        [c("Ready", "Unknown", "PushSessionFailed")],
        [c("Ready", "False", "PushSessionFailed")],
        [c("Ready", "True")],
      ]),
      ["Warning PushSessionFailed", "Normal PushRecovered"],
    );
  });

  it("a durable queue lost is a Warning DurableQueueUnavailable, and kept again a Normal DurableQueueRecovered; its first True is no Event", async () => {
    assert.deepEqual(
      await eventsOf(gitBranchEventRules, [
        [c("DurableQueue", "True")],
        [c("DurableQueue", "False", "DurableQueueUnavailable", "since 10:00")],
        [c("DurableQueue", "False", "DurableQueueUnavailable", "since 10:00, still")],
        [c("DurableQueue", "True")],
      ]),
      ["Warning DurableQueueUnavailable", "Normal DurableQueueRecovered"],
    );
  });

  it("a branch claimed is a Normal BranchClaimed, and lost a Warning BranchLost", async () => {
    assert.deepEqual(
      await eventsOf(gitBranchEventRules, [
        [c("BranchClaimed", "False", "BranchConflict")],
        [c("BranchClaimed", "True")],
        [c("BranchClaimed", "True")],
        [c("BranchClaimed", "False", "BranchConflict")],
      ]),
      ["Normal BranchClaimed", "Warning BranchLost"],
    );
  });

  it("after a restart, a status that did not change records nothing", async () => {
    const stored: Condition[] = [
      { ...c("GitPathAccepted", "False", "UnsupportedContent"), lastTransitionTime: "2026-01-01T00:00:00Z" },
    ];
    assert.deepEqual(
      await eventsOf(gitTargetEventRules, [[c("GitPathAccepted", "False", "UnsupportedContent")]], stored),
      [],
    );
  });

  it("a CommitRequest committed is Normal, one refused or failed a Warning, reason the outcome", () => {
    assert.deepEqual(
      [
        outcomeEvent({ reason: "Committed", commit: "abc", branch: "main" }),
        outcomeEvent({ reason: "NotAdmitted", message: "no" }),
        outcomeEvent({ reason: "FinalizeFailed", message: "late" }),
      ].map((e) => `${e.type} ${e.reason}`),
      ["Normal Committed", "Warning NotAdmitted", "Warning FinalizeFailed"],
    );
  });
});
