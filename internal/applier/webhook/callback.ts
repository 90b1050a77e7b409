// A webhook applier's report of how an apply ended, POSTed to the operator's receiver at
// /webhook-claim/<namespace>/<name>: {"token", "result": "Succeeded" or "Failed", "message"},
// signed as the request was, with the claim's token. Judged here, purely: the signature over
// the exact body first, then the report itself, then whether it names the operation the claim
// has in flight. A token whose operation already ended is a replay and is refused, so a captured
// callback cannot end a later apply; the operation the answer ends is what the receiver writes
// to status.operation, where the dispatcher reads it.
import type { ApplyOperation, WebhookClaim } from "../../../generated/v1alpha3/index.ts";
import { inFlight } from "../decide/index.ts";
import type { WebhookSecret, WebhookSecretProblem } from "./secret.ts";
import { refuseSignature } from "./signature.ts";

/** The route's prefix; the rest of the path is <namespace>/<name>. */
export const callbackPrefix = "/webhook-claim/";

export type CallbackVerdict =
  /** The report names the operation in flight: it ends as `operation` says. */
  | { kind: "accepted"; operation: ApplyOperation }
  /** Refused with an HTTP status and what the tool is told. */
  | { kind: "refused"; status: 400 | 401 | 404 | 409; message: string };

export interface CallbackFacts {
  /** The claim the path names; undefined when there is none. */
  claim: WebhookClaim | undefined;
  /** Its Secret as read now. */
  secret: WebhookSecret | WebhookSecretProblem | undefined;
  body: Buffer;
  /** The X-Signature header. */
  signature: string | undefined;
  now: Date;
}

/** Whether a callback ends the claim's operation in flight, and how. */
export function judgeCallback(facts: CallbackFacts): CallbackVerdict {
  const { claim, secret } = facts;
  if (!claim) return { kind: "refused", status: 404, message: "No such WebhookClaim." };
  // A claim whose Secret cannot be read verifies nothing: the tool is told as little as a bad signature.
  if (!secret || secret.kind !== "loaded")
    return { kind: "refused", status: 401, message: "The signature cannot be checked." };
  const bad = refuseSignature(facts.body, facts.signature, secret.token);
  if (bad) return { kind: "refused", status: 401, message: `Refused: ${bad}.` };
  const report = readReport(facts.body);
  if ("problem" in report) return { kind: "refused", status: 400, message: report.problem };
  const operation = claim.status?.operation;
  if (!operation || operation.requestToken !== report.token)
    return { kind: "refused", status: 409, message: "The token names no operation of this claim." };
  if (!inFlight(operation))
    return {
      kind: "refused",
      status: 409,
      message: `The operation this token names already ended ${operation.phase}: a replayed report is refused.`,
    };
  return {
    kind: "accepted",
    operation: {
      ...operation,
      phase: report.result,
      completedAt: facts.now.toISOString(),
      message: (report.message ?? `The applier reported ${report.result}.`).slice(0, 4096),
    },
  };
}

interface Report {
  token: string;
  result: "Succeeded" | "Failed";
  message?: string;
}

function readReport(body: Buffer): Report | { problem: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    return { problem: "The body is not JSON." };
  }
  const { token, result, message } = (parsed ?? {}) as Record<string, unknown>;
  if (typeof token !== "string" || !token) return { problem: 'The body has no "token".' };
  if (result !== "Succeeded" && result !== "Failed")
    return { problem: '"result" must be "Succeeded" or "Failed".' };
  if (message !== undefined && typeof message !== "string") return { problem: '"message" must be a string.' };
  return { token, result, ...(message ? { message } : {}) };
}
