// The manifest room's face: what the write path (internal/git/folder) and the kustomize judge use
// of it. The writer that edits a folder in place, the folder's inventory and its acceptance
// gate, a document's identity and location, placement, the bootstrap files, and the lookup of a
// followed object. The rooms below (yamledit/, overrides/, placement/, inventory/, document/)
// are reached through here from outside.
export { FolderWriter, describe } from "./writer.ts";
export { FolderInventory, type SavedInventory, type VersionedTree } from "./inventory/inventory.ts";
export { fileFacts, kustomizationReferences, type DocumentFacts } from "./inventory/facts.ts";
export { refusalOf, type Refusal } from "./inventory/acceptance.ts";
export { groupOf, identityOfObject, type DocumentLocation, type FileTree } from "./document/tree.ts";
export type { FollowedObjects } from "./document/identity.ts";
export { formatPath, measureRender } from "./document/rendermeasure.ts";
export type { PlacementPolicy, PlacementSource } from "./placement/ladder.ts";
export { isSensitive } from "./placement/builtin.ts";
export { acceptFollowed, sweptNamespace } from "./lookup.ts";
export { bootstrapFiles, replacesBootstrap } from "./bootstrap.ts";
