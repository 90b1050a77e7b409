// One kustomization's structure, and the features in it the operator cannot write through: each
// makes kustomize emit objects whose names or contents no file in the folder spells out, so an
// object from the cluster could not be traced back to the document that should hold it.
import { parse } from "yaml";

/** A kustomization's structure, as far as placement and edit-through need it. */
export interface KustomizationFacts {
  /** The resources: (and deprecated bases:) entries as written. */
  resources: string[];
  images: { index: number; name: string; newName?: string; newTag?: string; digest?: string }[];
  replicas: { index: number; name: string; count: number }[];
  /** Path-based patches: read-only build context, never written. */
  patchPaths: string[];
  /** Those of them with a target selector, whose content alone says what kind of patch they are. */
  targetedPatchPaths: string[];
  /** `namespace:`: set on every namespaced resource it builds, overriding their own. */
  namespace?: string;
}

/** A feature of a kustomization that makes its folder unmanageable, and where it is. */
export interface KustomizationProblem {
  feature: string;
  detail?: string;
}

type Entry = Record<string, unknown>;

// Keys whose use alone refuses the folder. `vars` is replacements' deprecated predecessor.
const refusedKeys = [
  "secretGenerator",
  "components",
  "helmCharts",
  "helmGlobals",
  "replacements",
  "vars",
  "transformers",
  "generators",
  "namePrefix",
  "nameSuffix",
];

/** The facts and the problems of a kustomization, from its parsed root map. */
export function analyseKustomization(root: Entry): {
  facts: KustomizationFacts;
  problems: KustomizationProblem[];
} {
  const facts: KustomizationFacts = {
    resources: [],
    images: [],
    replicas: [],
    patchPaths: [],
    targetedPatchPaths: [],
  };
  const problems: KustomizationProblem[] = [];
  const problem = (feature: string, detail?: string) =>
    problems.push(detail ? { feature, detail } : { feature });
  const list = (key: string): unknown[] => {
    const value = root[key] ?? [];
    if (Array.isArray(value)) return value;
    problem(`malformed ${key} entry`, "not a list");
    return [];
  };

  const { apiVersion, kind } = root;
  if (
    (apiVersion ?? supportedApiVersion) !== supportedApiVersion ||
    (kind ?? "Kustomization") !== "Kustomization"
  ) {
    problem("unsupported kustomization kind", `${describe(kind)} in ${describe(apiVersion)}`);
  }
  for (const key of refusedKeys.filter((key) => isPresent(root[key]))) problem(key);
  // kustomize ignores an empty namespace: the documents keep their own.
  if (typeof root.namespace === "string" && root.namespace !== "") facts.namespace = root.namespace;
  for (const key of ["resources", "bases"]) {
    list(key).forEach((entry, index) => {
      if (typeof entry !== "string") problem("malformed resources entry", `${key} entry ${index}`);
      else if (isRemote(entry)) problem("remote base", entry);
      else facts.resources.push(entry);
    });
  }

  // generatorOptions applies to every generator, and kustomize lets no entry turn the hash back on.
  const hashOffForAll =
    isRecord(root.generatorOptions) && root.generatorOptions.disableNameSuffixHash === true;
  list("configMapGenerator").forEach((entry, index) => {
    const { options, behavior } = isRecord(entry) ? entry : {};
    if (!hashOffForAll && !(isRecord(options) && options.disableNameSuffixHash === true)) {
      problem("configMapGenerator with a hash suffix", `entry ${index}`);
    }
    if (behavior === "merge" || behavior === "replace")
      problem("merging configMapGenerator", `entry ${index}`);
  });

  list("patches").forEach((entry, index) => {
    const { patch, target, path, options } = isRecord(entry) ? entry : {};
    const where = `patches entry ${index}`;
    if (renames(options)) problem("patch that renames", where);
    // As in kustomize, the content decides the kind of patch, never the presence of a target.
    if (typeof patch === "string" && path === undefined)
      problem(isJson6902(parseInline(patch)) ? "JSON6902 patch" : "inline patch", where);
    else if (typeof path === "string" && patch === undefined) {
      // A patch file is read-only build context; a JSON6902 op list in it is refused where the
      // file itself is read, and acceptance refuses a targeted file it cannot read.
      facts.patchPaths.push(path);
      if (target !== undefined) facts.targetedPatchPaths.push(path);
    } else problem("malformed patches entry", `entry ${index}`);
  });
  list("patchesStrategicMerge").forEach((entry, index) => {
    if (typeof entry === "string" && !looksInline(entry)) facts.patchPaths.push(entry);
    else problem("inline patch", `patchesStrategicMerge entry ${index}`);
  });
  if (list("patchesJson6902").length > 0) problem("JSON6902 patch", "patchesJson6902");

  list("images").forEach((entry, index) => {
    const image = imageOf(entry);
    if (image) facts.images.push({ index, ...image });
    else problem("malformed images entry", `entry ${index}`);
  });
  list("replicas").forEach((entry, index) => {
    const { name, count } = isRecord(entry) ? entry : {};
    if (typeof name === "string" && typeof count === "number" && Number.isInteger(count) && count >= 0) {
      facts.replicas.push({ index, name, count });
    } else problem("malformed replicas entry", `entry ${index}`);
  });
  return { facts, problems };
}

const supportedApiVersion = "kustomize.config.k8s.io/v1beta1";

const describe = (value: unknown) =>
  typeof value === "string" ? value : (JSON.stringify(value) ?? "nothing");

function isRecord(value: unknown): value is Entry {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// An empty value (`namePrefix: ""`, `components: []`) changes nothing kustomize emits.
function isPresent(value: unknown): boolean {
  if (value === undefined || value === null || value === "") return false;
  if (Array.isArray(value)) return value.length > 0;
  return !isRecord(value) || Object.keys(value).length > 0;
}

// The forms kustomize fetches over the network; the operator could not edit what they hold.
function isRemote(entry: string): boolean {
  return (
    entry.includes("://") ||
    entry.startsWith("github.com/") ||
    entry.startsWith("git@") ||
    entry.includes("?ref=")
  );
}

// kustomize reads a patchesStrategicMerge string as a patch itself when it is not a file name;
// a path never spans lines or holds a YAML mapping.
function looksInline(entry: string): boolean {
  return /[\n{]|: /.test(entry);
}

/**
 * Whether a patch's content is a JSON6902 op list, as kustomize decides it: a YAML or JSON list
 * of operations. Anything else kustomize reads as a strategic-merge patch, or fails to build.
 */
export function isJson6902(content: unknown): boolean {
  return (
    Array.isArray(content) &&
    content.length > 0 &&
    content.every((op) => isRecord(op) && typeof op.op === "string" && typeof op.path === "string")
  );
}

// An inline patch kustomize cannot parse fails the build; only its kind matters here.
function parseInline(patch: string): unknown {
  try {
    return parse(patch);
  } catch {
    return undefined;
  }
}

// These options let a patch change the name or kind of what it patches, so the object kustomize
// emits is one no file in the folder names.
function renames(options: unknown): boolean {
  return isRecord(options) && (options.allowNameChange === true || options.allowKindChange === true);
}

const imageFields = ["newName", "newTag", "digest"] as const;

type Image = Omit<KustomizationFacts["images"][number], "index">;

function imageOf(entry: unknown): Image | undefined {
  if (!isRecord(entry) || typeof entry.name !== "string") return undefined;
  const image: Image = { name: entry.name };
  for (const field of imageFields) {
    const value = entry[field];
    if (typeof value === "string") image[field] = value;
    else if (value !== undefined) return undefined;
  }
  return imageFields.some((field) => field in image) ? image : undefined;
}
