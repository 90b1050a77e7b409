import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  componentRefs,
  conditionsOf,
  inlineRefs,
  overlay,
  type KindSource,
} from "../../../hack/generate/schema.ts";
import { clientName } from "../../../hack/generate/typescript.ts";

const definitions = {
  Name: { type: "string", minLength: 1, description: "a name" },
  Ref: {
    type: "object",
    required: ["name"],
    properties: { name: { $ref: "#/definitions/Name" } },
    "x-kubernetes-validations": [{ rule: "size(self.name) < 10", message: "short" }],
  },
};

describe("inlineRefs", () => {
  it("replaces references, nested ones included, with the schema they name", () => {
    assert.deepEqual(inlineRefs({ properties: { ref: { $ref: "#/definitions/Ref" } } }, definitions), {
      properties: {
        ref: {
          type: "object",
          required: ["name"],
          properties: { name: { type: "string", minLength: 1, description: "a name" } },
          "x-kubernetes-validations": [{ rule: "size(self.name) < 10", message: "short" }],
        },
      },
    });
  });

  it("lets the keys beside a reference describe, extend and constrain it", () => {
    const inlined = inlineRefs(
      {
        $ref: "#/definitions/Ref",
        description: "the target",
        properties: { namespace: { type: "string" } },
        "x-kubernetes-validations": [{ rule: "self == oldSelf", message: "immutable" }],
      },
      definitions,
    ) as Record<string, unknown>;
    assert.equal(inlined.description, "the target");
    assert.deepEqual(Object.keys(inlined.properties as object), ["name", "namespace"]);
    assert.deepEqual(
      (inlined["x-kubernetes-validations"] as { message: string }[]).map((v) => v.message),
      ["short", "immutable"],
    );
  });

  it("refuses unknown, foreign and circular references", () => {
    assert.throws(
      () => inlineRefs({ $ref: "#/definitions/Missing" }, definitions),
      /unknown definition: Missing/,
    );
    assert.throws(() => inlineRefs({ $ref: "other.yaml#/X" }, definitions), /only #\/definitions\/<Name>/);
    const loop = {
      A: { properties: { b: { $ref: "#/definitions/B" } } },
      B: { items: { $ref: "#/definitions/A" } },
    };
    assert.throws(() => inlineRefs({ $ref: "#/definitions/A" }, loop), /circular \$ref: A -> B -> A/);
  });
});

describe("overlay", () => {
  it("adds required fields and replaces plain keys", () => {
    assert.deepEqual(overlay({ required: ["a"], default: 1 }, { required: ["b"], default: 2 }), {
      required: ["a", "b"],
      default: 2,
    });
  });
});

describe("componentRefs", () => {
  it("keeps a described reference as a named type, and inlines one that adds properties", () => {
    assert.deepEqual(componentRefs({ $ref: "#/definitions/Name", description: "x" }, definitions), {
      $ref: "#/components/schemas/Name",
    });
    const extended = componentRefs(
      { $ref: "#/definitions/Ref", properties: { extra: { type: "integer" } } },
      definitions,
    ) as { properties: Record<string, unknown> };
    assert.deepEqual(extended.properties.name, { $ref: "#/components/schemas/Name" });
    assert.deepEqual(extended.properties.extra, { type: "integer" });
  });
});

describe("conditionsOf", () => {
  const source = {
    kind: "Thing",
    conditions: { include: ["Shared"], types: { Own: "own" }, reasons: { Mine: "mine" } },
  } as unknown as KindSource;
  const common = {
    definitions: {},
    conditionSets: { Shared: { types: { Shared: "shared" }, reasons: { Common: "common" } } },
  };

  it("puts kstatus's Ready, Reconciling and Stalled first, then included sets, then the kind's own", () => {
    const { types, reasons } = conditionsOf(source, common);
    assert.deepEqual(Object.keys(types), ["Ready", "Reconciling", "Stalled", "Shared", "Own"]);
    assert.deepEqual(Object.keys(reasons), ["Common", "Mine"]);
  });

  it("refuses an unknown condition set", () => {
    assert.throws(() => conditionsOf(source, { definitions: {} }), /unknown condition set: Shared/);
  });
});

describe("clientName", () => {
  it("camel-cases the plural the way the kind is cased", () => {
    assert.equal(clientName({ kind: "GitBranch", plural: "gitbranches" }), "gitBranches");
    assert.equal(clientName({ kind: "ArgoCDClaim", plural: "argocdclaims" }), "argoCDClaims");
    assert.throws(
      () => clientName({ kind: "Mouse", plural: "mice" }),
      /does not start with the lower-cased kind/,
    );
  });
});
