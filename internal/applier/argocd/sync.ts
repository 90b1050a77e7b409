// A sync GitOps Reverser starts, and how it ends, by Argo CD's own rules (applier-claims.md, "The
// Argo CD applier"). The request is the operation automated sync would build (autoSync), with
// the revision pinned to the commit the branch worker checked; the retry is the Application's
// own, or Argo CD's default of five, with refresh dropped, since a retry that refreshes syncs
// the newest revision and would no longer be pinned. The operation is followed by the token in
// its info, which Argo CD copies into status.operationState when it starts the sync.
import { initiator, tokenInfo, tokenOf, type Application, type Operation } from "./view.ts";

/** The sync automated sync would start, pinned to `commit`, carrying `token`. */
export function syncOperation(app: Application, commit: string, token: string): Operation {
  const policy = app.spec?.syncPolicy;
  const { refresh: _refresh, ...retry } = policy?.retry ?? { limit: 5 };
  return {
    sync: {
      revision: commit,
      prune: policy?.automated?.prune === true,
      ...(policy?.syncOptions?.length ? { syncOptions: [...policy.syncOptions] } : {}),
    },
    initiatedBy: { username: initiator, automated: true },
    info: [{ name: tokenInfo, value: token }],
    retry,
  };
}

/**
 * The Application with the sync set, as the update that starts it writes it: the operation
 * set and status.operationState cleared in one write (the CRD has no status subresource), onto
 * the resourceVersion read.
 */
export function withSync(app: Application, operation: Operation): Application {
  const { operationState: _previous, ...status } = app.status ?? {};
  return { ...app, operation, status };
}

export type SyncState =
  /** Neither the operation nor the operation state carries the token: not landed, or not yet. */
  | { kind: "absent" }
  /** Set and not started, started and running, or failed with a retry still to run. */
  | { kind: "running"; started: boolean }
  | { kind: "completed"; phase: "Succeeded" | "Failed" | "Error"; message: string; revision?: string };

const completed = new Set(["Succeeded", "Failed", "Error"]);

/**
 * Where the sync carrying `token` is. It completes once the operation state carrying the token
 * has completed (Succeeded, Failed or Error) and the operation is cleared; a failed sync with
 * a retry to run is Running again, so it is still running.
 */
export function syncState(app: Application, token: string): SyncState {
  const state = app.status?.operationState;
  const ours = tokenOf(state?.operation) === token;
  if (tokenOf(app.operation) === token) {
    return { kind: "running", started: ours };
  }
  if (!ours) return { kind: "absent" };
  if (!completed.has(state?.phase ?? "")) return { kind: "running", started: true };
  return {
    kind: "completed",
    phase: state!.phase as "Succeeded" | "Failed" | "Error",
    message: state!.message ?? "",
    ...(state!.syncResult?.revision ? { revision: state!.syncResult.revision } : {}),
  };
}
