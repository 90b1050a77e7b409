// Where a WebhookClaim may send: https anywhere, plain http only to a loopback host and only
// when the operator runs with --webhook-claim-allow-loopback-http (a test, a demo on one
// machine). A signed body is not secret, but a bearer token and the fact of an apply are.
import { isIP } from "node:net";

const loopbackNames = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

/** Whether `host` (a URL's hostname) is a loopback address or localhost. */
export function isLoopback(host: string): boolean {
  if (loopbackNames.has(host)) return true;
  return isIP(host) === 4 && host.startsWith("127.");
}

/** Why the URL may not be sent to, or undefined when it may. */
export function refuseUrl(raw: string, allowLoopbackHttp: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `spec.url ${JSON.stringify(raw)} is not a URL.`;
  }
  if (url.username || url.password)
    return "spec.url carries a user or password: put a bearer token in the Secret's bearerToken instead.";
  if (url.protocol === "https:") return undefined;
  if (url.protocol !== "http:") return `spec.url must be https:// (it is ${url.protocol}//).`;
  if (!isLoopback(url.hostname))
    return `spec.url is plain http to ${url.hostname}: use https (http is allowed only to a loopback host, with --webhook-claim-allow-loopback-http).`;
  if (!allowLoopbackHttp)
    return "spec.url is plain http: use https, or run the operator with --webhook-claim-allow-loopback-http to allow http to a loopback host.";
  return undefined;
}
