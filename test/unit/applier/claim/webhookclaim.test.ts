import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ApplyOperation, WebhookClaim } from "../../../../generated/v1alpha3/index.ts";
import type { Verdict } from "../../../../internal/applier/decide/index.ts";
import {
  decideWebhookClaim,
  holdsWebhook,
  judgeWebhookTargets,
  type WebhookClaimWorld,
} from "../../../../internal/applier/claim/index.ts";
import { refuseUrl } from "../../../../internal/applier/webhook/index.ts";

const now = new Date("2026-12-02T10:00:00Z");
const url = "https://deploy.example.com/hook/abc";
const bound: Verdict = {
  kind: "bound",
  targets: [
    { ref: { namespace: "shop", name: "web" }, uid: "u1", writes: { repository: "r", branch: "main" } },
  ],
};
const running: ApplyOperation = { phase: "Running", requestToken: "r1", commit: "abc123" };

function claim(
  facts: { deleting?: boolean; status?: WebhookClaim["status"]; url?: string } = {},
): WebhookClaim {
  return {
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "WebhookClaim",
    metadata: {
      name: "deploy",
      namespace: "shop",
      generation: 1,
      ...(facts.deleting ? { deletionTimestamp: now } : {}),
    },
    spec: { url: facts.url ?? url, secretRef: { name: "deploy-hmac" } },
    ...(facts.status ? { status: facts.status } : {}),
  };
}

function world(overrides: Partial<WebhookClaimWorld> = {}): WebhookClaimWorld {
  return { claim: claim(), now, verdict: bound, secret: { kind: "loaded" }, ...overrides };
}

const condition = (decision: ReturnType<typeof decideWebhookClaim>, type: string) =>
  decision.conditions.find((c) => c.type === type);

const withConditions = (
  conditions: [type: string, status: "True" | "False" | "Unknown", reason: string][],
) => ({
  conditions: conditions.map(([type, status, reason]) => ({
    type,
    status,
    reason,
    message: "",
    lastTransitionTime: now.toISOString(),
  })),
});

describe("WebhookClaim: who names it", () => {
  it("nothing named is notReferenced; a target whose writes are known binds; none known is pending NotBound", () => {
    assert.deepEqual(judgeWebhookTargets([]), { kind: "notReferenced" });
    const known = {
      ref: { namespace: "shop", name: "web" },
      uid: "u1",
      writes: { repository: "r", branch: "b" },
    };
    const unknown = { ref: { namespace: "shop", name: "api" }, uid: "u2" };
    assert.deepEqual(judgeWebhookTargets([known, unknown]), { kind: "bound", targets: [known] });
    const pending = judgeWebhookTargets([unknown]);
    assert.equal(pending.kind, "pending");
    assert.equal(pending.kind === "pending" && pending.reason, "NotBound");
    assert.match(pending.kind === "pending" ? pending.message : "", /shop\/api/);
  });
});

