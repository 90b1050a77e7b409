// What the acceptance gate needs to know about one file, from that file alone: a folder may hold
// 10,000 documents, so the caller caches these facts and recomputes them only when the file
// changes, and the folder-level decision never re-parses anything.
import { codePointName, unreadableRaw } from "../../sanitize/yamlstrings.ts";
import { isMap, isScalar, parseAllDocuments, visit, type Document } from "yaml";
import { groupOf } from "../document/tree.ts";
import { identityKey } from "../../types/identity.ts";
import { analyseKustomization, isJson6902, type KustomizationFacts } from "./kustomizationfacts.ts";
import { hasToken, tokenPaths } from "../document/rendermeasure.ts";
import { contentDigest } from "../../sanitize/digest.ts";
import { sealedFactsOf, type SealedFacts } from "../document/sealed.ts";

export type FileRole = "manifest" | "kustomization" | "auxiliary";

/** One Kubernetes document of a manifest file. Saved across restarts: see SavedInventory's version. */
export interface DocumentFacts {
  /** The document's position in the multi-document file, empty documents counted. */
  index: number;
  apiVersion: string;
  kind: string;
  /** "" when the document names none. */
  namespace: string;
  name: string;
  key: string;
  /** metadata.labels as written, string values only: what a collection's selector is evaluated on. */
  labels: Record<string, string>;
  /** Some string holds a Flux postBuild substitution token; `$${VAR}` is an escaped literal. */
  hasTokens: boolean;
  /** The content digest of the document's value: a live object with the same digest changes nothing. */
  digest: string;
  /** A SOPS document: its recipients, and what the operator encrypted into it (sealed.ts). */
  sealed?: SealedFacts;
}

/** Something in one file that makes the folder unmanageable. */
export interface Finding {
  path: string;
  feature: string;
  /** A sentence that names the file and the feature and says what clears it. */
  message: string;
  /** The same in a few words, for a list of several findings. */
  summary: string;
}

export interface FileFacts {
  path: string;
  role: FileRole;
  documents: DocumentFacts[];
  kustomization?: KustomizationFacts;
  findings: Finding[];
  /**
   * A character Go's YAML readers refuse stands raw in the file (written by an earlier version,
   * or by hand): which, and where. The writer rewrites the file whole at its next write of it.
   */
  unreadable?: string;
}

// kustomize looks for exactly these names in a directory.
const kustomizationNames = new Set(["kustomization.yaml", "kustomization.yml", "Kustomization"]);

// Non-KRM YAML a folder holds by design: SOPS finds its rules by this name, and the operator
// writes the file itself. Kept small on purpose: a file on this list is never checked, so any
// other non-KRM YAML is refused rather than guessed to be harmless.
const auxiliaryNames = new Set([".sops.yaml"]);

const baseName = (path: string) => path.slice(path.lastIndexOf("/") + 1);

/** Whether kustomize would read this file as its directory's kustomization. */
export function isKustomizationPath(path: string): boolean {
  return kustomizationNames.has(baseName(path));
}

/**
 * The entries a file builds from: a kustomization's `resources:` and `bases:` as written,
 * relative to its directory; none for any other file, which is not read. The clone checks them
 * out with the folder (CloneOptions.buildsFrom): the Git engine knows no kustomize.
 */
export function kustomizationReferences(path: string, read: () => string): readonly string[] {
  return isKustomizationPath(path) ? (fileFacts(path, read()).kustomization?.resources ?? []) : [];
}

/** Whether the folder scan reads this file at all (a .yaml/.yml file, or a `Kustomization`). */
export function isYamlPath(path: string): boolean {
  return /\.ya?ml$/.test(path) || baseName(path) === "Kustomization";
}

/**
 * Facts of one file from its path and content: pure, no I/O. `parsed` is the content as yaml's
 * parseAllDocuments reads it, when the caller has just read it so (an edit's check).
 */
export function fileFacts(path: string, content: string, parsed?: Document.Parsed[]): FileFacts {
  const name = baseName(path);
  if (auxiliaryNames.has(name)) return { path, role: "auxiliary", documents: [], findings: [] };
  const role = kustomizationNames.has(name) ? "kustomization" : "manifest";
  const documents = parsed ?? parseAllDocuments(content);
  const error = documents.flatMap((doc) => doc.errors)[0];
  if (error) return { path, role, documents: [], findings: [invalidYaml(path, error.message)] };
  try {
    if (role === "kustomization") return kustomizationFileFacts(path, documents);
    const facts = manifestFacts(path, documents);
    const raw = unreadableRaw(content);
    return raw ? { ...facts, unreadable: `${codePointName(raw.codePoint)} raw on line ${raw.line}` } : facts;
  } catch (thrown) {
    // toJS throws on what the parser lets through: an unresolved alias, an alias bomb.
    return { path, role, documents: [], findings: [invalidYaml(path, String(thrown))] };
  }
}

/**
 * Facts of a manifest file the writer has just rendered from `objects`, one document each: what
 * fileFacts would read from it, without parsing the text again.
 */
export function renderedFacts(path: string, objects: readonly unknown[]): FileFacts {
  const documents = objects.map((object, index): DocumentFacts => {
    const identity = identityOf(object);
    if (!identity) throw new Error(`a rendered document of ${path} is not a Kubernetes object`);
    const key = identityKey(groupOf(identity.apiVersion), identity.kind, identity.namespace, identity.name);
    return {
      index,
      ...identity,
      key,
      hasTokens: tokenPaths(object).length > 0,
      digest: contentDigest(object),
    };
  });
  return { path, role: "manifest", documents, findings: [] };
}

