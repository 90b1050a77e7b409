// Who a commit names: a Git signature, and the author a live change is committed under. Shared
// by attribution (which resolves them), the watch stream (which carries them) and the Git engine
// (which writes them), so they live below all three.

/** A Git identity: a commit's author or committer. */
export interface Signature {
  name: string;
  email: string;
}

/**
 * Who made a live change, as attribution resolved it: the actor, or the unresolved sentinel.
 * Absent when attribution is off: the commit is then the operator's own.
 */
export interface Author {
  name: string;
  email: string;
  /** What the actor is, as git_commits_total{author_kind} counts it: none when unresolved. */
  kind: "user" | "serviceaccount" | "none";
  /** The actor's Kubernetes username, which a CommitRequest's author is matched by; none when unresolved. */
  username?: string;
}
