// The three-way rule for a GitTarget's first snapshot with an applier (docs/flux.md, "A commit
// pushed while the operator was down"). The ground rule: other authors' commits stay, and only
// where an API edit and a Git commit touch the same object does the API win. A first snapshot
// holds the cluster as the operator finds it, which for an object a commit changed while the
// operator was down is the state before that commit, unless somebody edited it live meanwhile.
// The base, the commit the applier last applied, bounds what was pushed and not applied yet: the
// commits since it that the operator did not make. A live object that still equals its document
// as it was before the first of them that changed it was not edited, so the snapshot leaves the
// document as the tip has it, and the converge at start applies the pushed commit. One that
// differs was edited on both sides: the API wins, and the operator says which commit it overrode.
import { describe, fileFacts, type FolderInventory } from "../../manifest/index.ts";
import { contentDigest } from "../../sanitize/digest.ts";
import type { ResourceIdentity } from "../../types/identity.ts";
import { identityKeyOf } from "../../types/identity.ts";
import type { KubernetesObject } from "@kubernetes/client-node";

/** A document some pushed commits changed since the base. */
export interface Pushed {
  /** Its digest before the first of them; undefined: a push added it. */
  base?: string;
  /** Its digest at the tip; undefined: the push removed it. */
  tip?: string;
  /** The pushed commits that changed its file, oldest first. */
  commits: string[];
}

/** An object whose pushed change the snapshot's live value overrode: the API won. */
export interface Overridden {
  identity: ResourceIdentity;
  commits: string[];
}

/** What the snapshot does with one object a push changed. */
export type ThreeWayVerdict =
  /** Nobody edited it live: the document stays as the tip has it. */
  | "keep_tip"
  /** Edited live too: the live value is written over the push. */
  | "api_wins"
  /** No push changed it, or the live value is what the tip holds already: decided as ever. */
  | "as_ever";

/** What one file's pushes did to each of its documents, by identity key. */
export function pushedDocuments(
  base: ReadonlyMap<string, string>,
  tip: ReadonlyMap<string, string>,
  commits: readonly string[],
): Map<string, Pushed> {
  const changed = new Map<string, Pushed>();
  for (const key of new Set([...base.keys(), ...tip.keys()])) {
    const [b, t] = [base.get(key), tip.get(key)];
    if (b === t) continue;
    changed.set(key, {
      ...(b !== undefined ? { base: b } : {}),
      ...(t !== undefined ? { tip: t } : {}),
      commits: [...commits],
    });
  }
  return changed;
}

/** The three-way verdict for a live object (`live`: its content digest) a push may have changed. */
export function threeWay(pushed: Pushed | undefined, live: string): ThreeWayVerdict {
  if (!pushed || live === pushed.tip) return "as_ever";
  return pushed.base !== undefined && live === pushed.base ? "keep_tip" : "api_wins";
}

/** What a folder's pushes since the base changed, document by document. */
export class PushedSince {
  constructor(private readonly documents: ReadonlyMap<string, Pushed>) {}

  /**
   * Reads the pushes: `pushes` are the foreign commits since the base with the files each
   * changed, oldest first. A file's documents before them are read at the parent of the first
   * push that changed it (the operator's own commits until then mirror the cluster), the tip's
   * from the inventory.
   */
  static async read(
    pushes: readonly { commit: string; paths: string[] }[],
    readAt: (commit: string, path: string) => Promise<string | undefined>,
    inventory: FolderInventory,
  ): Promise<PushedSince> {
    const commitsOf = new Map<string, string[]>();
    for (const { commit, paths } of pushes)
      for (const path of paths) commitsOf.set(path, [...(commitsOf.get(path) ?? []), commit]);
    const documents = new Map<string, Pushed>();
    const atTip = inventory.documents();
    for (const [path, commits] of commitsOf) {
      const content = await readAt(`${commits[0]}^`, path);
      const before = new Map(
        content === undefined
          ? []
          : fileFacts(path, content).documents.map((d) => [d.key, d.digest] as const),
      );
      const after = new Map(atTip.filter((d) => d.path === path).map((d) => [d.key, d.digest] as const));
      for (const [key, pushed] of pushedDocuments(before, after, commits)) documents.set(key, pushed);
    }
    return new PushedSince(documents);
  }

  /** The verdict for a snapshot's upsert of `object`; `digest` is its content digest when known. */
  upsert(identity: ResourceIdentity, object: KubernetesObject, digest?: string): ThreeWayVerdict {
    const pushed = this.documents.get(identityKeyOf(identity));
    return pushed ? threeWay(pushed, digest ?? contentDigest(object)) : "as_ever";
  }

  /** Whether a document the snapshot did not observe was added by a push: the sweep leaves it for the apply. */
  addedByPush(key: string): boolean {
    const pushed = this.documents.get(key);
    return pushed !== undefined && pushed.base === undefined;
  }

  /** The pushed commits that changed an object's document. */
  commitsOf(identity: ResourceIdentity): string[] {
    return this.documents.get(identityKeyOf(identity))?.commits ?? [];
  }
}

/**
 * What the PushedChangeOverridden Warning says: the objects, the pushed commits the snapshot's
 * `commit` wrote the live values over, and how to bring them back.
 */
export function overrideNote(objects: readonly Overridden[], commit: string): string {
  const pushed = [...new Set(objects.flatMap((o) => o.commits))].map((c) => c.slice(0, 12));
  const named = objects.map((o) => describe(o.identity));
  const more = named.length > 5 ? ` and ${named.length - 5} more` : "";
  return (
    `${named.slice(0, 5).join(", ")}${more} changed on the cluster and in Git (${pushed.join(", ")}) ` +
    `while the operator was down: the API wins, so commit ${commit.slice(0, 12)} wrote the live ` +
    `values over the pushed change. To bring it back, git revert ${commit.slice(0, 12)} and push.`
  );
}
