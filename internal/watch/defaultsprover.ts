// Proves, per source cluster, which unowned values of a watched object are the API server's
// defaults (internal/sanitize/proof.ts), so the projection leaves those out and keeps every
// other one. One dry-run answers every object of the same kind and shape: proofs are cached by
// proofKey, and a request in flight is shared. Without a proof (the credential may not create
// the kind, the dry-run is refused, the server is unreachable) nothing is left out: a folder
// then carries some defaults, but never loses a value. A kind the credential may not create is
// said on the StreamsRunning condition of every GitTarget that follows it (DefaultsProofForbidden).
import type { KubeConfig } from "@kubernetes/client-node";
import { ApiStatusError, postJson } from "../kube/rawget.ts";
import type { Logger } from "../telemetry/logger.ts";
import { dryRunBody, proofKey, provenDefaults, verdictOf } from "../sanitize/proof.ts";
import { settle, type Projection, type Unsettled } from "../sanitize/sanitize.ts";
import { defaultsProofs } from "../telemetry/instruments.ts";
import { groupResourceOf, pathOf, type Collection } from "../stream/collection.ts";
import { errorText } from "../telemetry/errortext.ts";

export interface DefaultsProverOptions {
  /** Dry-runs in flight at once. */
  concurrency?: number;
  /** Proofs kept, least recently used dropped first. */
  cacheSize?: number;
  /** How long a kind the credential may not create is not asked again. */
  forbiddenRetryMs?: number;
  /** Called when a kind's dry-run is first Forbidden, or proven again after it was. */
  onForbiddenChanged?: (kind: string) => void;
}

const none: ReadonlySet<string> = new Set();

export class DefaultsProver {
  private readonly proofs = new Map<string, Promise<ReadonlySet<string>> | ReadonlySet<string>>();
  private readonly forbidden = new Map<string, number>();
  private inFlight = 0;
  private readonly queued: (() => void)[] = [];
  private readonly concurrency: number;
  private readonly cacheSize: number;
  private readonly forbiddenRetryMs: number;

  private readonly onForbiddenChanged: (kind: string) => void;

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly logger: Logger,
    options: DefaultsProverOptions = {},
  ) {
    this.onForbiddenChanged = options.onForbiddenChanged ?? (() => undefined);
    this.concurrency = options.concurrency ?? 4;
    this.cacheSize = options.cacheSize ?? 10_000;
    this.forbiddenRetryMs = options.forbiddenRetryMs ?? 10 * 60_000;
  }

  /**
   * The desired-state projection of `pending`, a member of `collection`: at once when it has no
   * unowned value or its shape was proven already, else once the dry-run answered.
   */
  project(collection: Collection, pending: Unsettled): Projection | Promise<Projection> {
    if (!pending.unowned) return settle(pending);
    const kind = groupResourceOf(collection);
    if ((this.forbidden.get(kind) ?? 0) > Date.now()) return settle(pending);
    const key = proofKey(pending);
    const cached = this.proofs.get(key);
    if (cached !== undefined) {
      // Least recently used goes first: a hit moves the proof to the end.
      this.proofs.delete(key);
      this.proofs.set(key, cached);
      return cached instanceof Promise
        ? cached.then((proven) => settle(pending, verdictOf(proven)))
        : settle(pending, verdictOf(cached));
    }
    const proof = this.prove(collection, kind, pending, key);
    this.remember(key, proof);
    return proof.then((proven) => settle(pending, verdictOf(proven)));
  }

  /**
   * Whether the credential may not create `kind` (group/resource), as its last dry-run found: its
   * server defaults are written to Git until a dry-run is allowed again.
   */
  refuses(kind: string): boolean {
    return this.forbidden.has(kind);
  }

  private remember(key: string, proof: Promise<ReadonlySet<string>> | ReadonlySet<string>): void {
    this.proofs.set(key, proof);
    if (this.proofs.size > this.cacheSize) this.proofs.delete(this.proofs.keys().next().value!);
  }

  private async prove(
    collection: Collection,
    kind: string,
    pending: Unsettled,
    key: string,
  ): Promise<ReadonlySet<string>> {
    await this.slot();
    try {
      const namespace = pending.stripped.metadata?.namespace ?? "";
      const path = pathOf(collection, namespace);
      const answer = await postJson(this.kubeConfig, path, { dryRun: "All" }, dryRunBody(pending));
      const proven = provenDefaults(pending, answer);
      this.remember(key, proven);
      defaultsProofs.inc({ outcome: "proven" });
      if (this.forbidden.delete(kind)) this.onForbiddenChanged(kind);
      return proven;
    } catch (err) {
      return this.unproven(kind, key, err);
    } finally {
      this.release();
    }
  }

  /** A failed dry-run proves nothing. A refusal is kept for the shape; an outage is asked again. */
  private unproven(kind: string, key: string, err: unknown): ReadonlySet<string> {
    const code = err instanceof ApiStatusError ? err.code : undefined;
    const message = errorText(err);
    if (code === 403) {
      const first = !this.forbidden.has(kind);
      if (first || this.forbidden.get(kind)! <= Date.now()) {
        this.logger.warn(
          "the source credential may not create this kind, so its server defaults cannot be proven and are written to Git; " +
            "grant create on it (a dry-run creates nothing, see docs/rbac.md) to leave them out",
          { resource: kind },
        );
      }
      this.forbidden.set(kind, Date.now() + this.forbiddenRetryMs);
      this.proofs.delete(key);
      defaultsProofs.inc({ outcome: "forbidden" });
      if (first) this.onForbiddenChanged(kind);
      return none;
    }
    if (code !== undefined && code >= 400 && code < 500 && code !== 404 && code !== 429) {
      this.logger.warn("a dry-run of the object was refused; its unowned values are kept", {
        resource: kind,
        code,
        error: message,
      });
      this.remember(key, none);
      defaultsProofs.inc({ outcome: "refused" });
      return none;
    }
    this.proofs.delete(key);
    defaultsProofs.inc({ outcome: "failed" });
    return none;
  }

  private async slot(): Promise<void> {
    if (this.inFlight < this.concurrency) {
      this.inFlight++;
      return;
    }
    await new Promise<void>((resolve) => this.queued.push(resolve));
  }

  private release(): void {
    const next = this.queued.shift();
    if (next) next();
    else this.inFlight--;
  }
}