describe("WebhookClaim: Configured", () => {
  it("a claim nothing names holds nothing and is Ready", () => {
    const decision = decideWebhookClaim(world({ verdict: { kind: "notReferenced" }, secret: undefined }));
    assert.equal(decision.step.kind, "none");
    assert.equal(condition(decision, "Configured")?.status, "Unknown");
    assert.equal(condition(decision, "Configured")?.reason, "NotReferenced");
    assert.equal(condition(decision, "InControl")?.status, "False");
    assert.match(condition(decision, "InControl")!.message, /holds nothing/);
    assert.equal(condition(decision, "Ready")?.status, "True");
    assert.equal(decision.soon, false);
  });

  it("a missing Secret is Configured False SecretNotFound and holds nothing", () => {
    const secret = {
      kind: "problem" as const,
      reason: "SecretNotFound" as const,
      message: "Secret shop/deploy-hmac does not exist.",
    };
    const decision = decideWebhookClaim(world({ secret }));
    assert.equal(condition(decision, "Configured")?.status, "False");
    assert.equal(condition(decision, "Configured")?.reason, "SecretNotFound");
    assert.match(condition(decision, "Configured")!.message, /Create it .* token/);
    assert.equal(condition(decision, "InControl")?.status, "False");
    assert.equal(condition(decision, "InControl")?.reason, "SecretNotFound");
    assert.equal(condition(decision, "Stalled")?.status, "True");
    assert.equal(
      holdsWebhook(
        claim({ status: { conditions: decision.conditions.map((c) => ({ ...c, lastTransitionTime: "" })) } }),
      ),
      false,
    );
  });

  it("a Secret with no token is Configured False SecretInvalid, with what the Secret says to do", () => {
    const message =
      "Secret shop/deploy-hmac has no token: put the HMAC key the receiver checks under the key token.";
    const decision = decideWebhookClaim(
      world({ secret: { kind: "problem", reason: "SecretInvalid", message } }),
    );
    assert.equal(condition(decision, "Configured")?.reason, "SecretInvalid");
    assert.equal(condition(decision, "Configured")?.message, message);
  });

  it("plain http to a host that is not loopback is InsecureURL", () => {
    const plain = "http://deploy.example.com/hook";
    const decision = decideWebhookClaim(
      world({ claim: claim({ url: plain }), urlRefusal: refuseUrl(plain, true) }),
    );
    assert.equal(condition(decision, "Configured")?.status, "False");
    assert.equal(condition(decision, "Configured")?.reason, "InsecureURL");
    assert.match(condition(decision, "Configured")!.message, /use https/);
    assert.equal(condition(decision, "InControl")?.reason, "InsecureURL");
    assert.equal(
      decideWebhookClaim(world({ urlRefusal: refuseUrl("http://127.0.0.1:8080/", true) })).conditions[0]!
        .status,
      "True",
    );
  });

  it("a claim whose GitTargets' writes are not known yet is Configured Unknown NotBound, and looked at again soon", () => {
    const verdict: Verdict = {
      kind: "pending",
      reason: "NotBound",
      message: "No GitTarget naming this claim is eligible yet.",
    };
    const decision = decideWebhookClaim(world({ verdict }));
    assert.equal(condition(decision, "Configured")?.status, "Unknown");
    assert.equal(condition(decision, "Configured")?.reason, "NotBound");
    assert.equal(condition(decision, "InControl")?.reason, "NotBound");
    assert.equal(condition(decision, "Reconciling")?.status, "True");
    assert.equal(decision.soon, true);
  });

  it("a bound claim is Configured True, naming its GitTargets and URL and never the token", () => {
    // The Secret as loadWebhookSecret returns it: the decision is handed its key, and shows none.
    const loaded = { kind: "loaded" as const, token: "hmac-key-1", bearerToken: "bearer-1" };
    const decision = decideWebhookClaim(world({ secret: loaded }));
    const configured = condition(decision, "Configured")!;
    assert.equal(configured.status, "True");
    assert.equal(configured.reason, "Succeeded");
    assert.match(configured.message, /shop\/web/);
    assert.ok(configured.message.includes(url));
    assert.doesNotMatch(JSON.stringify(decision), /hmac-key-1|bearer-1/);
  });
});

