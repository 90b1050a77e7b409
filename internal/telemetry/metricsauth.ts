// Who may read /metrics, as kubebuilder's secure metrics serving decides it: the request's
// bearer token goes to the API server as a TokenReview (who is this?), and the user it names
// as a SubjectAccessReview for `get` on the non-resource path /metrics (may they?). No token or
// a token the API server does not accept: 401. Not allowed: 403. The API server could not be
// asked: 500, never a pass. Answers are cached by the token's hash for a short while, bounded,
// so a scrape every few seconds is not two API calls each.
import { createHash } from "node:crypto";
import {
  AuthenticationV1Api,
  AuthorizationV1Api,
  type KubeConfig,
  type V1SubjectAccessReviewStatus,
  type V1TokenReviewStatus,
  type V1UserInfo,
} from "@kubernetes/client-node";
import { errorText } from "./errortext.ts";

/** What a scrape is answered: allowed, or the status it is refused with and why. */
export type Verdict = { allowed: true } | { allowed: false; status: 401 | 403 | 500; reason: string };

/** The token of an `Authorization: Bearer <token>` header; undefined for anything else. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return match?.[1];
}

/** The user a TokenReview's status names, or why the scrape is refused: 401. */
export function authenticated(status: V1TokenReviewStatus | undefined): V1UserInfo | Verdict {
  if (status?.authenticated !== true || !status.user?.username)
    return { allowed: false, status: 401, reason: status?.error || "the token is not authenticated" };
  return status.user;
}

/** A SubjectAccessReview's status as the scrape's verdict: allowed, or 403. */
export function authorized(status: V1SubjectAccessReviewStatus | undefined, user: string): Verdict {
  if (status?.allowed === true) return { allowed: true };
  const why = status?.reason || status?.evaluationError || "no rule allows it";
  return { allowed: false, status: 403, reason: `${user} may not get /metrics: ${why}` };
}

/** Values kept for `ttlMs`, at most `maxEntries` of them: the oldest goes first. */
export class ExpiringCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.expires > this.now()) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, expires: this.now() + this.ttlMs });
  }
}

/** Asks the API server who a scrape is and whether they may read /metrics. */
export class MetricsAuthorizer {
  private readonly authentication: AuthenticationV1Api;
  private readonly authorization: AuthorizationV1Api;
  /** Verdicts by the token's hash, kept a minute; an error is never kept, so the next scrape asks again. */
  private readonly cache = new ExpiringCache<Verdict>(60_000, 1024);

  constructor(kubeConfig: KubeConfig) {
    this.authentication = kubeConfig.makeApiClient(AuthenticationV1Api);
    this.authorization = kubeConfig.makeApiClient(AuthorizationV1Api);
  }

  /** The verdict on a request with this Authorization header. */
  async check(header: string | undefined): Promise<Verdict> {
    const token = bearerToken(header);
    if (!token) return { allowed: false, status: 401, reason: "no bearer token" };
    const key = createHash("sha256").update(token).digest("hex");
    const cached = this.cache.get(key);
    if (cached) return cached;
    let verdict: Verdict;
    try {
      verdict = await this.review(token);
    } catch (err) {
      return {
        allowed: false,
        status: 500,
        reason: `the API server could not review the scrape: ${errorText(err)}`,
      };
    }
    this.cache.set(key, verdict);
    return verdict;
  }

  private async review(token: string): Promise<Verdict> {
    const tokenReview = await this.authentication.createTokenReview({ body: { spec: { token } } });
    const user = authenticated(tokenReview.status);
    if ("allowed" in user) return user;
    const access = await this.authorization.createSubjectAccessReview({
      body: {
        spec: {
          user: user.username,
          uid: user.uid,
          groups: user.groups,
          extra: user.extra,
          nonResourceAttributes: { path: "/metrics", verb: "get" },
        },
      },
    });
    return authorized(access.status, user.username!);
  }
}
