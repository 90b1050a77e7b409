import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { InventoryStore } from "../../../../internal/git/folder/inventorystore.ts";

describe("the inventories a worker keeps beside its clone", () => {
  const dir = mkdtempSync(join(tmpdir(), "inventorystore-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const saved = (folder: string) => ({ version: 3 as const, folder, commit: "abc", ignore: "", files: [] });

  it("gives back what was saved, per folder", async () => {
    const store = new InventoryStore(dir);
    await store.save(saved("clusters/a"));
    await store.save(saved("clusters/b"));
    assert.deepEqual(store.load("clusters/a"), saved("clusters/a"));
    assert.deepEqual(store.load("clusters/b"), saved("clusters/b"));
    assert.equal(store.load("clusters/c"), undefined);
  });

  it("takes nothing from a file it cannot read, so the folder is read whole", async () => {
    const store = new InventoryStore(join(dir, "broken"));
    await store.save(saved("f"));
    const [file] = readdirSync(join(dir, "broken", ".git", "gitops-reverser"));
    writeFileSync(join(dir, "broken", ".git", "gitops-reverser", file!), "{ half");
    assert.equal(store.load("f"), undefined);
  });
});
