// Makes one decided write in the clone and commits it. The folder's inventory is brought to the
// worktree's commit first, and the acceptance gate runs on it before anything is planned: a
// folder the operator cannot manage safely is refused whole, and nothing is written. A snapshot
// also measures the folder's ${...} tokens against live, for the render-vs-live gate, and under
// prune Always sweeps what it observed absent. Every removal asks the prune mode the target has
// now, a replay's included (prune.ts).
import {
  bootstrapFiles,
  replacesBootstrap,
  type Refusal,
  type DocumentLocation,
  type FileTree,
  type FolderInventory,
  type VersionedTree,
  type PlacementSource,
  formatPath,
  measureRender,
  acceptFollowed,
  sweptNamespace,
  FolderWriter,
  describe,
  isSensitive,
} from "../../manifest/index.ts";
import type { FolderRenders } from "../../kustomize/renders.ts";
import { renderVerdict } from "../../kustomize/verdict.ts";
import { identityKeyOf, type ResourceIdentity } from "../../types/identity.ts";
import type { Clone } from "../engine/clone.ts";
import type { Signature } from "../../types/signature.ts";
import { followedObjects } from "./followed.ts";
import { pruneRemoves, sweepReaches, type CollectionView } from "./prune.ts";
import { PushedSince, type Overridden } from "./threeway.ts";
import type { MeasuredDivergence } from "./rendergate.ts";
import { absentDocument, type Change, type DecidedWrite, type PruneMode, type Replayed } from "./writes.ts";
import type { RefusedWrite } from "./refusedwrites.ts";

export interface MaterializeOptions {
  committer: Signature;
  /** resource.group names treated as sensitive besides core Secrets. */
  additionalSensitive: readonly string[];
  /** The commit message, from the write and what it changed. */
  message: (write: DecidedWrite, applied: AppliedChange[]) => string;
  /** Called for each object refused fail-safe, so it can be logged, counted and reported. */
  onRefused: (write: DecidedWrite, identity: ResourceIdentity, reason: string, message: string) => void;
  /** Called for each commit made, once it is: a write that changed nothing makes none. */
  onCommitted?: (write: DecidedWrite, commit: string) => void;
  /** Called for each sensitive document written encrypted, or proved unchanged without encrypting. */
  onEncrypted?: (write: DecidedWrite, identity: ResourceIdentity, outcome: "encrypted" | "unchanged") => void;
  /** The worker's kustomize renders, which judge a folder as it renders; none: as written. */
  renders?: FolderRenders;
  /** Called for each document a write reaches, on its first commit only (a replay decides nothing). */
  onDocument?: (write: DecidedWrite, outcome: DocumentOutcome) => void;
  /** Called when a write rewrote a file Go's YAML readers refused (a raw control character): which. */
  onHealed?: (write: DecidedWrite, identity: ResourceIdentity, healed: string) => void;
  /** Called once a first snapshot's commit wrote live values over pushed changes (threeway.ts). */
  onOverridden?: (write: DecidedWrite, overridden: Overridden[], commit: string) => void;
}

/** What became of one document a write reached. */
export type DocumentOutcome = "created" | "updated" | "healed" | "deleted" | "unchanged" | "refused";

/** One change a write made to the folder, for the commit message. */
export interface AppliedChange {
  operation: "create" | "update" | "delete";
  identity: ResourceIdentity;
  path: string;
}

/**
 * The worktree a write is made in: files, the commit it is at, and a commit of the paths it
 * touched. A clone also streams commits (send), so the next write does not wait for the last.
 */
export type WorkTree = FileTree &
  VersionedTree &
  Pick<Clone, "exists" | "commit"> &
  Partial<Pick<Clone, "send" | "settle" | "pushedSince" | "readAt">> & {
    /** Where the worktree is on disk, for kustomize to read; an in-memory tree has none. */
    readonly dir?: string;
  };

/** What a write to a folder is made by when it is made, besides the write itself. */
export interface FolderState {
  /** The target's prune mode now: a retained write may have been decided under another. */
  prune: PruneMode;
  /** The target's collections, for a sweep to leave alone what another one holds. */
  collections: readonly CollectionView[];
}

