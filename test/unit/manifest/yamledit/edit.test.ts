import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseAllDocuments } from "yaml";
import {
  appendDocument,
  parseManifestFile,
  removeDocument,
  replaceDocument,
} from "../../../../internal/manifest/yamledit/edit.ts";

// Written by hand: 4-space maps, sequences not indented under their key, a flow sequence, both
// quote styles, end-of-line comments, a comment block between keys and blank lines between sections.
const deployment = `# The API, as the platform team runs it.
apiVersion: apps/v1
kind: Deployment
metadata:
    name: api  # never rename: the Service selects on it
    namespace: "team-a"
    labels:
        app: 'api'
        tier: backend

# Scaling and rollout.
# Keep replicas in step with the HPA minimum.
spec:
    replicas: 3
    selector:
        matchLabels:
            app: 'api'

    template:
        spec:
            containers:
            - name: api
              image: "registry.example.com/api:1.25"  # pinned by release
              args: ["--port", "8080"]
              env:
              - name: MODE
                value: 'fast'   # tuned
              - name: LOG
                value: info
`;

function documents(text: string): unknown[] {
  return parseAllDocuments(text).map((document) => document.toJS() as unknown);
}

function only(text: string): Record<string, unknown> {
  return documents(text)[0] as Record<string, unknown>;
}

/** `object` with the value at `path` set; the original is left as it was. */
function edited(object: unknown, path: (string | number)[], value: unknown): unknown {
  const copy = structuredClone(object) as Record<string | number, unknown>;
  const parent = path
    .slice(0, -1)
    .reduce<Record<string | number, unknown>>(
      (node, key) => node[key] as Record<string | number, unknown>,
      copy,
    );
  parent[path.at(-1)!] = value;
  return copy;
}

function changedLines(before: string, after: string): string[] {
  const old = before.split("\n");
  const next = after.split("\n");
  assert.equal(next.length, old.length, "the edit adds or removes lines");
  return next.filter((line, i) => line !== old[i]);
}

const image = ["spec", "template", "spec", "containers", 0, "image"];

describe("replaceDocument: the minimal change", () => {
  it("changes exactly one line when one field of a commented, hand-formatted Deployment changes", () => {
    const after = replaceDocument(
      deployment,
      0,
      edited(only(deployment), image, "registry.example.com/api:1.27"),
    );
    assert.deepEqual(changedLines(deployment, after), [
      `              image: "registry.example.com/api:1.27"  # pinned by release`,
    ]);
    assert.deepEqual(only(after), edited(only(deployment), image, "registry.example.com/api:1.27"));
  });

  it("keeps a single-quoted string single-quoted and a plain number plain", () => {
    const env = ["spec", "template", "spec", "containers", 0, "env", 0, "value"];
    const after = replaceDocument(
      deployment,
      0,
      edited(edited(only(deployment), env, "slow"), ["spec", "replicas"], 5),
    );
    assert.deepEqual(changedLines(deployment, after), [
      "    replicas: 5",
      "                value: 'slow'   # tuned",
    ]);
  });

  it("patches a flow sequence element by element and keeps it a flow sequence", () => {
    const args = ["spec", "template", "spec", "containers", 0, "args"];
    const longer = replaceDocument(
      deployment,
      0,
      edited(only(deployment), args, ["--port", "9090", "--debug"]),
    );
    assert.deepEqual(changedLines(deployment, longer), [`              args: ["--port", "9090", "--debug"]`]);
    const shorter = replaceDocument(deployment, 0, edited(only(deployment), args, ["--port"]));
    assert.deepEqual(changedLines(deployment, shorter), [`              args: ["--port"]`]);
  });

  it("returns the very same string when the document already equals the desired object", () => {
    const reordered = Object.fromEntries(Object.entries(only(deployment)).reverse());
    assert.equal(replaceDocument(deployment, 0, reordered), deployment);
  });
});

