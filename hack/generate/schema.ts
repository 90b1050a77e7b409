// Pure functions over the OpenAPI sources in api/v1alpha3: reading a kind file, and resolving
// the `$ref: "#/definitions/X"` references a CRD cannot hold.

export type Schema = { [key: string]: unknown };

export interface ConditionSet {
  types: Record<string, string>;
  reasons: Record<string, string>;
}

export interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  description: string;
}

/** One kind file of api/v1alpha3, as authored. */
export interface KindSource {
  kind: string;
  plural: string;
  singular: string;
  scope: "Namespaced" | "Cluster";
  shortNames: string[];
  printerColumns: PrinterColumn[];
  conditions: ConditionSet & { include?: string[] };
  schema: Schema;
}

/** common.yaml: shared schemas, and condition sets several kinds include. */
export interface CommonSource {
  definitions: Record<string, Schema>;
  conditionSets?: Record<string, ConditionSet>;
}

const refPrefix = "#/definitions/";

/** The definition name a `$ref` points at. */
export function refName(ref: unknown): string {
  if (typeof ref !== "string" || !ref.startsWith(refPrefix)) {
    throw new Error(`unsupported $ref ${JSON.stringify(ref)}: only ${refPrefix}<Name> is allowed`);
  }
  return ref.slice(refPrefix.length);
}

function isSchema(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Lays a `$ref`'s sibling keys over the referenced schema. `properties` merge key by key,
 * `required` and `x-kubernetes-validations` add to what the definition has, and any other
 * sibling (a description, a default) replaces the definition's own.
 */
export function overlay(base: Schema, siblings: Schema): Schema {
  const merged: Schema = { ...base };
  for (const [key, value] of Object.entries(siblings)) {
    if (key === "properties" && isSchema(base.properties) && isSchema(value)) {
      merged.properties = { ...base.properties, ...value };
    } else if ((key === "required" || key === "x-kubernetes-validations") && Array.isArray(base[key])) {
      merged[key] = [...(base[key] as unknown[]), ...(value as unknown[])];
    } else {
      merged[key] = value;
    }
  }
  return merged;
}

/** Replaces every `$ref` with the schema it names, overlaid with the keys beside it. */
export function inlineRefs(
  schema: unknown,
  definitions: Record<string, Schema>,
  seen: string[] = [],
): unknown {
  if (Array.isArray(schema)) return schema.map((item) => inlineRefs(item, definitions, seen));
  if (!isSchema(schema)) return schema;
  if ("$ref" in schema) {
    const { $ref, ...siblings } = schema;
    const name = refName($ref);
    if (seen.includes(name)) throw new Error(`circular $ref: ${[...seen, name].join(" -> ")}`);
    const target = definitions[name];
    if (!target) throw new Error(`$ref to an unknown definition: ${name}`);
    const resolved = inlineRefs(target, definitions, [...seen, name]) as Schema;
    return inlineRefs(overlay(resolved, siblings), definitions, seen);
  }
  return Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [key, inlineRefs(value, definitions, seen)]),
  );
}

/**
 * Rewrites references for a TypeScript generator that understands OpenAPI components. A
 * `$ref` whose siblings only describe it stays a reference to a named type; one whose siblings
 * add properties or requirements is inlined, because it is a new shape.
 */
export function componentRefs(schema: unknown, definitions: Record<string, Schema>): unknown {
  if (Array.isArray(schema)) return schema.map((item) => componentRefs(item, definitions));
  if (!isSchema(schema)) return schema;
  if ("$ref" in schema) {
    const { $ref, ...siblings } = schema;
    const name = refName($ref);
    if (!definitions[name]) throw new Error(`$ref to an unknown definition: ${name}`);
    if ("properties" in siblings || "required" in siblings) {
      return componentRefs(overlay(definitions[name], siblings), definitions);
    }
    return { $ref: `#/components/schemas/${name}` };
  }
  return Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [key, componentRefs(value, definitions)]),
  );
}

/** The condition types and reasons of a kind: kstatus's trio first, then its included sets, then its own. */
export function conditionsOf(source: KindSource, common: CommonSource): ConditionSet {
  const kstatus: Record<string, string> = {
    Ready: "The object is in its desired state; its reason names the outcome.",
    Reconciling: "The controller is working towards the desired state.",
    Stalled: "Progress is blocked on something a human must fix; the message says what.",
  };
  const sets = (source.conditions.include ?? []).map((name) => {
    const set = common.conditionSets?.[name];
    if (!set) throw new Error(`${source.kind} includes an unknown condition set: ${name}`);
    return set;
  });
  return {
    types: Object.assign({}, kstatus, ...sets.map((s) => s.types), source.conditions.types ?? {}) as Record<
      string,
      string
    >,
    reasons: Object.assign({}, ...sets.map((s) => s.reasons), source.conditions.reasons ?? {}) as Record<
      string,
      string
    >,
  };
}
