// What a branch worker reports of its work, for whoever counts and logs it: one observer per
// branch, so nothing it hears names the branch again (a GitTarget's key, where it says which
// target). The operator's is internal/telemetry/branchobserver.ts, metrics and logs; a test may
// record what it hears instead. Only reports go here: what drives something (a push that landed
// or a proved tip, for the GitBranch's status; a folder's report; a fresh snapshot asked of the
// watch side; how the process applies, Applies in ./applies.ts) stays a callback of its own.
//
// The members are function-typed properties, not methods, so the compiler checks an
// implementation's parameters strictly: internal/telemetry sits below the write path and cannot
// import this interface, so its observer is written to this shape and checked where
// controllers/writeside.ts hands it to the WorkerManager.
import type { PlacementSource } from "../../manifest/index.ts";
import type { ResourceIdentity } from "../../types/identity.ts";
import type { DocumentOutcome } from "../folder/materialize.ts";
import type { DropReason } from "../folder/targetfolders.ts";
import type { DecidedWrite } from "../folder/writes.ts";
import type { GitEvent } from "./publication.ts";
import type { CloseReason } from "./window.ts";

/** What a branch's durable queue did: live writes appended (or failed, or fenced), or entries replayed. */
export type QueueEvent = "appended" | "failed" | "fenced" | "replayed";

export interface BranchObserver {
  /** A commit window closed, with why. */
  readonly windowClosed: (reason: CloseReason) => void;
  /** A fetch or a push with its outcome, or a publication cycle that failed and kept every write, with why. */
  readonly git: (event: GitEvent) => void;
  /** `count` live writes appended to the durable queue (or not: failed, fenced), or entries replayed from it. */
  readonly queue: (event: QueueEvent, count: number) => void;
  /** What became of a decided write's document, on its first commit only (a replay is not reported again). */
  readonly document: (write: DecidedWrite, outcome: DocumentOutcome) => void;
  /** A decided write committed, as `commit`. */
  readonly committed: (write: DecidedWrite, commit: string) => void;
  /** An object refused fail-safe rather than written unsafely, with the reason and the message its status shows. */
  readonly refused: (
    write: DecidedWrite,
    identity: ResourceIdentity,
    reason: string,
    message: string,
  ) => void;
  /** A sensitive document encrypted, or proved unchanged without encrypting. */
  readonly encrypted: (
    write: DecidedWrite,
    identity: ResourceIdentity,
    outcome: "encrypted" | "unchanged",
  ) => void;
  /** A file Go's YAML readers refused, rewritten from the live object (also a document, outcome healed). */
  readonly healed: (write: DecidedWrite, identity: ResourceIdentity, healed: string) => void;
  /** Writes or live events of a GitTarget dropped instead of written, by why. */
  readonly dropped: (targetKey: string, reason: DropReason, count: number) => void;
  /** A new document of a GitTarget placed, by the rung of the placement ladder that chose its path. */
  readonly placed: (
    targetKey: string,
    type: { group: string; version: string; resource: string },
    source: PlacementSource,
  ) => void;
  /** Another applier's objects kept out of a GitTarget's coordinated folder, each reported once by the process. */
  readonly excluded: (targetKey: string, excluded: readonly ResourceIdentity[]) => void;
}

/** The observer of a worker nobody watches: a test's, or the benchmark's. */
export const unobserved: BranchObserver = {
  windowClosed: () => undefined,
  git: () => undefined,
  queue: () => undefined,
  document: () => undefined,
  committed: () => undefined,
  refused: () => undefined,
  encrypted: () => undefined,
  healed: () => undefined,
  dropped: () => undefined,
  placed: () => undefined,
  excluded: () => undefined,
};