describe("WebhookClaim: InControl", () => {
  it("a bound, configured claim is InControl Suspended, and Applying while an operation is in flight", () => {
    const idle = decideWebhookClaim(world());
    assert.equal(condition(idle, "InControl")?.status, "True");
    assert.equal(condition(idle, "InControl")?.reason, "Suspended");
    assert.equal(condition(idle, "InControl")?.message, "Nothing is applied until a branch worker asks.");
    assert.equal(condition(idle, "Ready")?.status, "True");
    assert.equal(idle.soon, false);
    const applying = decideWebhookClaim(world({ claim: claim({ status: { operation: running } }) }));
    assert.equal(condition(applying, "InControl")?.reason, "Applying");
    assert.match(condition(applying, "InControl")!.message, /abc123/);
    assert.equal(applying.operation, undefined);
    assert.equal(applying.soon, true);
    const done = decideWebhookClaim(
      world({ claim: claim({ status: { operation: { ...running, phase: "Succeeded" } } }) }),
    );
    assert.equal(condition(done, "InControl")?.reason, "Suspended");
  });

  it("an operation past its budget is InControl OperationUnresolved", () => {
    const unresolved = { ...running, phase: "Unresolved" as const };
    const decision = decideWebhookClaim(world({ claim: claim({ status: { operation: unresolved } }) }));
    assert.equal(condition(decision, "InControl")?.status, "True");
    assert.equal(condition(decision, "InControl")?.reason, "OperationUnresolved");
  });

  it("an operation nobody follows past the budget ends Failed", () => {
    for (const unfollowedMs of [0, 59_000]) {
      const left = decideWebhookClaim(
        world({ claim: claim({ status: { operation: running } }), unfollowedMs }),
      );
      assert.equal(left.operation, undefined);
      assert.equal(condition(left, "InControl")?.reason, "Applying");
    }
    const ended = decideWebhookClaim(
      world({ claim: claim({ status: { operation: running } }), unfollowedMs: 60_000 }),
    );
    assert.equal(ended.operation?.phase, "Failed");
    assert.equal(ended.operation?.requestToken, "r1");
    assert.equal(ended.operation?.completedAt, now.toISOString());
    assert.match(ended.operation?.message ?? "", /Nobody follows/);
    assert.equal(ended.event?.type, "Warning");
    assert.equal(ended.event?.reason, "OperationUnfollowed");
    assert.equal(condition(ended, "InControl")?.reason, "Suspended");
    assert.equal(ended.soon, false);
  });

  it("an unfollowed operation ends Failed even when the claim is no longer configured", () => {
    const secret = { kind: "problem" as const, reason: "SecretNotFound" as const, message: "gone" };
    const ended = decideWebhookClaim(
      world({ claim: claim({ status: { operation: running } }), secret, unfollowedMs: 60_000 }),
    );
    assert.equal(ended.operation?.phase, "Failed");
    assert.equal(condition(ended, "InControl")?.status, "False");
  });

  it("an operation somebody else recorded, with no request token, is never ended as unfollowed", () => {
    const external = { phase: "Running" as const, commit: "abc123" };
    const decision = decideWebhookClaim(
      world({ claim: claim({ status: { operation: external } }), unfollowedMs: 120_000 }),
    );
    assert.equal(decision.operation, undefined);
    assert.equal(condition(decision, "InControl")?.reason, "Applying");
  });
});

describe("WebhookClaim: Events when Configured turns", () => {
  it("turning True is a Normal Configured Event, turning False a Warning with the reason, and staying says nothing", () => {
    const fresh = decideWebhookClaim(world());
    assert.deepEqual(
      { type: fresh.event?.type, reason: fresh.event?.reason },
      { type: "Normal", reason: "Configured" },
    );
    const wasTrue = claim({ status: withConditions([["Configured", "True", "Succeeded"]]) });
    assert.equal(decideWebhookClaim(world({ claim: wasTrue })).event, undefined);
    const broke = decideWebhookClaim(
      world({ claim: wasTrue, secret: { kind: "problem", reason: "SecretInvalid", message: "no token" } }),
    );
    assert.deepEqual(
      { type: broke.event?.type, reason: broke.event?.reason },
      { type: "Warning", reason: "SecretInvalid" },
    );
    const pending: Verdict = { kind: "pending", reason: "NotBound", message: "wait" };
    assert.equal(decideWebhookClaim(world({ verdict: pending })).event, undefined);
  });
});

describe("WebhookClaim: when a branch worker may ask it to apply", () => {
  const inControl = (reason: string, deleting = false) =>
    claim({ deleting, status: withConditions([["InControl", "True", reason]]) });

  it("holdsWebhook: only InControl Suspended or Applying, and not while the claim is deleted", () => {
    assert.equal(holdsWebhook(inControl("Suspended")), true);
    assert.equal(holdsWebhook(inControl("Applying")), true);
    assert.equal(holdsWebhook(inControl("OperationUnresolved")), false);
    assert.equal(holdsWebhook(inControl("SecretNotFound")), false);
    assert.equal(holdsWebhook(inControl("Suspended", true)), false);
    assert.equal(holdsWebhook(claim()), false);
  });

  it("a claim being deleted holds nothing", () => {
    const decision = decideWebhookClaim(world({ claim: claim({ deleting: true }) }));
    assert.equal(condition(decision, "InControl")?.status, "False");
    assert.equal(decision.soon, false);
  });
});
