// Which document of the folder describes a live object: the one whose effective identity is the
// object's (identity.ts), wherever it lives and however it spells its namespace, so a folder a
// person or kustomize wrote is edited in place rather than given a second copy of an object. A
// namespace-less document that could describe objects in several namespaces is refused with the
// folder, never guessed at and never duplicated.
import { refusalMessage, type Refusal } from "./inventory/acceptance.ts";
import { finding, type Finding } from "./inventory/facts.ts";
import { groupOf } from "./document/tree.ts";
import { effectiveNamespace, namespacelessDescribes, type FollowedObjects } from "./document/identity.ts";
import type { FolderInventory, LocatedDocument } from "./inventory/inventory.ts";

/** A live object as the lookup sees it: a namespace exactly when its kind is namespaced. */
export interface LiveIdentity {
  group: string;
  kind: string;
  namespace: string;
  name: string;
}

/** The document that describes the object; or a namespace-less one that could describe several. */
export type Lookup = { found: LocatedDocument } | { ambiguous: LocatedDocument } | undefined;

/**
 * The folder's document for a live object: the one that renders in its namespace; failing
 * that, for a namespaced object, a namespace-less document when no other followed object of
 * its name could be the one it describes.
 */
export function findDocument(
  inventory: FolderInventory,
  identity: LiveIdentity,
  followed: FollowedObjects,
): Lookup {
  const { group, kind, namespace, name } = identity;
  const namespaced = namespace !== "";
  const documents = inventory.named(group, kind, name);
  const rendersIn = (doc: LocatedDocument) =>
    effectiveNamespace(doc.namespace, inventory.namespaceOverride(doc.path), namespaced);
  const found = documents.find((doc) => rendersIn(doc) === namespace);
  if (found) return { found };
  const namespaceless = namespaced ? documents.find((doc) => rendersIn(doc) === "") : undefined;
  if (!namespaceless) return undefined;
  return namespacelessDescribes(namespace, followed.namespacesOf(group, kind, name))
    ? { found: namespaceless }
    : { ambiguous: namespaceless };
}

/**
 * The namespace a sweep judges a document in: what it renders in, or for a namespace-less
 * document of a namespaced kind the one namespace its name is followed in ("" when none or
 * several, which no namespaced collection's snapshot holds).
 */
export function sweptNamespace(
  inventory: FolderInventory,
  doc: LocatedDocument,
  namespaced: boolean,
  followed: FollowedObjects,
): string {
  const rendered = effectiveNamespace(doc.namespace, inventory.namespaceOverride(doc.path), namespaced);
  if (!namespaced || rendered !== "") return rendered;
  const followedIn = [...followed.namespacesOf(groupOf(doc.apiVersion), doc.kind, doc.name)];
  return followedIn.length === 1 ? followedIn[0]! : "";
}

/**
 * The acceptance gate's verdict on the folder, with what the target follows: besides every
 * file's own problems, each namespace-less document whose name the target follows in more
 * than one namespace, since the operator cannot tell which object it describes.
 */
export function acceptFollowed(inventory: FolderInventory, followed: FollowedObjects): Refusal | undefined {
  const refusal = inventory.accept();
  const ambiguous = ambiguousDocuments(inventory, followed);
  if (ambiguous.length === 0) return refusal;
  const problems = [...(refusal?.problems ?? []), ...ambiguous];
  return { problems, message: refusalMessage(problems) };
}

// Namespaces named in a message; a name followed in a hundred would bury the fix.
const shownNamespaces = 3;

function ambiguousDocuments(inventory: FolderInventory, followed: FollowedObjects): Finding[] {
  return inventory.namespaceless().flatMap((doc) => {
    const group = groupOf(doc.apiVersion);
    if (!followed.followsNamespaced(group, doc.kind)) return [];
    const namespaces = [...followed.namespacesOf(group, doc.kind, doc.name)].sort();
    if (namespaces.length < 2) return [];
    const more =
      namespaces.length > shownNamespaces ? ` and ${namespaces.length - shownNamespaces} more` : "";
    const where = `${namespaces.slice(0, shownNamespaces).join(", ")}${more}`;
    return [
      finding(
        doc.path,
        "namespace-less document",
        `document ${doc.index}, ${doc.kind} ${doc.name}, which the target follows in ${where}`,
      ),
    ];
  });
}
