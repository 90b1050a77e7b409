// The branch claim: which GitBranch holds a repository branch. One branch worker writes a
// repository branch, with one credential, so of several GitBranches for the same one exactly
// one may hold it. The claim lives in the operator's memory and is decided again after a
// restart, from the same rules:
//
// 1. A GitBranch becomes a candidate once its credential opens a receive-pack session on the
//    remote. One that cannot claims nothing, so creating it first blocks nobody.
// 2. Among the candidates for one repository branch, the oldest by creationTimestamp (then UID)
//    holds it.
// 3. The holder stays a candidate through a later credential or network failure, so it keeps
//    the branch and its pending writes; any other candidate whose proof fails stops being one.

/** A repository branch: the normalized repository URL and the branch name. */
export interface BranchKey {
  repository: string;
  branch: string;
}

/** A GitBranch that proved a push session. */
export interface Candidate {
  uid: string;
  namespace: string;
  name: string;
  /** RFC 3339, as metadata.creationTimestamp. */
  createdAt: string;
}

export function branchKeyString(key: BranchKey): string {
  return `${key.repository}#${key.branch}`;
}

/** Orders candidates oldest first: creationTimestamp, then UID, so every replica agrees. */
export function compareCandidates(a: Candidate, b: Candidate): number {
  const byTime = Date.parse(a.createdAt) - Date.parse(b.createdAt);
  if (byTime !== 0 && !Number.isNaN(byTime)) return byTime;
  return a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0;
}

/** Rule 2: the oldest candidate holds the branch. */
export function holderOf(candidates: readonly Candidate[]): Candidate | undefined {
  return [...candidates].sort(compareCandidates)[0];
}

/** Rule 3: after `uid`'s proof failed, the holder stays a candidate and any other stops. */
export function candidatesAfterFailure(candidates: readonly Candidate[], uid: string): Candidate[] {
  const holder = holderOf(candidates);
  return holder?.uid === uid ? [...candidates] : candidates.filter((c) => c.uid !== uid);
}

/** Told the candidates of a repository branch whose holder changed, so they can report it. */
export type HolderChanged = (key: BranchKey, candidates: readonly Candidate[]) => void;

/**
 * The claims of one operator process. A GitBranch is a candidate for at most one key: its
 * GitProvider may be recreated against another repository, which moves it.
 */
export class BranchClaims {
  private readonly entries = new Map<string, { key: BranchKey; candidate: Candidate }>();
  private readonly listeners: HolderChanged[] = [];

  onHolderChanged(listener: HolderChanged): void {
    this.listeners.push(listener);
  }

  /** The GitBranch holding `key`, if any does. */
  holder(key: BranchKey): Candidate | undefined {
    return holderOf(this.candidates(key));
  }

  candidates(key: BranchKey): Candidate[] {
    const wanted = branchKeyString(key);
    return [...this.entries.values()]
      .filter((e) => branchKeyString(e.key) === wanted)
      .map((e) => e.candidate);
  }

  /** Rule 1: `candidate` proved a push session for `key`. */
  proved(key: BranchKey, candidate: Candidate): void {
    this.change([key, this.entries.get(candidate.uid)?.key], () =>
      this.entries.set(candidate.uid, { key, candidate }),
    );
  }

  /** Rule 3: `uid`'s proof for `key` failed. */
  failed(key: BranchKey, uid: string): void {
    const remaining = candidatesAfterFailure(this.candidates(key), uid);
    if (remaining.some((c) => c.uid === uid)) return;
    this.withdraw(uid);
  }

  /** The GitBranch is gone, being deleted, or no longer admitted: it claims nothing. */
  withdraw(uid: string): void {
    const entry = this.entries.get(uid);
    if (!entry) return;
    this.change([entry.key], () => this.entries.delete(uid));
  }

  /** Withdraws whatever candidate has this name, for an object that vanished unseen. */
  withdrawByName(namespace: string, name: string): void {
    for (const { candidate } of [...this.entries.values()]) {
      if (candidate.namespace === namespace && candidate.name === name) this.withdraw(candidate.uid);
    }
  }

  /** Runs `mutate`, then tells the listeners about every key in `keys` whose holder changed. */
  private change(keys: (BranchKey | undefined)[], mutate: () => void): void {
    const touched = keys.filter((k): k is BranchKey => k !== undefined);
    const before = touched.map((k) => this.holder(k)?.uid);
    mutate();
    touched.forEach((key, i) => {
      if (this.holder(key)?.uid === before[i]) return;
      const candidates = this.candidates(key);
      for (const listener of this.listeners) listener(key, candidates);
    });
  }
}
