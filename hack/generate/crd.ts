// Builds a CustomResourceDefinition from a kind file of api/v1alpha3.
import { inlineRefs, type CommonSource, type KindSource, type Schema } from "./schema.ts";

export const group = "configbutler.ai";
export const version = "v1alpha3";
export const category = "gitops-reverser";

const readyColumns = [
  {
    name: "Ready",
    type: "string",
    jsonPath: '.status.conditions[?(@.type=="Ready")].status',
    description: "Whether the object is Ready.",
  },
  {
    name: "Reason",
    type: "string",
    jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
    description: "Why it is, or is not, Ready.",
  },
  { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
];

export function buildCrd(source: KindSource, common: CommonSource): Schema {
  const body = inlineRefs(source.schema, common.definitions) as Schema;
  const properties = (body.properties ?? {}) as Schema;
  const openAPIV3Schema = {
    ...body,
    type: "object",
    required: ["spec"],
    properties: {
      apiVersion: {
        type: "string",
        description: `The versioned schema of this representation of an object: ${group}/${version}.`,
      },
      kind: { type: "string", description: `The kind of this object: ${source.kind}.` },
      metadata: { type: "object" },
      ...properties,
    },
  };
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${source.plural}.${group}` },
    spec: {
      group,
      names: {
        kind: source.kind,
        listKind: `${source.kind}List`,
        plural: source.plural,
        singular: source.singular,
        shortNames: source.shortNames,
        categories: [category],
      },
      scope: source.scope,
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [...source.printerColumns, ...readyColumns],
          schema: { openAPIV3Schema },
        },
      ],
    },
  };
}