export interface MaterializeResult {
  /**
   * The new commit, when the write changed the folder and the tree committed it at once; a
   * streamed commit (WorkTree.send) is named to the inventory once it is answered.
   */
  commit?: string;
  /** The acceptance gate refused the folder: nothing was written. */
  refusal?: Refusal;
  /** The commit records a save's message and changes nothing (CommitEmpty). */
  empty?: true;
  /** A snapshot's measurement of the folder's tokens against live: empty when clean. */
  divergences?: MeasuredDivergence[];
  /** Which rung placed each new document; none on a replay. */
  placements: { identity: ResourceIdentity; source: PlacementSource }[];
  /** The actions this write decided: on a first materialization, what a replay will apply. */
  decided: Change[];
  /**
   * The objects whose change had nowhere to land, by identity key, with why: for a condition.
   * Undefined on a replay, which judges only what its first commit decided.
   */
  refusedWrites?: RefusedWrite[];
}

export async function materialize(
  tree: WorkTree,
  inventory: FolderInventory,
  write: DecidedWrite,
  options: MaterializeOptions,
  state: FolderState = { prune: write.target.prune, collections: [] },
): Promise<MaterializeResult> {
  await inventory.refresh(tree);
  const followed = followedObjects(state.collections);
  const refusal = acceptFollowed(inventory, followed);
  if (refusal) return { refusal, placements: [], decided: [] };
  const replay = write.decided !== undefined;
  // A snapshot judges the folder as kustomize renders it; any other write takes only the verdict
  // already known at this commit, so a folder kustomize cannot build stays refused for free.
  const judging = write.sweep !== undefined && !replay;
  const rendering = async (at: "commit" | "known" | "worktree") => {
    // A render at the commit is kept by the inventory's commit: the commits in flight first.
    if (at === "commit" && options.renders) await tree.settle?.();
    return renderVerdict(options.renders, tree.dir, inventory, at);
  };
  const verdict = await rendering(judging ? "commit" : "known");
  if (verdict.refusal) return { refusal: verdict.refusal, placements: [], decided: [] };

  const writer: FolderWriter = new FolderWriter(tree, inventory, {
    targetPath: write.target.path,
    placement: write.target.placement,
    additionalSensitive: options.additionalSensitive,
    encryption: write.target.encryption,
    followed,
    // Flux builds a folder with kustomize whether or not it holds a kustomization.
    kustomizeBuilt: write.target.claim?.kind === "FluxClaim",
    // Built when a read-only base document is edited: at the commit while this write has changed
    // nothing yet, of the worktree as it is otherwise.
    rendered: async () => (await rendering(writer.touched.size === 0 ? "commit" : "worktree")).objects,
  });
  const run: Run = {
    tree,
    inventory,
    write,
    options,
    state,
    followed,
    writer,
    replay,
    // A first snapshot with an applier: what was pushed since the commit last applied stays
    // where nobody edited it live (the three-way rule).
    pushed: replay ? undefined : await pushedSince(tree, inventory, write, options),
    applied: [],
    decided: [],
    placements: [],
    refusedWrites: [],
    overridden: [],
  };
  // The snapshot is measured before its own upserts change what it measures; a replay measures
  // nothing, as it decides nothing.
  const divergences = judging
    ? await measure(writer, write, verdict.objects, options.additionalSensitive)
    : undefined;
  for (const change of write.decided ?? write.changes) await writeChange(run, change);
  if (write.sweep && !replay && pruneRemoves(state.prune, "inferred")) await sweep(run, write.sweep);
  return finish(run, divergences);
}

/** One write's work in its folder: what it reads, and what it has done so far. */
interface Run {
  tree: WorkTree;
  inventory: FolderInventory;
  write: DecidedWrite;
  options: MaterializeOptions;
  state: FolderState;
  followed: ReturnType<typeof followedObjects>;
  writer: FolderWriter;
  /** A retained write made again on a new tip: it decides nothing, and is counted on its first commit. */
  replay: boolean;
  pushed: PushedSince | undefined;
  applied: AppliedChange[];
  decided: Change[];
  placements: MaterializeResult["placements"];
  refusedWrites: RefusedWrite[];
  overridden: Overridden[];
}

/** A document's outcome, counted on a write's first commit only. */
function counted(run: Run, outcome: DocumentOutcome): void {
  if (!run.replay) run.options.onDocument?.(run.write, outcome);
}

function refuse(run: Run, identity: ResourceIdentity, reason: string, message: string): void {
  run.options.onRefused(run.write, identity, reason, message);
  // Encryption has a condition of its own; any other refusal is a change left unwritten.
  if (reason !== "encryption_unavailable")
    run.refusedWrites.push({ key: identityKeyOf(identity), message, reason });
}

