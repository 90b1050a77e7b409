import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, KubernetesObjectApi, type KubeConfig } from "@kubernetes/client-node";
import { ControlPlane } from "../../support/controlplane.ts";
import { installCrds } from "../../support/manifests.ts";
import { immutabilityCases, invalidCases, validObject } from "./fixtures.ts";

const namespace = "validation";

/** The message of a refused request, from the Status the API server answered with. */
function messageOf(err: unknown): string {
  const body = (err as { body?: unknown }).body;
  const text = typeof body === "string" ? body : JSON.stringify(body ?? "");
  try {
    return (JSON.parse(text) as { message?: string }).message ?? text;
  } catch {
    return text;
  }
}

async function refusal(request: Promise<unknown>): Promise<{ code: number; message: string }> {
  const err = await request.then(
    () => assert.fail("the API server accepted an object it should refuse"),
    (e: unknown) => e,
  );
  return { code: (err as { code: number }).code, message: messageOf(err) };
}

describe("admission validation of the v1alpha3 API", () => {
  let plane: ControlPlane;
  let kc: KubeConfig;
  let objects: KubernetesObjectApi;
  let count = 0;
  const uniqueName = () => `obj-${++count}`;

  before(async () => {
    plane = await ControlPlane.start();
    kc = plane.kubeConfig();
    await installCrds(kc);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    objects = KubernetesObjectApi.makeApiClient(kc);
  });
  after(async () => {
    await plane?.stop();
  });

  it("has at least three refused objects for every kind", () => {
    const perKind = new Map<string, number>();
    for (const c of invalidCases) perKind.set(c.kind, (perKind.get(c.kind) ?? 0) + 1);
    assert.equal(perKind.size, 11);
    for (const [kind, n] of perKind) assert.ok(n >= 3, `${kind} has only ${n} invalid cases`);
  });

  for (const c of invalidCases) {
    it(`refuses a ${c.kind} with ${c.what}`, async () => {
      const object = validObject(c.kind, uniqueName(), namespace);
      c.breakIt(object.spec);
      const { code, message } = await refusal(objects.create(object));
      assert.equal(code, 422, message);
      assert.ok(message.includes(c.message), `expected "${c.message}" in: ${message}`);
    });
  }

  it("accepts a CommitRequest message of 1024 multi-byte characters, with newlines", async () => {
    const object = validObject("CommitRequest", uniqueName(), namespace);
    object.spec.message = `${"é".repeat(511)}\n${"ü".repeat(512)}`;
    const created = await objects.create(object);
    assert.equal(created.spec.message, object.spec.message, "accepted text is never truncated");
  });

  it("accepts a minimal WebhookClaim, url and secretRef, and fills in a 10s timeout and Callback completion", async () => {
    const object = validObject("WebhookClaim", uniqueName(), namespace);
    assert.deepEqual(Object.keys(object.spec).sort(), ["secretRef", "url"]);
    const created = await objects.create(object);
    assert.deepEqual(created.spec, {
      url: "https://ci.example.com/hooks/apply",
      secretRef: { name: "hmac" },
      timeout: "10s",
      completion: { mode: "Callback" },
    });
  });

  it("accepts a WebhookClaim that settles after settleAfter, and one reporting through Status to plain http (loopback is the operator's to judge)", async () => {
    const settle = validObject("WebhookClaim", uniqueName(), namespace);
    settle.spec.completion = { mode: "Settle", settleAfter: "30s" };
    assert.deepEqual((await objects.create(settle)).spec.completion, { mode: "Settle", settleAfter: "30s" });

    const status = validObject("WebhookClaim", uniqueName(), namespace);
    status.spec.url = "http://127.0.0.1:9000/apply";
    status.spec.completion = { mode: "Status" };
    status.spec.timeout = "2m";
    status.spec.fieldManagers = ["kubectl-client-side-apply", "deployer"];
    const created = await objects.create(status);
    assert.equal(created.spec.url, "http://127.0.0.1:9000/apply");
    assert.deepEqual(created.spec.completion, { mode: "Status" });
  });

  it("lets a GitTarget name a WebhookClaim as its applier claim", async () => {
    const target = validObject("GitTarget", uniqueName(), namespace);
    target.spec.applierClaimRef = { kind: "WebhookClaim", name: "ci" };
    target.spec.onRefusal = "Reapply";
    const created = await objects.create(target);
    assert.deepEqual(created.spec.applierClaimRef, { kind: "WebhookClaim", name: "ci" });
  });

  for (const c of immutabilityCases) {
    it(`refuses a change of ${c.kind} ${c.field}`, async () => {
      const object = validObject(c.kind, uniqueName(), namespace);
      c.prepare?.(object.spec);
      const created = await objects.create(object);
      c.change(created.spec);
      const { code, message } = await refusal(objects.replace(created));
      assert.equal(code, 422, message);
      assert.ok(message.includes(c.message), `expected "${c.message}" in: ${message}`);
    });
  }

  it("lets the fields that may change, change", async () => {
    const branch = validObject("GitBranch", uniqueName(), namespace);
    const created = await objects.create(branch);
    created.spec.allowedGitTargets = [{ consumerNamespaces: { from: "All" } }];
    await objects.replace(created);

    const target = validObject("GitTarget", uniqueName(), namespace);
    const createdTarget = await objects.create(target);
    createdTarget.spec.commit = { window: { idleTimeout: "0s", maxDuration: "10m" } };
    createdTarget.spec.prune = { mode: "Always" };
    const updated = await objects.replace(createdTarget);
    assert.deepEqual(updated.spec.commit, { window: { idleTimeout: "0s", maxDuration: "10m" } });
  });
});