describe("replaceDocument: keys", () => {
  const source = `# config for the worker
kind: ConfigMap
data:
  # how often to poll
  interval: 10s   # seconds are fine
  # the queue to read
  queue: jobs
  retries: 3  # before giving up

  # kept for the old client
  legacy: "true"
`;

  it("removes a key's own lines and the comment above it, and keeps comments on the other keys", () => {
    const after = replaceDocument(source, 0, {
      kind: "ConfigMap",
      data: { interval: "10s", retries: 3, legacy: "true" },
    });
    assert.equal(
      after,
      `# config for the worker
kind: ConfigMap
data:
  # how often to poll
  interval: 10s   # seconds are fine
  retries: 3  # before giving up

  # kept for the old client
  legacy: "true"
`,
    );
  });

  it("adds a new key after the map's last pair, at the map's indentation", () => {
    const after = replaceDocument(source, 0, {
      kind: "ConfigMap",
      data: { interval: "10s", queue: "jobs", retries: 3, legacy: "true", owner: { team: "infra" } },
    });
    assert.equal(after, `${source}  owner:\n    team: infra\n`);
  });

  it("adds and removes keys in one edit, keeping every surviving comment", () => {
    const after = replaceDocument(source, 0, {
      kind: "ConfigMap",
      data: { queue: "jobs", retries: 4, legacy: "true", timeout: "30s" },
    });
    assert.equal(
      after,
      `# config for the worker
kind: ConfigMap
data:
  # the queue to read
  queue: jobs
  retries: 4  # before giving up

  # kept for the old client
  legacy: "true"
  timeout: 30s
`,
    );
  });

  it("removes the first key of a map that opens on a sequence item's line", () => {
    const list = "items:\n- name: a\n  # the value\n  value: 1\n- name: b\n  value: 2\n";
    const after = replaceDocument(list, 0, { items: [{ value: 1 }, { name: "b", value: 2 }] });
    assert.equal(after, "items:\n- # the value\n  value: 1\n- name: b\n  value: 2\n");
  });

  it("adds and removes keys of a flow map inside its braces", () => {
    const flow = "labels: {app: web, tier: 'front'}  # selected on\n";
    assert.equal(
      replaceDocument(flow, 0, { labels: { tier: "front", zone: "a" } }),
      "labels: {tier: 'front', zone: a}  # selected on\n",
    );
    assert.equal(replaceDocument(flow, 0, { labels: {} }), "labels: {}  # selected on\n");
  });
});

describe("replaceDocument: sequences", () => {
  const source = "ports:\n  - 80\n  # the admin port\n  - 8080  # internal\n  - 9090\nname: web\n";

  it("appends new items after the last one, at its column", () => {
    assert.equal(
      replaceDocument(source, 0, { ports: [80, 8080, 9090, 443], name: "web" }),
      "ports:\n  - 80\n  # the admin port\n  - 8080  # internal\n  - 9090\n  - 443\nname: web\n",
    );
  });

  it("removes tail items with their own comments", () => {
    assert.equal(replaceDocument(source, 0, { ports: [80], name: "web" }), "ports:\n  - 80\nname: web\n");
  });

  it("re-renders a value whose kind changes, at the file's indentation", () => {
    assert.equal(
      replaceDocument(source, 0, { ports: { http: 80 }, name: "web" }),
      "ports:\n  http: 80\nname: web\n",
    );
  });
});

describe("replaceDocument: scalars", () => {
  it("quotes a string that YAML 1.1 would read as a bool, a number or a sexagesimal", () => {
    const source = "a: x\nb: x\nc: x\nd: x\ne: x\nf: x\ng: 1\n";
    const desired = { a: "yes", b: "on", c: "1:20", d: "0777", e: "true", f: "null", g: "123" };
    assert.equal(
      replaceDocument(source, 0, desired),
      'a: "yes"\nb: "on"\nc: "1:20"\nd: "0777"\ne: "true"\nf: "null"\ng: "123"\n',
    );
  });

  it("quotes a new key and value that YAML 1.1 would not read as strings", () => {
    assert.equal(replaceDocument("a: 1\n", 0, { a: 1, on: "off" }), 'a: 1\n"on": "off"\n');
  });

  it("round-trips null, empty strings and empty collections exactly", () => {
    const source = "a: 1\nb:\nc: x\nd: [1]\ne: {k: v}\n";
    const desired = { a: null, b: "", c: null, d: [], e: {} };
    const after = replaceDocument(source, 0, desired);
    assert.equal(after, 'a: null\nb: ""\nc: null\nd: []\ne: {}\n');
    assert.deepEqual(only(after), desired);
  });

  it("gives a bare key its value after the colon and keeps the comment there", () => {
    assert.equal(replaceDocument("a: # to be set\nb: 2\n", 0, { a: 1, b: 2 }), "a: 1 # to be set\nb: 2\n");
  });

  it("writes a multi-line string as a block scalar and moves the line's comment onto its header", () => {
    assert.equal(
      replaceDocument("script: echo hi  # entrypoint\nnext: 1\n", 0, { script: "echo a\necho b", next: 1 }),
      "script: |-  # entrypoint\n  echo a\n  echo b\nnext: 1\n",
    );
  });

  it("keeps the comment on a block scalar's header when the scalar changes", () => {
    assert.equal(
      replaceDocument("script: | # run at start\n  echo a\nnext: 1\n", 0, { script: "echo b", next: 1 }),
      "script: |- # run at start\n  echo b\nnext: 1\n",
    );
  });

  it("rewrites a literal block scalar as a literal block scalar", () => {
    assert.equal(
      replaceDocument("script: |\n  echo a\n\nnext: 1\n", 0, { script: "echo b\necho c\n", next: 1 }),
      "script: |\n  echo b\n  echo c\n\nnext: 1\n",
    );
  });
});

