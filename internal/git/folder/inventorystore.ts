// Where a branch worker keeps its folders' inventories across a restart: beside the clone, in
// its .git directory, which no reset or clean touches and which goes with the clone when it is
// removed. A saved inventory is true of the commit it names, so it is trusted only as that: the
// next refresh compares that commit with the one the worktree is reset to, and reads only what
// changed, or the whole folder when the clone no longer has it. A restart of an operator whose
// folders agree with the cluster then parses nothing.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SavedInventory } from "../../manifest/index.ts";

export class InventoryStore {
  constructor(private readonly cloneDir: string) {}

  private file(folder: string): string {
    const name = createHash("sha256").update(folder).digest("hex").slice(0, 16);
    return join(this.cloneDir, ".git", "gitops-reverser", `inventory-${name}.json`);
  }

  /** The inventory saved for `folder`, if one was and it can be read; read once, at a folder's first use. */
  load(folder: string): SavedInventory | undefined {
    try {
      const saved = JSON.parse(readFileSync(this.file(folder), "utf8")) as SavedInventory;
      return saved.folder === folder ? saved : undefined;
    } catch {
      return undefined;
    }
  }

  /** Saves an inventory, replacing the last one whole, never half-written. */
  async save(saved: SavedInventory): Promise<void> {
    const file = this.file(saved.folder);
    await mkdir(join(this.cloneDir, ".git", "gitops-reverser"), { recursive: true });
    await writeFile(`${file}.tmp`, JSON.stringify(saved));
    await rename(`${file}.tmp`, file);
  }
}
