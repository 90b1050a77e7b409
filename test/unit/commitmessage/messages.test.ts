import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  commitMessage,
  defaultLiveTemplate,
  defaultReconcileTemplate,
  listedResources,
} from "../../../internal/commitmessage/messages.ts";
import {
  messageData,
  type ChangeInput,
  type MessageInput,
  type Operation,
} from "../../../internal/commitmessage/model.ts";
import { parseTemplate } from "../../../internal/commitmessage/template.ts";

const change = (
  operation: Operation,
  resource: string,
  namespace: string,
  name: string,
  group = "",
): ChangeInput => ({
  operation,
  group,
  version: "v1",
  resource,
  kind: "Kind",
  namespace,
  name,
  path: `clusters/prod/team-a/${namespace}/${resource}/${name}.yaml`,
});

const input = (changes: ChangeInput[], extra: Partial<MessageInput> = {}): MessageInput => ({
  target: { namespace: "team-a", name: "prod", path: "clusters/prod/team-a" },
  author: { name: "Jane", email: "jane@example.com" },
  reason: "live",
  changes,
  ...extra,
});

const message = (changes: ChangeInput[], extra: Partial<MessageInput> = {}, templates = {}) =>
  commitMessage(templates, messageData(input(changes, extra)));

const subject = (text: string) => text.split("\n")[0]!;

const many = (n: number) =>
  Array.from({ length: n }, (_, i) => change("update", "configmaps", "team-a", `config-${i}`));

describe("messageData", () => {
  it("counts each operation, totals them, and keeps the resources in the caller's order", () => {
    const data = messageData(
      input([
        change("update", "configmaps", "team-a", "b"),
        change("create", "deployments", "team-a", "a", "apps"),
        change("update", "configmaps", "team-a", "c"),
      ]),
    );
    assert.deepEqual(data.Counts, { Created: 1, Updated: 2, Deleted: 0, Total: 3 });
    assert.deepEqual(
      data.Resources.map((r) => r.Name),
      ["b", "a", "c"],
    );
    assert.deepEqual(data.Resources[1], {
      Operation: "create",
      Group: "apps",
      Version: "v1",
      Resource: "deployments",
      Kind: "Kind",
      Namespace: "team-a",
      Name: "a",
      Path: "clusters/prod/team-a/team-a/deployments/a.yaml",
    });
    assert.deepEqual(data.GitTarget, { Namespace: "team-a", Name: "prod", Path: "clusters/prod/team-a" });
    assert.deepEqual(data.Author, { Name: "Jane", Email: "jane@example.com" });
  });

  it("has a RequestMessage only when the request gave one", () => {
    assert.equal("RequestMessage" in messageData(input([])), false);
    assert.equal(messageData(input([], { reason: "request", requestMessage: "m" })).RequestMessage, "m");
  });
});

describe("the default messages", () => {
  it("parse, as plain Go templates", () => {
    assert.doesNotThrow(() => parseTemplate(defaultLiveTemplate));
    assert.doesNotThrow(() => parseTemplate(defaultReconcileTemplate));
  });

  it("name the one object a single change touches, in a subject under 72 characters", () => {
    const { message: text } = message([change("update", "configmaps", "team-a", "app-config")]);
    assert.equal(text, "update team-a/configmaps/app-config\n\n- updated configmaps team-a/app-config");
    const clusterScoped = message([
      change("create", "clusterroles", "", "viewer", "rbac.authorization.k8s.io"),
    ]);
    assert.equal(
      clusterScoped.message,
      "create clusterroles/viewer\n\n- created rbac.authorization.k8s.io/clusterroles viewer",
    );
  });

  it("count several changes in their namespace, with a breakdown when operations differ, under 72 characters", () => {
    const mixed = message([
      change("update", "configmaps", "team-a", "a"),
      change("update", "configmaps", "team-a", "b"),
      change("create", "deployments", "team-a", "api", "apps"),
    ]).message;
    assert.equal(subject(mixed), "update 3 resources in team-a (2 updated, 1 created)");
    const deletes = message([
      change("delete", "configmaps", "team-a", "a"),
      change("delete", "secrets", "team-a", "b"),
    ]);
    assert.equal(subject(deletes.message), "delete 2 resources in team-a");
    const allThree = [
      ...Array.from({ length: 40 }, (_, i) => change("update", "configmaps", "team-a", `u${i}`)),
      ...Array.from({ length: 30 }, (_, i) => change("create", "configmaps", "team-a", `c${i}`)),
      ...Array.from({ length: 20 }, (_, i) => change("delete", "configmaps", "team-a", `d${i}`)),
    ];
    const long = subject(message(allThree).message);
    assert.equal(long, "update 90 resources in team-a (40 updated, 30 created, 20 deleted)");
    for (const s of [subject(mixed), subject(deletes.message), long]) assert.ok(s.length < 72, s);
  });

  it("place changes across namespaces, or cluster-scoped ones, in the GitTarget's folder", () => {
    const spread = message([
      change("update", "configmaps", "team-a", "a"),
      change("update", "configmaps", "team-b", "b"),
    ]);
    assert.equal(subject(spread.message), "update 2 resources in clusters/prod/team-a");
    const cluster = message([
      change("create", "namespaces", "", "a"),
      change("create", "namespaces", "", "b"),
    ]);
    assert.equal(subject(cluster.message), "create 2 resources in clusters/prod/team-a");
  });

  it("say a resync was a reconcile, in a subject under 72 characters", () => {
    const { message: text } = message(many(12), { reason: "reconcile" });
    assert.equal(subject(text), "reconcile: 12 resources in clusters/prod/team-a");
    assert.ok(subject(text).length < 72);
  });

  it("follow the subject with a blank line and one line per resource", () => {
    const { message: text } = message([
      change("create", "deployments", "team-a", "api", "apps"),
      change("delete", "configmaps", "team-a", "old"),
    ]);
    assert.deepEqual(text.split("\n").slice(1), [
      "",
      "- created apps/deployments team-a/api",
      "- deleted configmaps team-a/old",
    ]);
  });

  it(`list at most ${listedResources} resources, then say how many more`, () => {
    const lines = message(many(123)).message.split("\n");
    assert.equal(lines.length, 2 + listedResources + 1);
    assert.equal(lines.at(-2), `- updated configmaps team-a/config-${listedResources - 1}`);
    assert.equal(lines.at(-1), "... and 73 more");
    assert.equal(message(many(listedResources)).message.split("\n").length, 2 + listedResources);
  });
});

