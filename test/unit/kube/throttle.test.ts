import assert from "node:assert/strict";
import { createServer, type Server, type Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, HttpMethod, KubeConfig, RequestContext, Watch } from "@kubernetes/client-node";
import { getJson, postJson } from "../../../internal/kube/rawget.ts";
import { closeThrottle, throttle, TokenBucket } from "../../../internal/kube/throttle.ts";
import { eventually } from "../../support/wait.ts";

/** When each of `count` requests, all asked for at `asked`, may go, on a bucket of qps and burst. */
function starts(qps: number, burst: number, count: number, asked = 0): number[] {
  const bucket = new TokenBucket(qps, burst, 0);
  return Array.from({ length: count }, () => asked + bucket.reserve(asked));
}

describe("a provider's requests wait for a token", () => {
  it("a burst goes at once, and the requests beyond it one every 1/qps seconds", () => {
    assert.deepEqual(starts(2, 3, 6), [0, 0, 0, 500, 1000, 1500]);
  });

  it("tokens come back at qps, never more than burst", () => {
    const bucket = new TokenBucket(2, 3, 0);
    for (let i = 0; i < 3; i++) bucket.reserve(0);
    assert.equal(bucket.reserve(1000), 0, "two tokens a second later");
    assert.equal(bucket.reserve(1000), 0);
    assert.equal(bucket.reserve(1000), 500, "and no third");
    const rested = new TokenBucket(2, 3, 0);
    assert.deepEqual(
      [0, 0, 0, 0].map(() => rested.reserve(60_000)),
      [0, 0, 0, 500],
      "a minute of rest still leaves only burst",
    );
  });

  it("no window holds more than burst + qps × its length, whatever the arrivals", () => {
    const bucket = new TokenBucket(2, 2, 0);
    let now = 0;
    const went: number[] = [];
    for (let i = 0; i < 200; i++) {
      now += [0, 0, 0, 120, 700, 3000][i % 6]!;
      went.push(now + bucket.reserve(now));
    }
    went.sort((a, b) => a - b);
    for (let i = 0; i < went.length; i++) {
      for (let j = i; j < went.length; j++) {
        const allowed = 2 + (2 * (went[j]! - went[i]!)) / 1000;
        assert.ok(j - i + 1 <= allowed + 1e-9, `${j - i + 1} requests in ${went[j]! - went[i]!} ms`);
      }
    }
  });
});

describe("every request path of a provider's client passes its throttle; all but watches are bounded", () => {
  // A port that takes connections and never answers, so every request hangs until abandoned.
  let server: Server;
  const sockets: Socket[] = [];
  let kubeConfig: KubeConfig;
  const seen: RequestContext[] = [];

  before(async () => {
    server = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: "c", server: `https://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: "u", token: "t" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    throttle(kubeConfig, { qps: 1000, burst: 1000, timeoutMs: 200 });
    const hooked = kubeConfig.applySecurityAuthentication.bind(kubeConfig);
    kubeConfig.applySecurityAuthentication = async (context) => {
      await hooked(context);
      seen.push(context);
    };
  });
  after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const timedOut = (err: unknown) => {
    const text = String(err instanceof Error ? `${err.name} ${err.message} ${String(err.cause)}` : err);
    return /timeout|abort/i.test(text);
  };

  it("a typed API call that gets no answer is abandoned after the timeout", async () => {
    await assert.rejects(kubeConfig.makeApiClient(CoreV1Api).listNamespace(), timedOut);
    assert.ok(seen.at(-1)?.getSignal(), "the call carried the timeout");
  });

  it("a raw GET or POST that gets no answer is abandoned after the timeout", async () => {
    const count = seen.length;
    await assert.rejects(getJson(kubeConfig, "/api/v1/namespaces"), timedOut);
    await assert.rejects(postJson(kubeConfig, "/api/v1/namespaces", { dryRun: "All" }, {}), timedOut);
    assert.equal(seen.length, count + 2, "both went through the hook");
  });

  it("a watch passes through the throttle but is never given the timeout", async () => {
    const count = seen.length;
    // Its connect hangs until the sockets close after the tests.
    void new Watch(kubeConfig).watch(
      "/api/v1/namespaces",
      {},
      () => undefined,
      () => undefined,
    );
    await eventually(() => seen.length === count + 1, {
      description: "the watch's connect to go through the hook",
    });
    assert.match(seen.at(-1)!.getUrl(), /watch=true/);
    assert.equal(seen.at(-1)!.getSignal(), undefined);
  });
});

describe("a closed throttle", () => {
  it("fails the requests still waiting for a token, and every later one, at once", async () => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: "c", server: "https://127.0.0.1:1" }],
      users: [{ name: "u", token: "t" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    // One token an hour: the second request would wait for most of it.
    throttle(kubeConfig, { qps: 1 / 3600, burst: 1, timeoutMs: 0 });
    const context = () => new RequestContext("https://127.0.0.1:1/api", HttpMethod.GET);
    await kubeConfig.applySecurityAuthentication(context());
    const waiting = kubeConfig.applySecurityAuthentication(context());
    closeThrottle(kubeConfig);
    await assert.rejects(waiting, /replaced or released/);
    await assert.rejects(kubeConfig.applySecurityAuthentication(context()), /replaced or released/);
  });
});