describe("replaceDocument: verification and fallback", () => {
  it("falls back to re-rendering when a change reaches an aliased value, keeping the document correct", () => {
    const source = "# shared\nbase: &base\n  size: 1 # small\ncopy: *base\n";
    const desired = { base: { size: 2 }, copy: { size: 1 } };
    const after = replaceDocument(source, 0, desired);
    assert.deepEqual(only(after), desired);
    assert.match(after, /# small/);
  });

  it("patches an alias by writing the value it should have in its place", () => {
    const source = "base: &base\n  size: 1\ncopy: *base\n";
    assert.equal(
      replaceDocument(source, 0, { base: { size: 1 }, copy: { size: 3 } }),
      "base: &base\n  size: 1\ncopy:\n  size: 3\n",
    );
  });

  it("refuses an index the file does not have", () => {
    assert.throws(() => replaceDocument("a: 1\n", 1, {}), RangeError);
  });

  it("refuses a file that does not parse", () => {
    assert.throws(() => parseManifestFile("a: 1\na: 2\n"), /document 0 of the manifest file does not parse/);
  });
});

describe("replaceDocument: line breaks", () => {
  it("writes the lines it adds with a Windows file's \\r\\n", () => {
    assert.equal(
      replaceDocument("a: 1\r\nb:\r\n  c: 2\r\n", 0, { a: 1, b: { c: 3, d: 4 }, e: 5 }),
      "a: 1\r\nb:\r\n  c: 3\r\n  d: 4\r\ne: 5\r\n",
    );
  });

  it("leaves a file without a final line break without one when nothing is added at its end", () => {
    assert.equal(replaceDocument("a: 1\nb: 2", 0, { a: 1, b: 3 }), "a: 1\nb: 3");
  });

  it("starts lines added at the end of a file without a final line break on a line of their own", () => {
    assert.equal(replaceDocument("a:\n  b: 1", 0, { a: { b: 1, c: 2 }, d: 3 }), "a:\n  b: 1\n  c: 2\nd: 3\n");
  });
});

describe("multi-document files", () => {
  const first = "# the namespace\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n";
  const middle =
    "---\n# settings\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast # default\n";
  const last = "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: api\n";
  const file = first + middle + last;

  it("updates a ConfigMap in the middle of three documents, then removes it, without touching its siblings' bytes", () => {
    const configMap = only(middle);
    const updated = replaceDocument(file, 1, { ...configMap, data: { mode: "slow", extra: "yes" } });
    assert.equal(
      updated,
      first + middle.replace("mode: fast # default", 'mode: slow # default\n  extra: "yes"') + last,
    );
    assert.equal(removeDocument(updated, 1), first + last);
  });

  it("removes the first document together with the separator below it", () => {
    assert.equal(removeDocument(file, 0), middle.slice("---\n".length) + last);
  });

  it("removes a first document that opens with its own separator together with that separator", () => {
    assert.equal(removeDocument(`---\n${first}${last}`, 0), last);
  });

  it("removes the last document and the separator above it", () => {
    assert.equal(removeDocument(file, 2), first + middle);
  });

  it("returns undefined when the last document left is removed", () => {
    assert.equal(removeDocument(first, 0), undefined);
  });
});

describe("appendDocument", () => {
  it("adds a document separated by ---, in the file's indentation", () => {
    const after = appendDocument(deployment, {
      kind: "Service",
      spec: { ports: [{ port: 80 }], type: "on" },
    });
    assert.equal(
      after,
      `${deployment}---\nkind: Service\nspec:\n    ports:\n    - port: 80\n    type: "on"\n`,
    );
    assert.equal(documents(after).length, 2);
  });

  it("ends an unterminated last line before the separator", () => {
    assert.equal(appendDocument("a: 1", { b: [1, 2] }), "a: 1\n---\nb:\n  - 1\n  - 2\n");
  });

  it("writes the first document of an empty file without a separator", () => {
    assert.equal(appendDocument("", { a: 1 }), "a: 1\n");
  });
});
