// What a GitTarget tells its branch worker: the target's own settings, from its spec. (The
// worker's spec, from the GitBranch and its GitProvider, is internal/gitbranch/workerspec.ts.)
import type { GitTarget } from "../../generated/v1alpha3/index.ts";
import type { TargetSettings } from "../git/index.ts";
import type { AppliedBy } from "../types/applied.ts";
import { parseDuration } from "../types/units.ts";
import { objectKeyOf } from "../types/names.ts";

/**
 * The window timers, prune mode and message templates a target's spec sets, with the defaults;
 * and, when the applier claim it names exists (`claimed`), the claim, with the applier that claim
 * holds where it names one (a WebhookClaim's applier is a tool outside the cluster: none).
 */
export function targetSettings(
  target: GitTarget,
  claimed?: { applier: Required<AppliedBy> | undefined },
): TargetSettings {
  const window = target.spec.commit?.window;
  const recipients = target.spec.encryption?.age.recipients;
  return {
    key: objectKeyOf(target),
    path: target.spec.path,
    timers: {
      idleTimeoutMs: parseDuration(window?.idleTimeout ?? "5s"),
      maxDurationMs: parseDuration(window?.maxDuration ?? "1m"),
    },
    prune: target.spec.prune?.mode ?? "OnEvent",
    templates: target.spec.commit?.message,
    placement: target.spec.placement,
    ...(target.spec.suspend ? { suspend: true } : {}),
    ...(recipients && recipients.length > 0 ? { encryption: { recipients: [...recipients] } } : {}),
    ...(claimed ? { claim: claimOf(target) } : {}),
    ...(claimed?.applier ? { applier: claimed.applier } : {}),
  };
}

/** The claim the target names, with the target's uid and spec.onRefusal, for the worker's applies. */
function claimOf(target: GitTarget): TargetSettings["claim"] {
  const ref = target.spec.applierClaimRef!;
  return {
    kind: ref.kind,
    namespace: target.metadata.namespace!,
    name: ref.name,
    targetUid: target.metadata.uid ?? "",
    ...(target.spec.onRefusal ? { onRefusal: target.spec.onRefusal } : {}),
  };
}
