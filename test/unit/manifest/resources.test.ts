import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { parse } from "yaml";
import { addResourceEntry, removeResourceEntry } from "../../../internal/manifest/resources.ts";

const lines = (...text: string[]) => text.join("\n");

describe("adding a kustomization resources entry", () => {
  it("adds one line after the last item of a block list, at its indentation, every other byte kept", () => {
    const source = lines(
      "# generated once, edited by hand since",
      "kind: Kustomization",
      "resources:",
      "  - a.yaml   # first",
      "  - 'b.yaml'",
      "  # - c.yaml (disabled)",
      "patches:",
      "  - path: patch.yaml",
      "",
    );
    assert.equal(
      addResourceEntry(source, "new.yaml"),
      lines(
        "# generated once, edited by hand since",
        "kind: Kustomization",
        "resources:",
        "  - a.yaml   # first",
        "  - 'b.yaml'",
        "  - new.yaml",
        "  # - c.yaml (disabled)",
        "patches:",
        "  - path: patch.yaml",
        "",
      ),
    );
  });

  it("keeps a list written without indentation unindented", () => {
    assert.equal(
      addResourceEntry("resources:\n- a.yaml\nnamespace: x\n", "new.yaml"),
      "resources:\n- a.yaml\n- new.yaml\nnamespace: x\n",
    );
  });

  it("adds after a multi-line last item, not inside it", () => {
    assert.equal(
      addResourceEntry("resources:\n- a.yaml\n- >-\n  folded\n  name.yaml\nnamespace: x\n", "new.yaml"),
      "resources:\n- a.yaml\n- >-\n  folded\n  name.yaml\n- new.yaml\nnamespace: x\n",
    );
  });

  it("keeps CRLF line endings and a missing final newline", () => {
    assert.equal(
      addResourceEntry("resources:\r\n- a.yaml\r\n", "b.yaml"),
      "resources:\r\n- a.yaml\r\n- b.yaml\r\n",
    );
    assert.equal(addResourceEntry("resources:\n- a.yaml", "b.yaml"), "resources:\n- a.yaml\n- b.yaml");
  });

  it("returns the same string when the entry is already listed", () => {
    const source = "resources: [ a.yaml,   b.yaml ]  # odd spacing\n";
    assert.equal(addResourceEntry(source, "b.yaml"), source);
  });

  it("adds an absent resources as a block list at the end of the top-level map", () => {
    assert.equal(
      addResourceEntry("kind: Kustomization\nnamespace: team-a # theirs\n\n# the end\n", "new.yaml"),
      "kind: Kustomization\nnamespace: team-a # theirs\nresources:\n- new.yaml\n\n# the end\n",
    );
  });

  it("indents a new list like the file's other top-level lists", () => {
    assert.equal(
      addResourceEntry("kind: Kustomization\ncomponents:\n    - ../base\n", "new.yaml"),
      "kind: Kustomization\ncomponents:\n    - ../base\nresources:\n    - new.yaml\n",
    );
  });

  it("adds to a flow list inside the list, comments kept", () => {
    assert.equal(
      addResourceEntry("# top\nresources: [a.yaml] # inline\nnamespace: x\n", "new.yaml"),
      "# top\nresources: [ a.yaml, new.yaml ] # inline\nnamespace: x\n",
    );
  });

  it("turns an empty resources: into a list holding the entry", () => {
    assert.equal(
      addResourceEntry("resources:\nnamespace: x\n", "new.yaml"),
      "resources:\n- new.yaml\nnamespace: x\n",
    );
  });

  it("quotes an entry YAML 1.1 would read as a boolean", () => {
    assert.equal(addResourceEntry("resources:\n- a.yaml\n", "yes"), 'resources:\n- a.yaml\n- "yes"\n');
  });

  it("refuses a kustomization that is not a map, or whose resources is not a list", () => {
    assert.throws(() => addResourceEntry("- a.yaml\n", "b.yaml"), /not a YAML map/);
    assert.throws(() => addResourceEntry("resources: a.yaml\n", "b.yaml"), /resources is not a list/);
  });

  it("adds exactly one line to a block list and changes the parsed kustomization by that entry alone", () => {
    const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,8}\.yaml$/);
    const indent = fc.constantFrom("", "  ", "    ");
    fc.assert(
      fc.property(
        fc.uniqueArray(name, { minLength: 1, maxLength: 5 }),
        name,
        indent,
        (listed, entry, pad) => {
          fc.pre(!listed.includes(entry));
          const source = `kind: Kustomization\nresources:\n${listed.map((n) => `${pad}- ${n} # ${n}\n`).join("")}namespace: x\n`;
          const result = addResourceEntry(source, entry);
          const added = result.split("\n");
          assert.deepEqual(added.toSpliced(2 + listed.length, 1), source.split("\n"));
          assert.equal(added[2 + listed.length], `${pad}- ${entry}`);
          assert.deepEqual(parse(result), {
            kind: "Kustomization",
            resources: [...listed, entry],
            namespace: "x",
          });
          assert.equal(addResourceEntry(result, entry), result);
        },
      ),
    );
  });
});

describe("removeResourceEntry", () => {
  const source = `# the production overlay
resources:
  - deployment.yaml # the app
  - old-configmap.yaml
  - service.yaml
images:
  - name: nginx
    newTag: "1.25"
`;

  it("cuts the one line naming a removed file, and keeps every other byte", () => {
    assert.equal(
      removeResourceEntry(source, "old-configmap.yaml"),
      source.replace("  - old-configmap.yaml\n", ""),
    );
  });

  it("returns the same string when the entry is not listed", () => {
    assert.equal(removeResourceEntry(source, "missing.yaml"), source);
  });

  it("leaves an empty list, not a null, when the last entry goes", () => {
    const result = removeResourceEntry("resources:\n  - only.yaml\n", "only.yaml");
    assert.deepEqual(parse(result), { resources: [] });
  });
});
