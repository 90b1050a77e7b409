import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { admitsNamespace, admitsSourceNamespace, grantsAdmit } from "../../../internal/grants/namespaces.ts";
import { selectorMatches } from "../../../internal/kube/labels.ts";

describe("namespace grants", () => {
  it("Same admits the owner's namespace only, and is the default", () => {
    assert.equal(admitsNamespace({}, "team-a", "team-a", {}), true);
    assert.equal(admitsNamespace({ from: "Same" }, "team-a", "team-b", {}), false);
  });

  it("Names admits the listed namespaces, Selector the labelled ones, All every one", () => {
    assert.equal(admitsNamespace({ from: "Names", names: ["team-b"] }, "team-a", "team-b", {}), true);
    assert.equal(admitsNamespace({ from: "Names", names: ["team-b"] }, "team-a", "team-a", {}), false);
    const selector = { from: "Selector" as const, selector: { matchLabels: { tenant: "yes" } } };
    assert.equal(admitsNamespace(selector, "team-a", "x", { tenant: "yes" }), true);
    assert.equal(admitsNamespace(selector, "team-a", "x", {}), false);
    assert.equal(admitsNamespace({ from: "All" }, "team-a", "anything", {}), true);
  });

  it("omitted grants admit the owner's namespace; a written list is the whole policy; [] admits none", () => {
    assert.equal(grantsAdmit(undefined, "team-a", "team-a", {}).length, 1);
    assert.equal(grantsAdmit(undefined, "team-a", "team-b", {}).length, 0);
    assert.equal(
      grantsAdmit([{ consumerNamespaces: { from: "Names", names: ["team-b"] } }], "team-a", "team-a", {})
        .length,
      0,
    );
    assert.equal(grantsAdmit([], "team-a", "team-a", {}).length, 0);
  });

  it("a source namespace Same pairs names across clusters; only All admits every namespace", () => {
    assert.equal(admitsSourceNamespace(undefined, "team-a", "team-a"), true);
    assert.equal(admitsSourceNamespace(undefined, "team-a", "team-b"), false);
    assert.equal(admitsSourceNamespace({ from: "Names", names: ["shared"] }, "team-a", "shared"), true);
    assert.equal(admitsSourceNamespace({ from: "Names", names: ["shared"] }, "team-a", ""), false);
    assert.equal(admitsSourceNamespace({ from: "All" }, "team-a", ""), true);
  });

  it("label selectors apply every requirement", () => {
    const labels = { env: "prod", team: "a" };
    assert.equal(
      selectorMatches({ matchExpressions: [{ key: "env", operator: "In", values: ["prod"] }] }, labels),
      true,
    );
    assert.equal(
      selectorMatches({ matchExpressions: [{ key: "env", operator: "NotIn", values: ["prod"] }] }, labels),
      false,
    );
    assert.equal(selectorMatches({ matchExpressions: [{ key: "team", operator: "Exists" }] }, labels), true);
    assert.equal(
      selectorMatches({ matchExpressions: [{ key: "team", operator: "DoesNotExist" }] }, labels),
      false,
    );
    assert.equal(
      selectorMatches(
        { matchLabels: { env: "prod" }, matchExpressions: [{ key: "x", operator: "Exists" }] },
        labels,
      ),
      false,
    );
  });
});