function manifestFacts(path: string, documents: Document.Parsed[]): FileFacts {
  const facts: DocumentFacts[] = [];
  const findings: Finding[] = [];
  documents.forEach((doc, index) => {
    if (isEmpty(doc)) return;
    const value: unknown = doc.toJS();
    const identity = identityOf(value);
    if (!identity) {
      const feature = isJson6902(value) ? "JSON6902 patch" : "non-KRM document";
      findings.push(finding(path, feature, `document ${index}`));
      return;
    }
    const { apiVersion, kind, namespace, name } = identity;
    const key = identityKey(groupOf(apiVersion), kind, namespace, name);
    const sealed = sealedFactsOf(value);
    facts.push({
      index,
      ...identity,
      key,
      hasTokens: hasTokens(doc),
      digest: contentDigest(value),
      ...(sealed ? { sealed } : {}),
    });
  });
  return { path, role: "manifest", documents: facts, findings };
}

function kustomizationFileFacts(path: string, documents: Document.Parsed[]): FileFacts {
  const nonEmpty = documents.filter((doc) => !isEmpty(doc));
  const base = { path, role: "kustomization" as const, documents: [] };
  const [doc] = nonEmpty;
  if (nonEmpty.length > 1 || (doc && !isMap(doc.contents))) {
    return { ...base, findings: [finding(path, "invalid kustomization")] };
  }
  // An empty kustomization builds nothing, so there is nothing in it to refuse.
  const root = doc ? (doc.toJS() as Record<string, unknown>) : {};
  const { facts, problems } = analyseKustomization(root);
  const findings = problems.map((problem) => finding(path, problem.feature, problem.detail));
  return { ...base, kustomization: facts, findings };
}

// A trailing `---` or a comment-only document yields a null document, which no tool applies.
function isEmpty(doc: Document.Parsed): boolean {
  return doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null);
}

type Identity = Pick<DocumentFacts, "apiVersion" | "kind" | "namespace" | "name" | "labels">;

function identityOf(value: unknown): Identity | undefined {
  if (!isRecord(value) || !isRecord(value.metadata)) return undefined;
  const { apiVersion, kind } = value;
  const { name } = value.metadata;
  const namespace = value.metadata.namespace ?? "";
  const valid = isText(apiVersion) && isText(kind) && isText(name) && typeof namespace === "string";
  return valid ? { apiVersion, kind, namespace, name, labels: labelsOf(value.metadata.labels) } : undefined;
}

const isText = (value: unknown): value is string => typeof value === "string" && value !== "";

function labelsOf(value: unknown): Record<string, string> {
  if (!isRecord(value)) return {};
  return Object.fromEntries(
    Object.entries(value).filter((e): e is [string, string] => typeof e[1] === "string"),
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function hasTokens(doc: Document.Parsed): boolean {
  let found = false;
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value !== "string") return undefined;
      found = hasToken(node.value);
      return found ? visit.BREAK : undefined;
    },
  });
  return found;
}

// What clears each finding, so whoever reads the condition knows the fix; anything not listed
// is cleared by removing it.
const remedies: Record<string, string> = {
  "invalid YAML": "fix the YAML (or, if the file is not a Kubernetes manifest, list it in .gittargetignore)",
  "non-KRM document":
    "give it apiVersion, kind and metadata.name, or remove it (or, if the file is not a Kubernetes manifest, list it in .gittargetignore)",
  "invalid kustomization": "make it a single YAML map",
  "unsupported kustomization kind": "make it apiVersion kustomize.config.k8s.io/v1beta1, kind Kustomization",
  "configMapGenerator with a hash suffix":
    "set options.disableNameSuffixHash: true on every configMapGenerator entry",
  "merging configMapGenerator": "remove behavior: merge or replace from the configMapGenerator entry",
  "inline patch": "move the strategic-merge patch into a file of its own and list it under patches: by path",
  "JSON6902 patch": "rewrite it as a strategic-merge patch file and list it under patches: by path",
  "patch that renames": "remove options.allowNameChange and options.allowKindChange from the patches entry",
  "unreadable targeted patch":
    "keep the patch file inside the folder, as YAML, and out of .gittargetignore, so the operator can tell a strategic-merge patch from a JSON6902 one",
  "remote base": "copy the base into the repository and refer to it by relative path",
  "malformed images entry":
    "give it a string name and at least one of newName, newTag or digest, all strings",
  "malformed replicas entry": "give it a string name and a non-negative integer count",
  "duplicate identity": "keep the object in one document only",
  "namespace-less document":
    "set metadata.namespace in it, or a namespace: in the kustomization that lists it, so the operator knows which object it describes",
};

/** A finding in `path`, with a message that names the file and the feature and says what clears it. */
export function finding(path: string, feature: string, detail?: string): Finding {
  const where = detail === undefined ? "" : ` (${detail})`;
  const remedy = remedies[feature] ?? "remove it";
  return {
    path,
    feature,
    message: `${path} has ${feature}${where}, which the operator cannot manage safely; ${remedy} to let the operator write this folder`,
    summary: `${path} has ${feature}${where}: ${remedy}`,
  };
}

function invalidYaml(path: string, message: string): Finding {
  // The parser's first line reads "<what> at line N, column M:", then a code excerpt.
  return finding(path, "invalid YAML", message.split("\n")[0]?.replace(/:$/, ""));
}
