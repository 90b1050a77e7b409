import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Suspensions } from "../../../../internal/git/worker/suspension.ts";
import type { Intake } from "../../../../internal/git/folder/targetfolders.ts";
import type { TargetSettings } from "../../../../internal/git/folder/writes.ts";
import { configMaps } from "../fixtures.ts";
import { configMapIdentity } from "../../../support/streams.ts";

const target: TargetSettings = {
  key: "apps/t",
  path: "clusters/dev",
  timers: { idleTimeoutMs: 0, maxDurationMs: 0 },
  prune: "OnEvent",
};
const suspended = { ...target, suspend: true };
const object = (name: string) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "apps" },
});
const upsert = (t: TargetSettings, name: string): Intake => ({
  target: t,
  item: { type: "upsert", collection: configMaps, identity: configMapIdentity(name), object: object(name) },
});
const remove = (t: TargetSettings, name: string): Intake => ({
  target: t,
  item: { type: "delete", collection: configMaps, identity: configMapIdentity(name) },
});
const deletedNames = (intakes: Intake[]) =>
  intakes.map((i) => (i.item.type === "delete" ? i.item.identity.name : `not a delete: ${i.item.type}`));

describe("a suspended GitTarget on its branch worker", () => {
  it("a suspended target's items are taken and none is written; its replay markers still reach the gate", () => {
    const suspensions = new Suspensions(() => undefined);
    assert.equal(suspensions.take(upsert(target, "a")), false, "an active target's item goes on");
    assert.equal(suspensions.take(upsert(suspended, "a")), true);
    assert.equal(suspensions.take(remove(suspended, "a")), true);
    assert.equal(
      suspensions.take({
        target: suspended,
        item: { type: "snapshot", collection: configMaps, objects: [] },
      }),
      true,
    );
    assert.equal(
      suspensions.take({ target: suspended, item: { type: "replaying", collection: configMaps } }),
      false,
    );
    assert.equal(
      suspensions.take({ target: suspended, item: { type: "removed", collection: configMaps } }),
      false,
    );
  });

  it("resuming replays every collection and writes the deletes seen while suspended, except of objects seen again", () => {
    const replays: string[] = [];
    const suspensions = new Suspensions((key) => replays.push(key));
    for (const name of ["gone", "back", "in-snapshot"]) suspensions.take(remove(suspended, name));
    suspensions.take(upsert(suspended, "back"));
    suspensions.take({
      target: suspended,
      item: {
        type: "snapshot",
        collection: configMaps,
        objects: [{ identity: configMapIdentity("in-snapshot"), object: object("in-snapshot") }],
      },
    });
    const resumed = suspensions.resumed(target);
    assert.deepEqual(deletedNames(resumed), ["gone"]);
    assert.ok(
      resumed.every((i) => i.admitted && !i.target.suspend),
      "written as the resumed target's",
    );
    assert.deepEqual(replays, ["apps/t"]);
    assert.deepEqual(suspensions.resumed(target), [], "written once");
  });

  it("a collection no longer followed drops the deletes it saw while suspended", () => {
    const suspensions = new Suspensions(() => undefined);
    suspensions.take(remove(suspended, "gone"));
    suspensions.take({ target: suspended, item: { type: "removed", collection: configMaps } });
    assert.deepEqual(suspensions.resumed(target), []);
  });
});
