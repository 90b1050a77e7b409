import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { KubernetesObject, V1ManagedFieldsEntry } from "@kubernetes/client-node";
import { fieldPathsOf, LastWrites, marksOf, writerBetween } from "../../../internal/watch/lastwriter.ts";

const at = (s: number) => new Date(Date.UTC(2026, 11, 6, 10, 0, s));
const entry = (
  manager: string,
  second: number,
  fields: object,
  operation = "Update",
): V1ManagedFieldsEntry => ({
  manager,
  operation,
  time: at(second),
  fieldsType: "FieldsV1",
  fieldsV1: fields,
});
const object = (rv: number, ...entries: V1ManagedFieldsEntry[]): KubernetesObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "settings", namespace: "shop", resourceVersion: String(rv), managedFields: entries },
});
const mode = { "f:data": { "f:mode": {} } };
const modeAndSize = { "f:data": { "f:mode": {}, "f:size": {} } };
const size = { "f:data": { "f:size": {} } };

describe("the writer of each write is known, not guessed", () => {
  it("the manager whose entry's time moved since the object's previous event wrote it", () => {
    const writes = new LastWrites();
    writes.record(
      "cm",
      object(1, entry("kubectl-edit", 5, mode), entry("kustomize-controller", 1, size, "Apply")),
    );
    // kustomize-controller applies in the edit's second, taking data.mode: the person's set shrinks, its time stays.
    const applied = object(
      2,
      entry("kubectl-edit", 5, {}),
      entry("kustomize-controller", 5, modeAndSize, "Apply"),
    );
    assert.deepEqual(writes.observe("cm", applied), { known: "kustomize-controller" });
  });

  it("where no time moved (a second write in one second), the entry whose field set grew wrote it", () => {
    const before = marksOf(
      object(2, entry("kubectl-edit", 5, {}), entry("kustomize-controller", 5, modeAndSize, "Apply")),
    );
    // The person takes data.mode back in the same second: their set grows, the applier's shrinks.
    const after = marksOf(
      object(3, entry("kubectl-edit", 5, mode), entry("kustomize-controller", 5, size, "Apply")),
    );
    assert.deepEqual(writerBetween(before, after), { known: "kubectl-edit" });
  });

  it("a new entry is its manager's first write", () => {
    const before = marksOf(object(1, entry("kustomize-controller", 1, modeAndSize, "Apply")));
    const after = marksOf(
      object(2, entry("kustomize-controller", 1, size, "Apply"), entry("alice", 1, mode)),
    );
    assert.deepEqual(writerBetween(before, after), { known: "alice" });
  });

  it("the tie rule decides where no previous event is at hand, or nothing tells", () => {
    const writes = new LastWrites();
    assert.deepEqual(writes.observe("cm", object(1, entry("alice", 5, mode))), {
      unknown: "no previous event",
    });
    const same = marksOf(object(2, entry("alice", 5, mode), entry("kustomize-controller", 5, size, "Apply")));
    assert.deepEqual(writerBetween(same, same), { unknown: "no entry moved" });
    const both = marksOf(object(3, entry("alice", 6, mode), entry("kustomize-controller", 7, size, "Apply")));
    assert.deepEqual(writerBetween(same, both), { unknown: "several entries moved" });
  });

  it("an event no later than the last one seen (a resume replaying it) is compared with nothing", () => {
    const writes = new LastWrites();
    writes.record("cm", object(5, entry("alice", 5, mode)));
    assert.deepEqual(writes.observe("cm", object(4, entry("kustomize-controller", 4, mode, "Apply"))), {
      unknown: "no previous event",
    });
    assert.deepEqual(writes.observe("cm", object(6, entry("alice", 5, mode), entry("bob", 6, size))), {
      known: "bob",
    });
  });

  it("status writes say nothing of who wrote the content", () => {
    const status = { ...entry("kubelet", 9, { "f:status": {} }), subresource: "status" };
    const before = marksOf(object(1, entry("alice", 5, mode)));
    assert.deepEqual(writerBetween(before, marksOf(object(2, entry("alice", 5, mode), status))), {
      unknown: "no entry moved",
    });
  });

  it("names the field paths a tie's Warning lists", () => {
    assert.deepEqual(
      fieldPathsOf({
        "f:data": { ".": {}, "f:mode": {} },
        "f:spec": { "f:containers": { 'k:{"name":"c"}': { "f:image": {} } } },
      }),
      ["data.mode", "spec.containers.[name=c].image"],
    );
  });
});
