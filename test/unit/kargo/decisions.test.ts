// The Kargo observer's decisions, one test per rule of kargo-argocd-observer.md.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  driftOf,
  matchingFreight,
  subscribedRepositories,
  type FreightView,
} from "../../../internal/kargo/drift.ts";
import { promotionGuard } from "../../../internal/kargo/guard.ts";
import { parseImage } from "../../../internal/kargo/images.ts";
import {
  currentImages,
  observedStage,
  promotionFor,
  requestedWarehouses,
} from "../../../internal/kargo/views.ts";

describe("image references are parsed as registries write them", () => {
  it("a registry with a port, a tag, a digest, or no tag at all", () => {
    assert.deepEqual(parseImage("registry.local:5000/team/app:1.4.2"), {
      repository: "registry.local:5000/team/app",
      tag: "1.4.2",
    });
    assert.deepEqual(parseImage("ghcr.io/org/app@sha256:abc"), {
      repository: "ghcr.io/org/app",
      digest: "sha256:abc",
    });
    assert.deepEqual(parseImage("ghcr.io/org/app:1.2@sha256:abc"), {
      repository: "ghcr.io/org/app",
      tag: "1.2",
      digest: "sha256:abc",
    });
    assert.deepEqual(parseImage("localhost:5000/app"), { repository: "localhost:5000/app" });
    assert.deepEqual(parseImage("nginx:1.27"), { repository: "docker.io/library/nginx", tag: "1.27" });
    assert.equal(parseImage("not an image"), undefined);
  });
});

describe("drift: the deployed images against the Stage's current Freight, within its subscriptions", () => {
  const subscribed = new Set(subscribedRepositories([{ image: { repoURL: "ghcr.io/org/app" } }, {}]));
  const current = [{ repository: "ghcr.io/org/app", tag: "1.0.0" }];

  it("equal tags are a no-op: what keeps the observer loop-free", () => {
    assert.deepEqual(
      driftOf(["ghcr.io/org/app:1.0.0", "docker.io/library/redis:7"], current, subscribed),
      [],
    );
  });

  it("a tag bumped by hand is drift; a repository the Stage does not subscribe to is ignored", () => {
    assert.deepEqual(driftOf(["ghcr.io/org/app:1.1.0", "ghcr.io/org/other:9"], current, subscribed), [
      { repository: "ghcr.io/org/app", tag: "1.1.0" },
    ]);
  });

  it("a Stage that holds nothing yet has drifted for every subscribed image", () => {
    assert.deepEqual(driftOf(["ghcr.io/org/app:1.1.0"], [], subscribed), [
      { repository: "ghcr.io/org/app", tag: "1.1.0" },
    ]);
  });
});

describe("the Freight that closes the drift matches all drifted pairs", () => {
  const freight = (
    name: string,
    createdAt: number,
    images: [string, string][],
    origin = "app",
  ): FreightView => ({
    name,
    origin,
    createdAt,
    images: images.map(([repository, tag]) => ({ repository, tag })),
  });
  const drifted = [
    { repository: "ghcr.io/org/app", tag: "1.1.0" },
    { repository: "ghcr.io/org/api", tag: "2.0.0" },
  ];
  const origins = new Set(["app"]);

  it("all of them, from a requested origin; the newest of several", () => {
    const freights = [
      freight("partial", 3, [["ghcr.io/org/app", "1.1.0"]]),
      freight("older", 1, [
        ["ghcr.io/org/app", "1.1.0"],
        ["ghcr.io/org/api", "2.0.0"],
      ]),
      freight("newer", 2, [
        ["ghcr.io/org/app", "1.1.0"],
        ["ghcr.io/org/api", "2.0.0"],
      ]),
      freight(
        "elsewhere",
        4,
        [
          ["ghcr.io/org/app", "1.1.0"],
          ["ghcr.io/org/api", "2.0.0"],
        ],
        "other",
      ),
    ];
    assert.equal(matchingFreight(freights, drifted, origins)?.name, "newer");
  });

  it("none when no Freight holds every pair: FreightMissing", () => {
    assert.equal(
      matchingFreight([freight("partial", 3, [["ghcr.io/org/app", "1.1.0"]])], drifted, origins),
      undefined,
    );
  });
});

