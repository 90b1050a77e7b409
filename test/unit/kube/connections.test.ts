import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { HttpMethod, KubeConfig, RequestContext } from "@kubernetes/client-node";
import { keepConnections } from "../../../internal/kube/connections.ts";

function kubeConfig(caData = "Y2E="): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: "https://127.0.0.1:6443", caData }],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return kc;
}

async function dispatcherOf(kc: KubeConfig) {
  const context = new RequestContext("https://127.0.0.1:6443/api", HttpMethod.GET);
  await kc.applySecurityAuthentication(context);
  return { dispatcher: context.getDispatcher(), authorization: context.getHeaders()["Authorization"] };
}

describe("API calls share their connections", () => {
  it("without it, every call gets a connection pool of its own", async () => {
    const kc = kubeConfig();
    const [a, b] = [await dispatcherOf(kc), await dispatcherOf(kc)];
    assert.notEqual(a.dispatcher, b.dispatcher, "client-node's own behavior, which this module exists for");
  });

  it("calls with the same TLS material share one pool, and keep their own credentials", async () => {
    const kc = keepConnections(kubeConfig());
    const a = await dispatcherOf(kc);
    const b = await dispatcherOf(keepConnections(kc));
    assert.ok(a.dispatcher);
    assert.equal(a.dispatcher, b.dispatcher);
    assert.equal(b.authorization, "Bearer t");
  });

  it("new TLS material gets a new pool", async () => {
    const kc = keepConnections(kubeConfig());
    const before = await dispatcherOf(kc);
    // A rotated CA, as loading the kubeconfig again after a Secret changed brings.
    const rotated = kubeConfig("b3RoZXI=");
    kc.loadFromOptions({ ...rotated, currentContext: rotated.getCurrentContext() });
    const after = await dispatcherOf(kc);
    assert.notEqual(after.dispatcher, before.dispatcher);
    assert.equal((await dispatcherOf(kc)).dispatcher, after.dispatcher);
  });
});
