import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { applierManagers, judgeWrite, tieNote, tieOf } from "../../../../internal/applier/decide/window.ts";
import type { FieldsEntry } from "../../../../internal/types/applied.ts";

const flux = applierManagers.Flux;
const at = (s: number) => new Date(Date.UTC(2026, 11, 2, 10, 0, s)).toISOString();
const entry = (manager: string, second: number, subresource?: string): FieldsEntry => ({
  manager,
  time: at(second),
  ...(subresource ? { subresource } : {}),
});
const send = new Date(at(10));

describe("the apply window", () => {
  it("the apply itself is not mirrored: the applier's managers alone, after the send, on an object nobody edited", () => {
    assert.equal(
      judgeWrite([entry("kubectl", 1), entry("kustomize-controller", 12)], {
        managers: flux,
        earliestSend: send,
      }),
      "echo",
    );
  });

  it("a late apply over a newer API edit is withheld", () => {
    const facts = { managers: flux, earliestSend: send, editedAt: new Date(at(11)) };
    assert.equal(judgeWrite([entry("alice", 11), entry("kustomize-controller", 13)], facts), "withheld");
  });

  it("an applier entry alone in the same second as the edit is withheld: the edit came first", () => {
    const facts = { managers: flux, earliestSend: send, editedAt: new Date(at(12)) };
    assert.equal(judgeWrite([entry("alice", 11), entry("kustomize-controller", 12)], facts), "withheld");
  });

  it("a tie of the applier and another manager is mirrored, as ambiguous", () => {
    const facts = { managers: flux, earliestSend: send, editedAt: new Date(at(12)) };
    assert.equal(judgeWrite([entry("alice", 12), entry("kustomize-controller", 12)], facts), "ambiguous");
  });

  it("an applier entry older than the edit is the API's undo, mirrored as an edit", () => {
    const facts = { managers: flux, earliestSend: send, editedAt: new Date(at(14)) };
    assert.equal(judgeWrite([entry("kustomize-controller", 12)], facts), "edit");
  });

  it("an applier entry older than the send, on an object nobody edited, is an edit", () => {
    assert.equal(
      judgeWrite([entry("kustomize-controller", 5)], { managers: flux, earliestSend: send }),
      "edit",
    );
  });

  it("an applier write with no window open is late, and mirrored", () => {
    assert.equal(judgeWrite([entry("kustomize-controller", 12)], { managers: flux }), "late");
  });

  it("anybody else's write is an edit, and status writes say nothing of who wrote the content", () => {
    const entries = [entry("alice", 12), entry("kustomize-controller", 20, "status")];
    assert.equal(judgeWrite(entries, { managers: flux, earliestSend: send }), "edit");
  });

  it("Argo CD's late write over a newer edit is withheld by its own managers", () => {
    const facts = { managers: applierManagers.ArgoCD, earliestSend: send, editedAt: new Date(at(11)) };
    assert.equal(judgeWrite([entry("argocd-application-controller", 13)], facts), "withheld");
  });
});

describe("the apply window, with the writer the watch's order proved", () => {
  const facts = { managers: flux, earliestSend: send, editedAt: new Date(at(12)) };

  it("the applier's write in the same second as the edit is withheld, not a tie", () => {
    const entries = [entry("alice", 12), entry("kustomize-controller", 12)];
    assert.equal(judgeWrite(entries, { ...facts, writer: "kustomize-controller" }), "withheld");
  });

  it("a live edit in the same second as the applier's write is an edit", () => {
    const entries = [entry("alice", 12), entry("kustomize-controller", 12)];
    assert.equal(judgeWrite(entries, { ...facts, writer: "alice" }), "edit");
  });

  it("the applier's own write on an object nobody edited is its echo; with no window open it is late", () => {
    const entries = [entry("alice", 3), entry("kustomize-controller", 12)];
    assert.equal(
      judgeWrite(entries, { managers: flux, earliestSend: send, writer: "kustomize-controller" }),
      "echo",
    );
    assert.equal(judgeWrite(entries, { managers: flux, writer: "kustomize-controller" }), "late");
  });

  it("a tie with no writer known names the second and the other manager's fields for its Warning", () => {
    const tie = tieOf(
      [{ ...entry("alice", 12), fields: ["data.mode"] }, entry("kustomize-controller", 12), entry("bob", 3)],
      flux,
    );
    assert.deepEqual(tie, {
      at: at(12),
      appliers: ["kustomize-controller"],
      others: [{ manager: "alice", fields: ["data.mode"] }],
    });
    assert.match(tieNote("v1/ConfigMap/shop/settings", tie), /alice \(data\.mode\).*same second/);
    assert.equal(tieOf([entry("kustomize-controller", 12), entry("alice", 11)], flux), undefined);
  });
});
