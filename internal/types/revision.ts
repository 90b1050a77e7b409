// Ordering two resourceVersions. They are opaque to clients in general, but every API server
// backed by etcd serves etcd's revision, a decimal integer, so two of those compare as integers
// (of any length, past a double's range); one that is not an integer cannot be ordered, and each
// caller says what that means for it.

const revision = /^[0-9]+$/;

/** Whether `rv` is a later etcd revision than `than`; never, when either is not a revision. */
export function laterRevision(rv: string | undefined, than: string | undefined): boolean {
  return rv !== undefined && than !== undefined && orderable(rv, than) && BigInt(rv) > BigInt(than);
}

/** Whether both are etcd revisions, which compare as integers. */
export function orderable(rv: string | undefined, than: string | undefined): boolean {
  return rv !== undefined && than !== undefined && revision.test(rv) && revision.test(than);
}
