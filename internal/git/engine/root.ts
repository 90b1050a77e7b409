// Where a publication cycle's commits start, and whether the remote still shows it when the push
// goes out. Read from one ref advertisement, so the check and the decision agree. Pure, so every
// rule is pinned by a test; the clone reads the advertisement and acts on the answer.

/** The refs a remote advertises, by full name, and the branch its HEAD names. */
export interface Advertisement {
  refs: ReadonlyMap<string, string>;
  /** Such as refs/heads/main; undefined when HEAD names nothing the remote carries. */
  head?: string;
}

/**
 * Where a fetch finds the write branch: its tip; while the branch does not exist, its parent's
 * tip (the push then creates the branch); or nothing, in an empty repository.
 */
export type FetchedRoot =
  { from: "branch"; commit: string } | { from: "parent"; parent: string; commit: string } | { from: "empty" };

/**
 * What the worktree's local commits sit on: where the fetch found the branch, or, on a branch
 * pushed to a review ref (GitBranch spec.push.refspec), the worker's last review push on top of
 * it (`base`: the fetched branch it was made on, which is what every check compares, since the
 * review ref is never fetched and the branch is never written).
 */
export type Root = FetchedRoot | { from: "review"; commit: string; base: FetchedRoot };

/** The commit a root names: the branch's or its parent's tip, or the last review push; none for an empty repository. */
export const rootCommit = (root: Root | undefined) =>
  root && root.from !== "empty" ? root.commit : undefined;

/** Where the fetched branch was when a root was made: the root itself, unless it is a review push's. */
export const fetchedRoot = (root: Root): FetchedRoot => (root.from === "review" ? root.base : root);

/**
 * Where the next commits sit once `commit` is pushed from `root`: the branch's new tip; or, when
 * the push went to a review ref and left the branch where it was, that push on the same base.
 */
export const pushedRoot = (root: Root, commit: string, review: boolean): Root =>
  review ? { from: "review", commit, base: fetchedRoot(root) } : { from: "branch", commit };

/** The parent a missing write branch starts from does not exist (yet): parent recovery. */
export class ParentMissingError extends Error {}

const heads = "refs/heads/";

/** Where a write branch starts, from one advertisement; throws ParentMissingError when it cannot. */
export function rootFrom(advertisement: Advertisement, branch: string, parentBranch?: string): FetchedRoot {
  const tip = advertisement.refs.get(`${heads}${branch}`);
  if (tip) return { from: "branch", commit: tip };
  if (parentBranch !== undefined) {
    const parentTip = advertisement.refs.get(`${heads}${parentBranch}`);
    if (!parentTip)
      throw new ParentMissingError(`the parent branch ${parentBranch} does not exist on the remote`);
    return { from: "parent", parent: parentBranch, commit: parentTip };
  }
  const defaultTip = advertisement.head && advertisement.refs.get(advertisement.head);
  if (advertisement.head?.startsWith(heads) && defaultTip) {
    return { from: "parent", parent: advertisement.head.slice(heads.length), commit: defaultTip };
  }
  if ([...advertisement.refs.keys()].some((ref) => ref.startsWith(heads))) {
    // Branches exist but HEAD names none of them: starting empty would push an orphan beside them.
    throw new ParentMissingError("the remote's default branch does not resolve to a commit");
  }
  return { from: "empty" };
}

/**
 * Whether the remote still shows the root a cycle planned on: the write branch at its commit,
 * or, while the branch is absent, the parent at its commit; an empty repository still empty. A
 * branch somebody else created meanwhile is a moved remote too. A review push's root holds while
 * the branch it was made on does.
 */
export function rootHolds(advertisement: Advertisement, branch: string, root: Root): boolean {
  const tip = advertisement.refs.get(`${heads}${branch}`);
  switch (root.from) {
    case "review":
      // The review ref is the host's (a magic ref, or a merge request's): the fetched branch is checked.
      return rootHolds(advertisement, branch, root.base);
    case "branch":
      return tip === root.commit;
    case "parent":
      return tip === undefined && advertisement.refs.get(`${heads}${root.parent}`) === root.commit;
    case "empty":
      return ![...advertisement.refs.keys()].some((ref) => ref.startsWith(heads));
  }
}