describe("a GitTarget's templates", () => {
  const changes = [change("update", "configmaps", "team-a", "app")];

  it("are picked by the commit's reason", () => {
    const templates = {
      liveTemplate: "live {{.Author.Name}}",
      reconcileTemplate: "resync {{.Counts.Total}}",
    };
    assert.deepEqual(message(changes, {}, templates), { message: "live Jane" });
    assert.deepEqual(message(changes, { reason: "reconcile" }, templates), { message: "resync 1" });
  });

  it("fall back to the default when they fail, and say which one and why", () => {
    const fallback = message(changes, {}, { liveTemplate: "{{if .Counts.Total}}unclosed" });
    assert.equal(fallback.message, "update team-a/configmaps/app\n\n- updated configmaps team-a/app");
    assert.equal(fallback.fallback?.template, "liveTemplate");
    assert.match(
      fallback.fallback?.reason ?? "",
      /^line 1, column 29: unexpected end of template; expected \{\{end\}\}/,
    );

    const atRender = message(
      changes,
      { reason: "reconcile" },
      { reconcileTemplate: "{{index .Resources 5}}" },
    );
    assert.match(atRender.message, /^reconcile: 1 resource in clusters\/prod\/team-a/);
    assert.deepEqual(atRender.fallback, {
      template: "reconcileTemplate",
      reason: "line 1, column 3: index out of range: 5",
    });

    const blank = message(changes, {}, { liveTemplate: "{{/* nothing */}}  \n" });
    assert.equal(blank.fallback?.reason, "the template rendered an empty message");
  });

  it("frame a request's message, and fall back to it verbatim when they leave it out", () => {
    const request = { reason: "request" as const, requestMessage: "Rotate keys" };
    const framed = message(changes, request, {
      requestTemplate: "{{.RequestMessage}}\n\n{{len .Resources}} resource(s)",
    });
    assert.deepEqual(framed, { message: "Rotate keys\n\n1 resource(s)" });
    const dropped = message(changes, request, {
      requestTemplate: "{{if false}}{{.RequestMessage}}{{end}}saved",
    });
    assert.deepEqual(dropped, {
      message: "Rotate keys",
      fallback: { template: "requestTemplate", reason: "the template did not render the request's message" },
    });
  });
});

describe("a CommitRequest's message", () => {
  const evil = '  Fix {{.Evil}} {{printf "%s" .Author.Email}} {{end}}\n\twith "quotes", é, `ticks`  \n';

  it("is reproduced byte for byte, template-looking text included, because it is data", () => {
    const request = { reason: "request" as const, requestMessage: evil };
    assert.equal(message([change("update", "configmaps", "team-a", "a")], request).message, evil);
    const framed = message([], request, { requestTemplate: "{{.RequestMessage}}" });
    assert.equal(framed.message, evil);
  });

  it("reaches the commit even past the output bound, where the default template cannot render it", () => {
    const huge = "x".repeat(70 * 1024);
    assert.equal(message([], { reason: "request", requestMessage: huge }).message, huge);
  });

  it("is absent when the request gave none, and then the commit reads like live changes", () => {
    const withoutMessage = message(
      [change("update", "configmaps", "team-a", "a")],
      { reason: "request" },
      {
        requestTemplate: "{{.RequestMessage}}",
        liveTemplate: "live: {{.Reason}}",
      },
    );
    assert.deepEqual(withoutMessage, { message: "live: request" });
  });
});
