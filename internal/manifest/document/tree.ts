// What the writer's modules share: the file tree they work on, and how a document is named in
// Git: by identity rather than by path, so an object is edited wherever its document lives, even
// at a path a human chose. Any FileTree will do, so every rule can be tested in memory.
import type { KubernetesObject } from "@kubernetes/client-node";
import { identityKey } from "../../types/identity.ts";

export interface FileTree {
  list(folder: string): Promise<string[]>;
  read(path: string): Promise<string | undefined>;
  write(path: string, content: string): Promise<void>;
  remove(path: string): Promise<void>;
}

export function groupOf(apiVersion: string | undefined): string {
  const slash = apiVersion?.indexOf("/") ?? -1;
  return slash < 0 ? "" : apiVersion!.slice(0, slash);
}

/** The identity key of an object as Git holds it. */
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