/** Removes a document, when the prune mode the target has now lets this removal through. */
async function remove(
  run: Run,
  identity: ResourceIdentity,
  at: DocumentLocation | undefined,
  inferred: boolean,
): Promise<void> {
  if (!pruneRemoves(run.state.prune, inferred ? "inferred" : "observed")) return;
  const path = await run.writer.remove(at);
  if (!path) return;
  counted(run, "deleted");
  run.applied.push({ operation: "delete", identity, path });
  run.decided.push({ op: "delete", identity, ...(inferred ? { inferred } : {}) });
}

/** One change of the write, made in the folder (or left, or refused, and counted as such). */
async function writeChange(run: Run, change: Change): Promise<void> {
  const { writer, inventory, replay, pushed } = run;
  const { identity } = change;
  if (change.replayed && holdsAlready(writer, inventory, change.identity, change.replayed)) {
    counted(run, "unchanged");
    return;
  }
  if (change.op === "delete") {
    const lookup = writer.find(identity);
    await remove(
      run,
      identity,
      lookup && "found" in lookup ? lookup.found : undefined,
      change.inferred === true,
    );
    return;
  }
  const verdict = pushed?.upsert(identity, change.object, change.digest) ?? "as_ever";
  if (verdict === "keep_tip") {
    counted(run, "unchanged");
    return;
  }
  const outcome = await writer.upsert(identity, change.object, change.defaulted, change.digest);
  if (verdict === "api_wins" && !("refused" in outcome) && outcome.changed)
    run.overridden.push({ identity, commits: pushed!.commitsOf(identity) });
  if ("refused" in outcome) {
    refuse(run, identity, outcome.reason, outcome.refused);
    counted(run, "refused");
    return;
  }
  if (outcome.unwritten) refuse(run, identity, outcome.unwritten.reason, outcome.unwritten.refused);
  if (outcome.encryption && !replay) run.options.onEncrypted?.(run.write, identity, outcome.encryption);
  // A replay places again what its first commit placed: counted once, on that first commit.
  if (outcome.placedBy && !replay) run.placements.push({ identity, source: outcome.placedBy });
  if (outcome.changed) {
    run.applied.push({ operation: outcome.created ? "create" : "update", identity, path: outcome.path });
    run.decided.push(change);
  }
  if (outcome.healed && !replay) run.options.onHealed?.(run.write, identity, outcome.healed);
  counted(
    run,
    outcome.changed ? (outcome.created ? "created" : outcome.healed ? "healed" : "updated") : "unchanged",
  );
}

/** Under prune Always, a snapshot removes what it observed absent from its collection. */
async function sweep(run: Run, swept: NonNullable<DecidedWrite["sweep"]>): Promise<void> {
  const { group, version, resource, kind, namespaced } = swept.collection;
  for (const written of run.inventory.documents()) {
    // Judged where it renders: a kustomization's namespace, or the one its name is followed in.
    const doc = { ...written, namespace: sweptNamespace(run.inventory, written, namespaced, run.followed) };
    if (!sweepReaches(doc, swept, run.state.collections)) continue;
    // A document a push added, which the cluster does not run yet: the apply creates it.
    if (run.pushed?.addedByPush(doc.key)) continue;
    const identity = { group, version, resource, kind, namespace: doc.namespace, name: doc.name, uid: "" };
    const before = run.decided.length;
    await remove(run, identity, doc, true);
    const commits = run.pushed?.commitsOf(identity) ?? [];
    if (run.decided.length > before && commits.length > 0) run.overridden.push({ identity, commits });
  }
}

/** The write's commit (with the folder's bootstrap files where it needs them), and what it did. */
async function finish(run: Run, divergences: MeasuredDivergence[] | undefined): Promise<MaterializeResult> {
  const { tree, inventory, write, options, writer, placements, decided, applied, overridden, refusedWrites } =
    run;
  const folder = write.target.path;
  const judged = run.replay ? {} : { refusedWrites };
  // A folder an applier claim applies must exist before it is applied (Argo CD retries a sync of
  // a missing path for minutes, and Flux fails it): a resync into a folder the branch does not
  // hold yet commits the bootstrap files alone. Elsewhere they come only with content.
  const founding =
    writer.touched.size === 0 &&
    write.target.claim !== undefined &&
    write.sweep !== undefined &&
    (await tree.list(folder)).length === 0;
  if (writer.touched.size === 0 && !founding) {
    // CommitEmpty: a save that changed nothing records its message in a commit of no change.
    if (!write.save?.commitEmpty || refusedWrites.length > 0)
      return { divergences, placements, decided, ...judged };
    const made = await commitWith(tree, inventory, write, options, [], applied, overridden);
    return { ...made, empty: true, divergences, placements, decided, ...judged };
  }
  for (const [path, content] of bootstrapFiles(folder, write.target.encryption)) {
    if (!tree.exists(path) || (await replacesBootstrap(path, content, () => tree.read(path)))) {
      await tree.write(path, content);
      writer.touched.add(path);
    }
  }
  const made = await commitWith(tree, inventory, write, options, writer.touched, applied, overridden);
  return { ...made, divergences, placements, decided, ...judged };
}

