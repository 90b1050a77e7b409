import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { parse } from "yaml";
import { toStableYaml } from "../../../internal/sanitize/stableyaml.ts";
import { escapedDoubleQuoted, needsEscaping } from "../../../internal/sanitize/yamlstrings.ts";

// Each character Go's YAML reads otherwise, or refuses: C0, DEL, C1 with NEL, the line and
// paragraph separators, the byte order mark, and the two noncharacters.
const unreadable = [
  "\u0001",
  "\r",
  "\u001b",
  "\u007f",
  "\u0080",
  "\u0085",
  "\u009f",
  "\u2028",
  "\u2029",
  "\ufeff",
  "\ufffe",
  "\uffff",
];

const configMap = (data: Record<string, string>) =>
  toStableYaml({ apiVersion: "v1", kind: "ConfigMap", data } as KubernetesObject);

describe("every file we write reads back the same through Go's YAML", () => {
  for (const ch of unreadable) {
    const code = `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
    it(`${code} is written escaped in double quotes, and only printable characters appear`, () => {
      const value = `before${ch}after`;
      const text = configMap({ key: value });
      assert.equal(needsEscaping(text), false, `the file holds ${code} as it is`);
      assert.match(text, /key: "before\\[xu][0-9A-F]+after"\n/);
      assert.equal((parse(text) as { data: { key: string } }).data.key, value);
    });
  }

  it("printable text is written as before, tabs and emoji included", () => {
    const text = configMap({ a: "x\ty", b: "😀", c: "two\nlines" });
    assert.equal(
      text,
      "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: x\ty\n  b: 😀\n  c: |-\n    two\n    lines\n",
    );
  });

  it("a value with line breaks and a separator keeps its line breaks, escaped", () => {
    assert.equal(escapedDoubleQuoted('a\n"b"\\\u2028'), '"a\\n\\"b\\"\\\\\\u2028"');
  });
});
