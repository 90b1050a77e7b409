// A KubeProvider's spec.client: its connection makes at most qps requests a second after a
// burst, as client-go's flowcontrol does (a request waits for its turn, it never fails for want
// of one), and a request that is not a watch is abandoned after the timeout. Every request
// client-node makes, and our raw ones, pass through applySecurityAuthentication, so the limits
// hang there: typed API clients, the Watch class, getJson and postJson alike.
import type { KubeConfig, RequestContext } from "@kubernetes/client-node";
import { sleep } from "../timing/sleep.ts";

/** How a connection's client is throttled and bounded. */
export interface ClientLimits {
  /** Sustained requests per second. */
  qps: number;
  /** Requests allowed at once above qps, the bucket's capacity. */
  burst: number;
  /** The timeout of one request that is not a watch, in milliseconds; 0 for none. */
  timeoutMs: number;
}

/**
 * A token bucket that hands out reservations: each request takes a token, and when none is left
 * it is told how long to wait for the one it is owed. Tokens refill at qps up to burst. Time is
 * given by the caller, in milliseconds on any steady clock.
 */
export class TokenBucket {
  private tokens: number;

  constructor(
    private readonly qps: number,
    private readonly burst: number,
    private last: number,
  ) {
    this.tokens = burst;
  }

  /** Reserves a token at `now` and returns how many milliseconds to wait before using it. */
  reserve(now: number): number {
    if (now > this.last) {
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.qps) / 1000);
      this.last = now;
    }
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.qps;
  }
}

/** A watch is long-lived: the timeout bounds every other request, as client-go's does. */
function isWatch(context: RequestContext): boolean {
  return new URL(context.getUrl()).searchParams.get("watch") === "true";
}

const closers = new WeakMap<KubeConfig, AbortController>();

/** Makes every request of `kubeConfig` wait for its turn and time out as `limits` say; returns it. */
export function throttle(kubeConfig: KubeConfig, limits: ClientLimits): KubeConfig {
  const bucket = new TokenBucket(limits.qps, limits.burst, performance.now());
  const closed = new AbortController();
  closers.set(kubeConfig, closed);
  const authenticate = kubeConfig.applySecurityAuthentication.bind(kubeConfig);
  kubeConfig.applySecurityAuthentication = async (context) => {
    closed.signal.throwIfAborted();
    const wait = bucket.reserve(performance.now());
    if (wait > 0) await sleep(wait, closed.signal);
    closed.signal.throwIfAborted();
    await authenticate(context);
    if (limits.timeoutMs === 0 || isWatch(context)) return;
    const timeout = AbortSignal.timeout(limits.timeoutMs);
    const own = context.getSignal();
    context.setSignal(own ? AbortSignal.any([own, timeout]) : timeout);
  };
  return kubeConfig;
}

/**
 * Ends a throttled client whose context stopped: the requests still waiting for a token, and any
 * later one, fail at once instead of going out long after, or holding up the stop. Does nothing
 * to a KubeConfig that is not throttled, such as the operator's own.
 */
export function closeThrottle(kubeConfig: KubeConfig): void {
  closers.get(kubeConfig)?.abort(new Error("this KubeProvider's client was replaced or released"));
}