/** Commits the touched paths (none: an empty commit) with the write's message and author. */
async function commitWith(
  tree: WorkTree,
  inventory: FolderInventory,
  write: DecidedWrite,
  options: MaterializeOptions,
  touched: Iterable<string>,
  applied: AppliedChange[],
  overridden: Overridden[] = [],
): Promise<{ commit?: string }> {
  const message = withOverrideTrailers(options.message(write, applied), overridden);
  const { committer } = options;
  // The committer is always the operator; the author is who made the live change.
  const author = write.author ?? committer;
  const allowEmpty = write.save?.commitEmpty === true;
  const committed = (commit: string | undefined) => {
    inventory.committed(commit);
    if (commit) options.onCommitted?.(write, commit);
    if (commit && overridden.length > 0) options.onOverridden?.(write, overridden, commit);
  };
  if (tree.send) {
    tree.send(touched, message, author, committer, committed, allowEmpty);
    return {};
  }
  const commit = await tree.commit(touched, message, author, committer, allowEmpty);
  committed(commit);
  return commit ? { commit } : {};
}

/**
 * A first snapshot's commit names the pushed commits whose change it wrote the live value over,
 * one `Overrides-Pushed-Change:` trailer each, so `git log` says what to revert to bring them back.
 */
function withOverrideTrailers(message: string, overridden: readonly Overridden[]): string {
  const commits = [...new Set(overridden.flatMap((o) => o.commits))];
  if (commits.length === 0) return message;
  const trailers = commits.map((c) => `Overrides-Pushed-Change: ${c}`).join("\n");
  return `${message.trimEnd()}\n\n${trailers}\n`;
}

/** What was pushed beside the operator since the commit a first snapshot's applier last applied. */
async function pushedSince(
  tree: WorkTree,
  inventory: FolderInventory,
  write: DecidedWrite,
  options: MaterializeOptions,
): Promise<PushedSince | undefined> {
  const base = write.threeWay?.base;
  if (!base || !tree.pushedSince || !tree.readAt) return undefined;
  const pushes = await tree.pushedSince(base, write.target.path, options.committer.email);
  if (!pushes || pushes.length === 0) return undefined;
  return PushedSince.read(pushes, (commit, path) => tree.readAt!(commit, path), inventory);
}

/** The snapshot's objects measured against the folder: as kustomize renders it, else as written. */
async function measure(
  writer: FolderWriter,
  write: DecidedWrite,
  rendered: ReadonlyMap<string, unknown> | undefined,
  additionalSensitive: readonly string[],
): Promise<MeasuredDivergence[]> {
  const found: MeasuredDivergence[] = [];
  for (const change of write.changes) {
    // A sensitive document's values are encrypted: never measured, so never reported either.
    if (change.op !== "upsert" || isSensitive(change.identity, additionalSensitive)) continue;
    const document = rendered?.get(identityKeyOf(change.identity));
    const divergences =
      document !== undefined
        ? measureRender(document, change.object)
        : await writer.measure(change.identity, change.object);
    for (const d of divergences) {
      found.push({
        document: describe(change.identity),
        path: formatPath(d.path),
        rendered: d.rendered,
        live: typeof d.live === "string" ? d.live : (JSON.stringify(d.live) ?? "(absent)"),
      });
    }
  }
  return found;
}

/**
 * Whether a change replayed from the durable queue is in Git already: its object's document
 * holds its value or a later replayed one, pushed before their queue was trimmed.
 */
function holdsAlready(
  writer: FolderWriter,
  inventory: FolderInventory,
  identity: ResourceIdentity,
  replayed: Replayed,
): boolean {
  const lookup = writer.find(identity);
  const at = lookup && "found" in lookup ? lookup.found : undefined;
  const current = at ? inventory.digestAt(at) : absentDocument;
  return current !== undefined && replayed.values.indexOf(current, replayed.at) >= 0;
}
