// Every call to a Git server is bounded, so a server that stops answering cannot hold a branch:
// each HTTP request gets its own deadline, and the cycle it belongs to may set a second one.
import type { HttpClient } from "isomorphic-git";
import http from "isomorphic-git/http/node";

export interface BoundedHttp extends HttpClient {
  /** Bounds every request until the next call: a publication cycle's deadline. */
  setCycleDeadline(signal: AbortSignal | undefined): void;
}

export function boundedHttp(callTimeoutMs: number): BoundedHttp {
  let cycle: AbortSignal | undefined;
  return {
    request: (request) => {
      const signals = [AbortSignal.timeout(callTimeoutMs), request.signal, cycle].filter(
        (s): s is AbortSignal => s !== undefined,
      );
      return http.request({ ...request, signal: AbortSignal.any(signals) });
    },
    setCycleDeadline: (signal) => {
      cycle = signal;
    },
  };
}
