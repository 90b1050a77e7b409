import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parse } from "yaml";
import type { DecidedWrite } from "../../../internal/git/folder/writes.ts";
import { FolderInventory } from "../../../internal/manifest/inventory/inventory.ts";
import { MemoryTree } from "./memorytree.ts";
import { apply, id, write } from "./materializefixtures.ts";

// An X25519 recipient (age-keygen's format); the writer needs no identity, only public keys.
const recipient = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p";
const secret = {
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: "db", namespace: "apps" },
  data: { password: "aHVudGVyMg==" },
};
const secretId = id("db", "apps", "secrets", "Secret");

function encrypted(changes: DecidedWrite["changes"]): DecidedWrite {
  const w = write(changes);
  return { ...w, target: { ...w.target, encryption: { recipients: [recipient] } } };
}

describe("sensitive documents are written only as SOPS documents, each in a file of its own", () => {
  it("a new Secret is a SOPS document at the built-in .sops.yaml path, beside a .sops.yaml", async () => {
    const tree = new MemoryTree();
    await apply(tree, encrypted([{ op: "upsert", identity: secretId, object: secret }]));
    const text = tree.files.get("clusters/dev/apps/secrets/db.sops.yaml")!;
    assert.doesNotMatch(text, /aHVudGVyMg==/);
    const document = parse(text) as { data: { password: string }; sops: { age: { recipient: string }[] } };
    assert.match(document.data.password, /^ENC\[AES256_GCM,/);
    assert.equal(document.sops.age[0]?.recipient, recipient);
    assert.match(tree.files.get("clusters/dev/.sops.yaml")!, new RegExp(`age: ${recipient}`));
  });

  it("an unchanged Secret is left alone, a changed one encrypted again", async () => {
    const tree = new MemoryTree();
    const inventory = new FolderInventory("clusters/dev");
    await apply(tree, encrypted([{ op: "upsert", identity: secretId, object: secret }]), [], inventory);
    const first = tree.files.get("clusters/dev/apps/secrets/db.sops.yaml");
    const unchanged = await apply(
      tree,
      encrypted([{ op: "upsert", identity: secretId, object: secret }]),
      [],
      inventory,
    );
    assert.equal(unchanged, undefined, "no commit");
    assert.equal(tree.files.get("clusters/dev/apps/secrets/db.sops.yaml"), first);
    const edited = { ...secret, data: { password: "b3RoZXI=" } };
    await apply(tree, encrypted([{ op: "upsert", identity: secretId, object: edited }]), [], inventory);
    assert.notEqual(tree.files.get("clusters/dev/apps/secrets/db.sops.yaml"), first);
  });

  it("an edit of a Secret the folder holds in plaintext is refused, never rewritten; one that agrees is unchanged", async () => {
    const plaintext =
      "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: apps\ndata:\n  password: aHVudGVyMg==\n";
    const tree = new MemoryTree({ "clusters/dev/db.yaml": plaintext });
    const refused: string[] = [];
    const edited = { ...secret, data: { password: "b3RoZXI=" } };
    await apply(tree, encrypted([{ op: "upsert", identity: secretId, object: edited }]), refused);
    assert.deepEqual(refused, ["db"]);
    assert.equal(tree.files.get("clusters/dev/db.yaml"), plaintext);
    // What the document holds already is no edit: nothing to refuse, nothing written.
    const agreeing: string[] = [];
    const commit = await apply(
      tree,
      encrypted([{ op: "upsert", identity: secretId, object: secret }]),
      agreeing,
    );
    assert.deepEqual(agreeing, []);
    assert.equal(commit, undefined, "no commit");
    assert.equal(tree.files.get("clusters/dev/db.yaml"), plaintext);
  });

  it("a recipient age refuses fails the write before any file is made", async () => {
    const tree = new MemoryTree();
    const refused: string[] = [];
    const w = write([{ op: "upsert", identity: secretId, object: secret }]);
    const bad = { ...w, target: { ...w.target, encryption: { recipients: [`${recipient.slice(0, -1)}q`] } } };
    await apply(tree, bad, refused);
    assert.deepEqual(refused, ["db"]);
    assert.equal(tree.files.size, 0);
  });

  it("the .sops.yaml the operator wrote follows the recipients; one a person wrote is kept", async () => {
    const other = "age1lggyhqrw2nlhcxprm67z43rta597azn8gknawjehu9d9dl0jq3yqqvfafg";
    const tree = new MemoryTree();
    const inventory = new FolderInventory("clusters/dev");
    await apply(tree, encrypted([{ op: "upsert", identity: secretId, object: secret }]), [], inventory);
    const rotated = encrypted([{ op: "upsert", identity: secretId, object: secret }]);
    rotated.target.encryption = { recipients: [recipient, other] };
    await apply(tree, rotated, [], inventory);
    assert.match(tree.files.get("clusters/dev/.sops.yaml")!, new RegExp(`age: ${recipient},${other}`));

    const own = "creation_rules:\n  - age: age1mine\n";
    const person = new MemoryTree({ "clusters/dev/.sops.yaml": own });
    await apply(person, encrypted([{ op: "upsert", identity: secretId, object: secret }]));
    assert.equal(person.files.get("clusters/dev/.sops.yaml"), own);
  });
});
