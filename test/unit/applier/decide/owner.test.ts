import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isApplier } from "../../../../internal/applier/decide/owner.ts";
import { appliedBy } from "../../../../internal/watch/appliedby.ts";

const object = (labels: Record<string, string> = {}, annotations: Record<string, string> = {}) => ({
  metadata: { name: "web", namespace: "shop", labels, annotations },
});

describe("which applier applied an object", () => {
  it("Flux's owner labels name the Kustomization", () => {
    const owner = appliedBy(
      object({
        "kustomize.toolkit.fluxcd.io/name": "apps",
        "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
      }),
    );
    assert.deepEqual(owner, { kind: "Kustomization", namespace: "flux-system", name: "apps" });
  });

  it("Argo CD's tracking annotation names the Application, <namespace>_<name> outside Argo CD's namespace", () => {
    const tracking = (id: string) => appliedBy(object({}, { "argocd.argoproj.io/tracking-id": id }));
    assert.deepEqual(tracking("guestbook:apps/Deployment:shop/web"), {
      kind: "Application",
      name: "guestbook",
    });
    assert.deepEqual(tracking("team-a_guestbook:apps/Deployment:shop/web"), {
      kind: "Application",
      namespace: "team-a",
      name: "guestbook",
    });
  });

  it("an object no applier marked is nobody's", () => {
    assert.equal(appliedBy(object({ app: "web" })), undefined);
  });

  it("the folder's own applier is itself; another Kustomization or an Application is not", () => {
    const own = { kind: "Kustomization" as const, namespace: "shop", name: "apps" };
    assert.ok(isApplier({ kind: "Kustomization", namespace: "shop", name: "apps" }, own));
    assert.ok(!isApplier({ kind: "Kustomization", namespace: "shop", name: "infra" }, own));
    assert.ok(!isApplier({ kind: "Application", name: "apps" }, own));
  });
});
