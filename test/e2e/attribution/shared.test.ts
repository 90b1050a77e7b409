// The annotation-routed shared endpoint (--author-attribution-audit-route-annotation-key): one
// kube-apiserver audit webhook for every route, each event naming its route in an annotation. A
// real admission webhook sets that annotation as an audit annotation, which kube-apiserver
// records on the event as "<webhook name>/<key>", as a multi-tenant platform's own webhook would.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { AdmissionregistrationV1Api, CoreV1Api } from "@kubernetes/client-node";
import { startAttributedMirror, type AttributedMirror } from "../../support/attributedmirror.ts";
import { grantEditing } from "../../support/attributionenv.ts";
import type { TestIdentity } from "../../support/controlplane.ts";
import { startMutatingWebhook, type MutatingWebhook } from "../../support/mutatingwebhook.ts";

const namespace = "team-b";
const folder = "clusters/shared";
const fileOf = (name: string) => `${folder}/${namespace}/configmaps/${name}.yaml`;
const webhookName = "route-stamper";

describe("attribution through the annotation-routed shared audit endpoint", () => {
  let mirror: AttributedMirror;
  let webhook: MutatingWebhook;
  let alice: TestIdentity;

  before(async () => {
    mirror = await startAttributedMirror({
      namespace,
      folder,
      rules: [{ apiGroups: [""], resources: ["configmaps"] }],
      routeAnnotationKey: `${webhookName}.example.com/route`,
    });
    // The webhook names the route of the KubeProvider "self" on every ConfigMap it admits.
    webhook = await startMutatingWebhook(
      mirror.dir,
      webhookName,
      { routed: "yes" },
      { key: "example.com/admitted", value: "yes" },
      { route: `${namespace}.self` },
    );
    await mirror.kc
      .makeApiClient(AdmissionregistrationV1Api)
      .createMutatingWebhookConfiguration({ body: webhook.configuration });
    alice = await mirror.plane.mintUser("alice");
    await grantEditing(mirror.kc, namespace, [
      { kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" },
    ]);
  });
  after(async () => {
    await mirror?.stop();
    await webhook?.close();
  });

  it("an event is attributed on the route its annotation names", async () => {
    await alice.kubeConfig.makeApiClient(CoreV1Api).createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "routed", labels: { routed: "yes" } }, data: { k: "v" } },
    });
    await mirror.authorOnce(fileOf("routed"));
    assert.equal(
      await mirror.lastCommit(fileOf("routed"), "%an <%ae>"),
      "alice <alice@noreply.cluster.local>",
      "the shared endpoint's event reached the route's facts",
    );
  });
});
