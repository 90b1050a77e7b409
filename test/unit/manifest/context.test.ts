import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { rendersLive } from "../../../internal/manifest/context.ts";

const deployment = (image: string, replicas: number, env: string) => ({
  kind: "Deployment",
  spec: {
    replicas,
    template: { spec: { containers: [{ name: "app", image, env: [{ name: "MODE", value: env }] }] } },
  },
});

describe("a live change to a read-only base document is judged against the folder as rendered", () => {
  it("live equal to the render is no change, whatever the base document says", () => {
    const rendered = deployment("app:2", 3, "production");
    assert.equal(rendersLive(structuredClone(rendered), rendered, structuredClone(rendered)), true);
  });

  it("a value live holds that the render does not is a change, unless an override expresses it", () => {
    const rendered = deployment("app:2", 3, "production");
    const live = deployment("app:3", 3, "production");
    // No override expressed the image: the edit-through left live's value in desired.
    assert.equal(rendersLive(live, rendered, structuredClone(live)), false);
    // An images: override expressed it: the edit-through put the document's own value back.
    assert.equal(rendersLive(live, rendered, deployment("app:1", 3, "production")), true);
  });

  it("a field live adds or drops is a change", () => {
    const rendered = deployment("app:2", 3, "production");
    const added = { ...deployment("app:2", 3, "production"), metadata: { labels: { a: "b" } } };
    assert.equal(rendersLive(added, rendered, structuredClone(added)), false);
    const dropped = { kind: "Deployment" };
    assert.equal(rendersLive(dropped, rendered, structuredClone(dropped)), false);
  });
});
