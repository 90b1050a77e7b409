// What a stream item says of the appliers (applier-claims.md): which applier applied a live
// object, who wrote it and when, and what the branch worker said when a snapshot's collection
// started. The watch side reads them from the raw object and carries them; the applier claims'
// rules (internal/applier) and the branch worker judge by them; so they live below all three.

/** The applier whose marks a live object carries: Flux's owner labels, or Argo CD's tracking id. */
export interface AppliedBy {
  kind: "Kustomization" | "Application";
  /** Undefined for an Application in Argo CD's own namespace, which its tracking id leaves out. */
  namespace?: string;
  name: string;
}

/** One managedFields entry of a live object, as the apply window judges a write by it. */
export interface FieldsEntry {
  manager?: string;
  time?: string;
  subresource?: string;
  /** The entry's field paths, only where the writer is not known: what a tie may have overwritten. */
  fields?: string[];
}

/** What the watch side read of the branch worker when a snapshot's collection started. */
export interface CollectedWhile {
  /** The apply epoch: raised at every send of an attempt and every end of one. */
  epoch: number;
  /** Whether Git was ahead of the cluster. */
  ahead: boolean;
}
