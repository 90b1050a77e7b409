// Where a new object's document goes: the first rung that applies of declared policy
// (spec.placement), the folder's one kustomize root, and the built-in layout. Sensitivity never
// chooses the rung; it only decides how the chosen path may be written: encrypted, in a file of
// its own. When the chosen path cannot honour that, the object is refused rather than written.
import type { ResourceIdentity } from "../../types/identity.ts";
import { builtInPath } from "./builtin.ts";
import { renderTemplate, typeKey } from "./template.ts";

export type PlacementSource = "Declared" | "KustomizeRoot" | "BuiltIn";

export interface PlacementPolicy {
  byType?: Record<string, string>;
  default?: string;
}

/** The object to place: its identity, and whether it is written only encrypted. */
export interface NewObject extends Omit<ResourceIdentity, "uid"> {
  sensitive: boolean;
}

export interface FolderShape {
  /** Repository-relative spec.path; "." for the repository root. */
  targetPath: string;
  /** Repository-relative paths of the kustomization files inside the target path. */
  kustomizations: string[];
  /** Repository-relative paths of the files in the folder now, to detect a shared file. */
  existingFiles: Pick<ReadonlySet<string>, "has">;
}

export type Placement =
  | {
      path: string;
      source: PlacementSource;
      append: boolean;
      kustomization?: { path: string; entry: string };
    }
  | { refused: true; source: PlacementSource; reason: "shared_file"; message: string };

/** Where a new object's document goes: pure. `append` is true when `path` is an existing file the document is added to. */
export function placeNew(
  object: NewObject,
  policy: PlacementPolicy | undefined,
  folder: FolderShape,
): Placement {
  const template =
    policy?.byType?.[typeKey(object.group, object.version, object.resource)] ?? policy?.default;
  if (template !== undefined) {
    const rendered = renderTemplate(template, object);
    const path = joinPath(folder.targetPath, object.sensitive ? encryptedName(rendered) : rendered);
    return intoPath(path, "Declared", object, folder);
  }
  const beside = besideKustomization(object, folder);
  if (beside) return beside;
  return intoPath(builtInPath(folder.targetPath, object, object.sensitive), "BuiltIn", object, folder);
}

// A new file beside the folder's only kustomization, named after the object so it rarely clashes;
// when both names are taken the rung declines rather than add to a file a person named.
function besideKustomization(object: NewObject, folder: FolderShape): Placement | undefined {
  const [kustomization, ...others] = folder.kustomizations;
  if (kustomization === undefined || others.length > 0) return undefined;
  const directory = directoryOf(kustomization);
  const suffix = `${object.kind.toLowerCase()}${object.sensitive ? ".sops.yaml" : ".yaml"}`;
  const names = [
    `${object.name}-${suffix}`,
    `${object.namespace === "" ? "_cluster" : object.namespace}-${object.name}-${suffix}`,
  ];
  const entry = names.find((name) => !folder.existingFiles.has(joinPath(directory, name)));
  if (entry === undefined) return undefined;
  return {
    path: joinPath(directory, entry),
    source: "KustomizeRoot",
    append: false,
    kustomization: { path: kustomization, entry },
  };
}

// A path another document already holds is shared: only plaintext may join plaintext there.
function intoPath(path: string, source: PlacementSource, object: NewObject, folder: FolderShape): Placement {
  if (!folder.existingFiles.has(path)) return { path, source, append: false };
  const refuse = (message: string): Placement => ({ refused: true, source, reason: "shared_file", message });
  if (object.sensitive) {
    return refuse(
      `${path} already holds a document; a sensitive resource is written only to a file of its own`,
    );
  }
  if (isEncryptedName(path)) {
    return refuse(`${path} is an encrypted file; a plaintext document is never mixed into it`);
  }
  if (folder.kustomizations.includes(path)) {
    return refuse(`${path} is a kustomization; a resource document is never added to it`);
  }
  return { path, source, append: true };
}

// A template names the file for plaintext; the encrypted copy keeps the name and marks the
// format, which is how SOPS-aware appliers and .sops.yaml creation rules recognise it.
function encryptedName(path: string): string {
  return isEncryptedName(path) ? path : path.replace(/\.ya?ml$/, ".sops.yaml");
}

function isEncryptedName(path: string): boolean {
  return /\.sops\.ya?ml$/.test(path);
}

function joinPath(directory: string, relative: string): string {
  return directory === "." ? relative : `${directory}/${relative}`;
}

function directoryOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? "." : path.slice(0, slash);
}
