// What a branch worker built by hand, in a test or the benchmark, is given where nothing
// listens: folder callbacks that report nowhere, and the materialize options of a committer
// with no sensitive types of its own. (With no observer, what it reports is heard by nobody:
// internal/git/worker/observer.ts's unobserved.)
import type { Signature } from "../../internal/types/signature.ts";
import type { MaterializeOptions } from "../../internal/git/folder/materialize.ts";
import { commitMessageFor } from "../../internal/git/folder/message.ts";
import { quiet } from "./logger.ts";
import type { BranchWorkerOptions } from "../../internal/git/worker/branchworker.ts";

export const unheardFolders: BranchWorkerOptions["folders"] = {
  onReport: () => undefined,
  onResyncRequested: () => undefined,
};

/** Commits by `committer` with the default messages; `onRefused` hears each object refused. */
export function committing(
  committer: Signature,
  onRefused: MaterializeOptions["onRefused"] = () => undefined,
): MaterializeOptions {
  return { committer, additionalSensitive: [], onRefused, message: commitMessageFor(committer, quiet) };
}
