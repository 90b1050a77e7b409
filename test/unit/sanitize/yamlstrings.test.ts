import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { parse } from "yaml";
import { toStableYaml } from "../../../internal/sanitize/stableyaml.ts";
import {
  escapedDoubleQuoted,
  kustomizeCannotCarry,
  needsEscaping,
  uncarriedField,
} from "../../../internal/sanitize/yamlstrings.ts";

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

describe("what kustomize build cannot carry", () => {
  it("DEL, the C1 controls but NEL, a lone surrogate, U+FFFE and U+FFFF fail its build; NEL comes back as a space", () => {
    for (const code of [0x7f, 0x80, 0x84, 0x86, 0x9f, 0xd800, 0xdfff, 0xfffe, 0xffff])
      assert.deepEqual(kustomizeCannotCarry(`a${String.fromCharCode(code)}b`), {
        codePoint: code,
        effect: "refused",
      });
    assert.deepEqual(kustomizeCannotCarry("a\u0085b"), { codePoint: 0x85, effect: "changed" });
  });

  it("C0 controls, U+2028, U+2029, U+FEFF, a surrogate pair and plain text come back the same", () => {
    for (const value of ["\x00\x01\x1f\t\r\n", "a\u2028b\u2029c", "\ufeffx", "😀", "plain", "ünïcödé €"])
      assert.equal(kustomizeCannotCarry(value), undefined, JSON.stringify(value));
  });

  it("names the first field that holds one, in values, keys and lists alike", () => {
    const object = {
      metadata: { name: "x", annotations: { "example.com/ok": "fine" } },
      data: { plain: "ok", note: "one\u0085two" },
    };
    assert.deepEqual(uncarriedField(object), { codePoint: 0x85, effect: "changed", field: "data.note" });
    assert.deepEqual(uncarriedField({ spec: { items: ["a", "b\x7f"] } }), {
      codePoint: 0x7f,
      effect: "refused",
      field: "spec.items[1]",
    });
    assert.deepEqual(uncarriedField({ data: { "key\u009b": "v" } }), {
      codePoint: 0x9b,
      effect: "refused",
      field: "data.key\u009b",
    });
    assert.equal(uncarriedField({ data: { a: "b", n: 1, t: true, z: null } }), undefined);
    // kustomize encodes every annotation again, and refuses one that starts with a tab and holds
    // a line feed however it was quoted; the same value in data is carried.
    assert.deepEqual(uncarriedField({ metadata: { annotations: { "example.com/x": "\ta\nb" } } }), {
      codePoint: 0x09,
      effect: "refused",
      field: "metadata.annotations.example.com/x",
    });
    assert.equal(uncarriedField({ data: { x: "\ta\nb" } }), undefined);
    assert.equal(uncarriedField({ metadata: { annotations: { x: "\ta\nb " } } }), undefined);
  });
});

describe("multi-line values Go's YAML readers would misread as block scalars", () => {
  it("a value whose first non-empty line starts with a tab, or of blank lines only, is written double-quoted; any other stays a block", () => {
    // Go takes a block's indentation from its first line that is not all spaces and refuses a
    // tab there (kustomize: "found a tab character where an indentation space is expected"); a
    // block of blank lines loses its spaces. Both failed `kustomize build` of our own files.
    const quoted = { a: "\tx\ny", b: "\n\tx\ny\n", c: " \n", d: "\t\n", e: "\n\n" };
    const block = { f: "x\n\ty", g: "  \tx\ny", h: "a\nb\n" };
    const text = toStableYaml({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c" },
      data: { ...quoted, ...block },
    } as KubernetesObject);
    for (const [key, value] of Object.entries(quoted)) {
      assert.ok(needsEscaping(value), key);
      assert.ok(text.includes(`  ${key}: ${escapedDoubleQuoted(value)}\n`), `${key} quoted in:\n${text}`);
    }
    for (const [key, value] of Object.entries(block)) {
      assert.equal(needsEscaping(value), false, key);
      assert.match(text, new RegExp(`\\n {2}${key}: \\|`), `${key} a block`);
    }
    assert.deepEqual((parse(text) as { data: unknown }).data, { ...quoted, ...block });
  });
});
