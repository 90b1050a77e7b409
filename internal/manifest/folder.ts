// The documents of a GitTarget's folder, found by identity rather than by path, so an object is
// edited wherever its document lives, even at a path a human chose. Works on any FileTree, so
// every rule here can be tested on an in-memory tree.
import { parseAllDocuments } from "yaml";
import type { KubernetesObject } from "@kubernetes/client-node";
import { toStableYaml } from "../sanitize/stableyaml.ts";

export interface FileTree {
  list(folder: string): Promise<string[]>;
  read(path: string): Promise<string | undefined>;
  write(path: string, content: string): Promise<void>;
  remove(path: string): Promise<void>;
}

/** An object's identity in Git: API group, kind, namespace and name; never the version. */
export function identityKey(group: string, kind: string, namespace: string, name: string): string {
  return `${group}/${kind}/${namespace}/${name}`;
}

export function groupOf(apiVersion: string | undefined): string {
  const slash = apiVersion?.indexOf("/") ?? -1;
  return slash < 0 ? "" : apiVersion!.slice(0, slash);
}

export function identityOfObject(object: KubernetesObject): string {
  return identityKey(
    groupOf(object.apiVersion),
    object.kind ?? "",
    object.metadata?.namespace ?? "",
    object.metadata?.name ?? "",
  );
}

export interface DocumentLocation {
  path: string;
  /** The document's position in a multi-document file. */
  index: number;
}

/** Files a folder may hold that are not manifests, and so are never read as documents. */
const notManifests = new Set([
  "README.md",
  ".gittargetignore",
  ".sops.yaml",
  "kustomization.yaml",
  "kustomization.yml",
]);

const isManifest = (path: string) =>
  /\.ya?ml$/.test(path) && !notManifests.has(path.slice(path.lastIndexOf("/") + 1));

/** Every Kubernetes document under `folder`, by identity. */
export async function scanFolder(tree: FileTree, folder: string): Promise<Map<string, DocumentLocation>> {
  const inventory = new Map<string, DocumentLocation>();
  for (const path of (await tree.list(folder === "." ? "" : folder)).filter(isManifest).sort()) {
    const documents = parseAllDocuments((await tree.read(path)) ?? "");
    documents.forEach((doc, index) => {
      const object = doc.toJS() as KubernetesObject | null;
      if (object?.kind && object.metadata?.name) inventory.set(identityOfObject(object), { path, index });
    });
  }
  return inventory;
}

function renderDocuments(documents: string[]): string {
  return documents.map((d) => (d.endsWith("\n") ? d : `${d}\n`)).join("---\n");
}

async function documentsAt(tree: FileTree, path: string): Promise<string[]> {
  return parseAllDocuments((await tree.read(path)) ?? "").map((doc) => doc.toString());
}

/** Where an upsert wrote, and whether it created the document or changed the file at all. */
export interface UpsertResult {
  path: string;
  created: boolean;
  changed: boolean;
}

/**
 * Writes `object` where its document lives, replacing that document alone and keeping its
 * siblings; a new object is written at `newPath`. A file whose bytes would not change is not
 * written, and the result says so.
 */
export async function upsertDocument(
  tree: FileTree,
  inventory: Map<string, DocumentLocation>,
  object: KubernetesObject,
  newPath: string,
): Promise<UpsertResult> {
  const key = identityOfObject(object);
  const location = inventory.get(key);
  if (!location) {
    await tree.write(newPath, toStableYaml(object));
    inventory.set(key, { path: newPath, index: 0 });
    return { path: newPath, created: true, changed: true };
  }
  const before = (await tree.read(location.path)) ?? "";
  const documents = parseAllDocuments(before).map((doc) => doc.toString());
  documents[location.index] = toStableYaml(object);
  const after = renderDocuments(documents);
  if (after !== before) await tree.write(location.path, after);
  return { path: location.path, created: false, changed: after !== before };
}

/** Removes the object's document, and its file once no document is left. Returns the path, if any. */
export async function deleteDocument(
  tree: FileTree,
  inventory: Map<string, DocumentLocation>,
  key: string,
): Promise<string | undefined> {
  const location = inventory.get(key);
  if (!location) return undefined;
  const documents = await documentsAt(tree, location.path);
  documents.splice(location.index, 1);
  inventory.delete(key);
  for (const other of inventory.values()) {
    if (other.path === location.path && other.index > location.index) other.index--;
  }
  if (documents.length === 0) await tree.remove(location.path);
  else await tree.write(location.path, renderDocuments(documents));
  return location.path;
}