describe("the repeat guard", () => {
  const promotion = (name: string, freight: string, phase?: string, ours = true) => ({
    name,
    stage: "prod",
    freight,
    ...(phase ? { phase } : {}),
    ours,
  });

  it("a Promotion in flight blocks a second, whoever made it", () => {
    assert.deepEqual(promotionGuard([promotion("p1", "f1", "Running", false)], "prod", "f2"), {
      kind: "inFlight",
      promotion: "p1",
    });
    assert.equal(promotionGuard([promotion("p1", "f1")], "prod", "f2").kind, "inFlight", "pending counts");
    assert.equal(
      promotionGuard([{ ...promotion("p1", "f1", "Running"), stage: "dev" }], "prod", "f2").kind,
      "clear",
    );
  });

  it("a failed Promotion's Freight is not retried until it is deleted", () => {
    assert.deepEqual(promotionGuard([promotion("p1", "f1", "Failed")], "prod", "f1"), {
      kind: "failedBefore",
      promotion: "p1",
    });
    assert.equal(
      promotionGuard([promotion("p1", "f1", "Errored")], "prod", "f2").kind,
      "clear",
      "another Freight may go",
    );
    assert.equal(promotionGuard([], "prod", "f1").kind, "clear", "deleted: retried");
  });
});

describe("what the observer reads of Argo CD's and Kargo's objects", () => {
  const app = (annotations: Record<string, string>) => ({
    metadata: { name: "a", namespace: "argocd", annotations },
  });
  const authorized = { "kargo.akuity.io/authorized-stage": "shop:prod" };

  it("an Application is observed for its authorized Stage, unless it opts out, or opt-in mode leaves it out", () => {
    assert.deepEqual(observedStage(app(authorized), "all"), { namespace: "shop", name: "prod" });
    assert.equal(
      observedStage(app({ ...authorized, "kargo-observer.kutlak.cc/ignore": "true" }), "all"),
      undefined,
    );
    assert.equal(observedStage(app(authorized), "opt-in"), undefined);
    assert.deepEqual(
      observedStage(app({ ...authorized, "kargo-observer.kutlak.cc/observe": "true" }), "opt-in"),
      {
        namespace: "shop",
        name: "prod",
      },
    );
    assert.equal(observedStage(app({ "kargo.akuity.io/authorized-stage": "no-colon" }), "all"), undefined);
  });

  it("the Stage's current Freight is every item of freightHistory[0]; its origins are its requested Warehouses", () => {
    const stage = {
      metadata: { name: "prod" },
      spec: {
        requestedFreight: [
          { origin: { kind: "Warehouse", name: "app" } },
          { origin: { kind: "Stage", name: "dev" } },
        ],
      },
      status: {
        freightHistory: [
          { items: { "Warehouse/app": { images: [{ repoURL: "ghcr.io/org/app", tag: "1.0.0" }] } } },
          { items: { "Warehouse/app": { images: [{ repoURL: "ghcr.io/org/app", tag: "0.9.0" }] } } },
        ],
      },
    };
    assert.deepEqual(currentImages(stage), [{ repository: "ghcr.io/org/app", tag: "1.0.0" }]);
    assert.deepEqual([...requestedWarehouses(stage)], ["app"]);
  });

  it("the Promotion carries the seed's generateName and labels", () => {
    const promotion = promotionFor({ namespace: "shop", name: "prod" }, "f2");
    assert.equal(promotion.metadata?.generateName, "prod-observer-");
    assert.deepEqual(promotion.metadata?.labels, {
      "app.kubernetes.io/managed-by": "kargo-argocd-observer",
      "kargo-observer.kutlak.cc/stage": "prod",
      "kargo-observer.kutlak.cc/freight": "f2",
    });
    assert.deepEqual(promotion.spec, { stage: "prod", freight: "f2" });
  });
});
