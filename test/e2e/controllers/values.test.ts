// Git holds every value a client set. The projection leaves a value no field manager owns out of
// a document only when a server-side dry-run proves the API server puts back the same value, so
// a Secret written through stringData (owned as stringData, stored as data), an object whose
// managedFields were reset, or a later Update keep their values; and every string reads back
// the same through Go's YAML (kustomize, kubectl, sops). Checked with the real kubectl, sops and
// kustomize, and by applying what Git holds to a second, empty control plane.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { parse, parseAllDocuments, stringify } from "yaml";
import { sanitize } from "../../../internal/sanitize/sanitize.ts";
import { needsEscaping } from "../../../internal/sanitize/yamlstrings.ts";
import { encryptManifest } from "../../../internal/sops/encrypt.ts";
import { defaultsProofs } from "../../../internal/telemetry/instruments.ts";
import { kustomizeBinary } from "../../support/binaries.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { kubectlOk } from "../../support/kubectl.ts";
import { installCrds } from "../../support/manifests.ts";
import { applyMirror } from "../../support/mirror.ts";
import { startOperator } from "../../support/operator.ts";
import { seededRandom } from "../../support/random.ts";
import { startMutatingWebhook, type MutatingWebhook } from "../../support/mutatingwebhook.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { ageIdentity, sopsDecrypt, type AgeIdentity } from "../../support/sops.ts";
import { eventually } from "../../support/wait.ts";
import { snapshotsMeasured } from "./helpers.ts";
import { unreadableRaw } from "../../../internal/sanitize/yamlstrings.ts";
import { awkwardValue, type Reader } from "../../support/characters.ts";

const run = promisify(execFile);
const namespace = "values";
const user = { username: "gitops", password: "git-password-never-in-git" };
const folder = "clusters/values";

interface Made {
  kind: "ConfigMap" | "Secret" | "Deployment" | "Service";
  name: string;
}

/** The resource as kubectl names it. */
const resourceOf: Record<Made["kind"], string> = {
  ConfigMap: "configmaps",
  Secret: "secrets",
  Deployment: "deployments.apps",
  Service: "services",
};
const folderOf: Record<Made["kind"], string> = { ...resourceOf, Deployment: "apps/deployments" };
const pathOf = ({ kind, name }: Made) =>
  `${folder}/${namespace}/${folderOf[kind]}/${name}.${kind === "Secret" ? "sops.yaml" : "yaml"}`;

function manifest({ kind, name }: Made, variant: "stringData" | "mixed" | "plain" = "plain"): object {
  const metadata = { name, namespace, labels: { app: name } };
  switch (kind) {
    case "ConfigMap":
      return { apiVersion: "v1", kind, metadata, data: { mode: "fast", "app.properties": "a=1\nb=2\n" } };
    case "Secret":
      if (variant === "mixed") {
        return {
          apiVersion: "v1",
          kind,
          metadata,
          data: { token: Buffer.from("t0k3n").toString("base64") },
          stringData: { password: "pa55" },
        };
      }
      return variant === "stringData"
        ? { apiVersion: "v1", kind, metadata, stringData: { username: "admin", password: "s3cr3t" } }
        : { apiVersion: "v1", kind, metadata, data: { username: Buffer.from("admin").toString("base64") } };
    case "Deployment":
      return {
        apiVersion: "apps/v1",
        kind,
        metadata,
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: name } },
          template: {
            metadata: { labels: { app: name } },
            spec: { containers: [{ name: "web", image: "nginx:1.27", ports: [{ containerPort: 80 }] }] },
          },
        },
      };
    case "Service":
      return {
        apiVersion: "v1",
        kind,
        metadata,
        spec: { selector: { app: name }, ports: [{ port: 80, targetPort: 8080 }] },
      };
  }
}

describe("Git holds every value a client set", () => {
  let plane: ControlPlane;
  let empty: ControlPlane | undefined;
  let emptyStarting: Promise<ControlPlane> | undefined;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let operator: ReturnType<typeof startOperator>;
  let workerRoot: string;
  let scratch: string;
  let alice: AgeIdentity;
  let webhook: MutatingWebhook | undefined;
  const mutate = { "example.com/mutate": "yes" };
  const injected = { key: "example.com/injected", value: "by-webhook" };
  const start = () =>
    startOperator(kc, { inClusterKubeProviders: [`${namespace}/self`], workerRoot, pushCooldownMs: 0 });
  const show = (path: string) => git.fileAt("state", "main", path);
  const fileIn = (name: string, text: string) => {
    const file = join(scratch, name);
    writeFileSync(file, text);
    return file;
  };
  /** What Git holds for `made`, decrypted when it is a SOPS document. */
  const inGit = async (made: Made): Promise<KubernetesObject> => {
    const text = await show(pathOf(made));
    assert.ok(text, `${pathOf(made)} is in Git`);
    return (
      made.kind === "Secret" ? await sopsDecrypt(scratch, text, alice) : parse(text)
    ) as KubernetesObject;
  };
  const live = async (plane: ControlPlane, made: Made): Promise<KubernetesObject> =>
    JSON.parse(
      await kubectlOk(plane, "get", "-n", namespace, resourceOf[made.kind], made.name, "-o", "json"),
    ) as KubernetesObject;
  /** Every kind `made` names, read from `plane` in one kubectl get: a lookup by kind and name. */
  const liveAll = async (plane: ControlPlane): Promise<(made: Made) => KubernetesObject> => {
    const resources = [...new Set(Object.values(resourceOf))].join(",");
    const list = JSON.parse(await kubectlOk(plane, "get", "-n", namespace, resources, "-o", "json")) as {
      items: KubernetesObject[];
    };
    return (made) => {
      const found = list.items.find((o) => o.kind === made.kind && o.metadata?.name === made.name);
      assert.ok(found, `${made.kind} ${made.name} is live`);
      return found;
    };
  };
  const inGitEventually = (made: Made, holds: (object: KubernetesObject) => boolean, what: string) =>
    eventually(
      async () => {
        const text = await show(pathOf(made));
        if (!text) return false;
        return holds(await inGit(made));
      },
      { timeoutMs: 60_000, description: `${pathOf(made)} ${what}` },
    );

  /** Registers the webhook with `on`, and waits until `on` calls it. */
  const installWebhook = async (on: ControlPlane, hook: MutatingWebhook) => {
    await kubectlOk(
      on,
      "apply",
      "--server-side",
      "-f",
      fileIn("webhook.json", JSON.stringify(hook.configuration)),
    );
    await webhookCalled(on);
  };
  /** Waits until `on` calls the webhook: the API server reads its configurations through an informer. */
  const webhookCalled = async (on: ControlPlane) => {
    const probe = { ...manifest({ kind: "ConfigMap", name: "probe" }) } as KubernetesObject;
    probe.metadata = { name: "probe", namespace, labels: mutate };
    const file = fileIn("probe.json", JSON.stringify(probe));
    await eventually(
      async () => {
        const out = JSON.parse(
          await kubectlOk(on, "create", "--dry-run=server", "-o", "json", "-f", file),
        ) as KubernetesObject;
        return out.metadata?.annotations?.[injected.key] === injected.value;
      },
      { description: "the API server to call the webhook" },
    );
  };

  before(async () => {
    [plane, git] = await Promise.all([ControlPlane.start(), GitServer.start({ users: [user] })]);
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    scratch = makeOwnedTempDir("values");
    alice = await ageIdentity(scratch, "alice");
    await installCrds(kc);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    const url = await git.createRepository("state");
    await applyMirror(kc, namespace, url, user, [
      {
        name: "values",
        path: folder,
        recipients: [alice.recipient],
        rules: [
          { apiGroups: [""], resources: ["configmaps", "secrets", "services"] },
          { apiGroups: ["apps"], resources: ["deployments"] },
        ],
      },
    ]);
    workerRoot = makeOwnedTempDir("workers");
    operator = start();
  });
  after(async () => {
    await operator?.stop();
    await git?.close();
    await plane?.stop();
    // Started in the background: a test that failed before awaiting it still stops it.
    empty ??= await emptyStarting?.catch(() => undefined);
    await empty?.stop();
    await webhook?.close();
    if (workerRoot) removeOwnedTempDir(workerRoot);
    if (scratch) removeOwnedTempDir(scratch);
  });

  it("a Secret created from stringData is in Git with every key", async () => {
    const made: [Made, string[]][] = [];
    const apply = async (name: string, variant: "stringData" | "mixed", ...flags: string[]) => {
      const secret: Made = { kind: "Secret", name };
      const file = fileIn(`${name}.yaml`, stringify(manifest(secret, variant)));
      await kubectlOk(plane, "apply", ...flags, "-f", file);
      made.push([secret, variant === "mixed" ? ["password", "token"] : ["password", "username"]]);
    };
    await apply("from-string-data", "stringData");
    await apply("from-string-data-ssa", "stringData", "--server-side");
    await apply("from-data-and-string-data", "mixed");
    await kubectlOk(
      plane,
      "create",
      "secret",
      "generic",
      "from-literal",
      "-n",
      namespace,
      "--from-literal=password=x",
      "--from-literal=username=y",
    );
    made.push([{ kind: "Secret", name: "from-literal" }, ["password", "username"]]);

    for (const [secret, keys] of made) {
      await inGitEventually(
        secret,
        (o) => Object.keys((o as { data?: object }).data ?? {}).length === keys.length,
        "holds every key",
      );
      const written = (await inGit(secret)) as KubernetesObject & {
        data: Record<string, string>;
        stringData?: unknown;
      };
      const current = (await live(plane, secret)) as KubernetesObject & { data: Record<string, string> };
      assert.deepEqual(Object.keys(written.data).sort(), keys);
      assert.deepEqual(written.data, current.data, `${secret.name}: sops -d gives the live values`);
      assert.equal(written.stringData, undefined, "stringData is never written");
    }
  });

  it("every creation method round-trips into an empty control plane", async () => {
    const kinds: Made["kind"][] = ["ConfigMap", "Secret", "Deployment", "Service"];
    const made: Made[] = [];
    // The second control plane starts while the first is written to: it is needed only at the end.
    emptyStarting = ControlPlane.start();
    emptyStarting.catch(() => undefined);
    // The four kinds of a method at once: each object's kubectl calls still run in their order.
    const each = async (method: string, act: (m: Made, file: string) => Promise<unknown>) => {
      const methodMade = kinds.map((kind): Made => ({ kind, name: `${method}-${kind.toLowerCase()}` }));
      await Promise.all(
        methodMade.map((m) => {
          const variant = m.kind === "Secret" && method !== "create" ? "stringData" : "plain";
          return act(m, fileIn(`${m.name}.yaml`, stringify(manifest(m, variant))));
        }),
      );
      made.push(...methodMade);
    };
    await each("create", (_, file) => kubectlOk(plane, "create", "-f", file));
    await each("apply", (_, file) => kubectlOk(plane, "apply", "-f", file));
    await each("server-side", (_, file) => kubectlOk(plane, "apply", "--server-side", "-f", file));
    // A controller's Update after an apply: it owns what it changed, the applier the rest.
    await each("updated", async (m, file) => {
      await kubectlOk(plane, "apply", "--server-side", "--field-manager=flux", "-f", file);
      await kubectlOk(
        plane,
        "annotate",
        "-n",
        namespace,
        resourceOf[m.kind],
        m.name,
        "example.com/touched=yes",
      );
    });
    // managedFields reset: nobody owns anything, then one label's Update owns only that label.
    await each("reset", async (m, file) => {
      await kubectlOk(plane, "apply", "--server-side", "-f", file);
      await kubectlOk(
        plane,
        "patch",
        "-n",
        namespace,
        resourceOf[m.kind],
        m.name,
        "--type=merge",
        "-p",
        '{"metadata":{"managedFields":[{}]}}',
      );
      await kubectlOk(
        plane,
        "label",
        "-n",
        namespace,
        resourceOf[m.kind],
        m.name,
        "example.com/relabelled=yes",
      );
    });

    // A mutating admission webhook annotates what carries its label: the API server stores it.
    webhook = await startMutatingWebhook(scratch, "values-injector", mutate, injected);
    await installWebhook(plane, webhook);
    await each("mutated", async (m, file) => {
      const labelled = manifest(m) as { metadata: { labels: Record<string, string> } };
      labelled.metadata.labels = { ...labelled.metadata.labels, ...mutate };
      // JSON: YAML 1.2 would write the label's "yes" plain, which Go's YAML 1.1 reads as true.
      writeFileSync(file, JSON.stringify(labelled));
      await kubectlOk(plane, "apply", "--server-side", "-f", file);
      const stored = await live(plane, m);
      assert.equal(stored.metadata?.annotations?.[injected.key], injected.value, "the webhook annotated it");
    });

    for (const m of made) await inGitEventually(m, (o) => o.metadata?.name === m.name, "is written");
    const applied = fileIn(
      "service-account-less-namespace.yaml",
      stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } }),
    );
    empty = await emptyStarting;
    await kubectlOk(empty, "apply", "--server-side", "-f", applied);
    // What a webhook adds is left out of Git as a default is: the API server puts it back. So a
    // cluster configured the same recreates the object; this one gets the same webhook.
    await installWebhook(empty, webhook);
    // What Git holds settles: a later write (the reset's label) may still be on its way. Every
    // file goes in one kubectl apply and each cluster is read in one kubectl get: a kubectl per
    // object and per read, 72 processes, was most of this test's time.
    const fromGit = join(scratch, "from-git");
    mkdirSync(fromGit, { recursive: true });
    await eventually(
      async () => {
        for (const m of made) writeFileSync(join(fromGit, `${m.name}.json`), JSON.stringify(await inGit(m)));
        await kubectlOk(empty!, "apply", "--server-side", "--force-conflicts", "-f", fromGit);
        const [copy, original] = await Promise.all([liveAll(empty!), liveAll(plane)]);
        const each = (read: (m: Made) => KubernetesObject) =>
          Object.fromEntries(made.map((m) => [`${m.kind} ${m.name}`, sanitize(read(m))]));
        // Thrown, so a timeout says what differed last, under each object's kind and name.
        assert.deepEqual(each(copy), each(original));
        return true;
      },
      { timeoutMs: 60_000, description: "every object applied from Git equals live" },
    );
  });

  it("values with line separators and control characters read back the same through kustomize, sops and kubectl", async () => {
    const random = seededRandom(20261203);
    // Every character class, and (for the ConfigMaps kustomize reads) those kustomize can carry
    // through its own output (test/support/characters.ts; the others go to the ConfigMaps that
    // kubectl and sops read back: docs/sanitize.md).
    const valueOf = (through: Reader) => awkwardValue(random, through);
    const configMaps: [Made, Reader][] = [];
    for (let c = 0; c < 6; c++) {
      const through: Reader = c < 3 ? "kustomize" : "kubectl";
      const m: Made = { kind: "ConfigMap", name: `chars-${c}` };
      const data = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, valueOf(through)]));
      const annotations = {
        "example.com/note": valueOf(through),
        ...(through === "kubectl" ? { "example.com/nel": "one\u0085two\u2028three" } : {}),
      };
      await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: m.name, annotations }, data },
      });
      configMaps.push([m, through]);
    }
    const secret: Made = { kind: "Secret", name: "chars-secret" };
    await core.createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: secret.name, annotations: { "example.com/nel": "one\u0085two\u2028three\u0080" } },
        stringData: { value: valueOf("kubectl") },
      },
    });

    const root = join(scratch, "kustomize");
    mkdirSync(root, { recursive: true });
    for (const [m, through] of configMaps) {
      await inGitEventually(m, (o) => o.metadata?.name === m.name, "is written");
      const current = (await live(plane, m)) as KubernetesObject & { data?: unknown };
      const text = (await show(pathOf(m)))!;
      assert.equal(needsEscaping(text), false, `${m.name}: only printable characters are in the file`);
      // kubectl, which sends what it read to the API server as JSON. (Its server-side apply
      // sends YAML of its own encoding, which cannot carry DEL or a C1 control, as kustomize's.)
      const readback = fileIn(`${m.name}.readback.yaml`, text);
      const dryRun = JSON.parse(
        await kubectlOk(plane, "replace", "--dry-run=server", "-o", "json", "-f", readback),
      ) as KubernetesObject & { data?: unknown };
      assert.deepEqual(dryRun.data, current.data, `${m.name}: kubectl reads the live data`);
      assert.deepEqual(dryRun.metadata?.annotations, current.metadata?.annotations);
      if (through !== "kustomize") continue;
      // kustomize, which Flux builds a folder with.
      writeFileSync(join(root, "cm.yaml"), text);
      writeFileSync(join(root, "kustomization.yaml"), "resources:\n  - cm.yaml\n");
      const { stdout } = await run(kustomizeBinary(), ["build", root]);
      const built = parseAllDocuments(stdout)[0]!.toJS() as KubernetesObject & { data?: unknown };
      assert.deepEqual(built.data, current.data, `${m.name}: kustomize build reads the live data`);
      assert.deepEqual(
        built.metadata?.annotations,
        current.metadata?.annotations,
        `${m.name}: and its annotations`,
      );
    }
    // sops verifies its MAC over the values as Go reads them.
    await inGitEventually(secret, (o) => o.metadata?.name === secret.name, "is written");
    const decrypted = await inGit(secret);
    const current = await live(plane, secret);
    assert.deepEqual(decrypted.metadata?.annotations, current.metadata?.annotations);
    assert.deepEqual((decrypted as { data?: unknown }).data, (current as { data?: unknown }).data);
  });

  it("one dry-run proves every object of the same kind and shape", async () => {
    const proofs = async () => (await defaultsProofs.get()).values.reduce((sum, { value }) => sum + value, 0);
    const before = await proofs();
    const names = Array.from({ length: 40 }, (_, i) => `shape-${i}`);
    // A shape no earlier test made: three replicas.
    const shaped = (name: string) => {
      const deployment = manifest({ kind: "Deployment", name }) as { spec: { replicas: number } };
      deployment.spec.replicas = 3;
      return deployment;
    };
    await kubectlOk(
      plane,
      "apply",
      "--server-side",
      "-f",
      fileIn("shapes.yaml", names.map((name) => stringify(shaped(name))).join("---\n")),
    );
    for (const name of names) {
      await inGitEventually({ kind: "Deployment", name }, (o) => o.metadata?.name === name, "is written");
    }
    const written = (await inGit({ kind: "Deployment", name: "shape-7" })) as KubernetesObject & {
      spec: { revisionHistoryLimit?: number; replicas?: number };
    };
    assert.equal(written.spec.replicas, 3, "what the manifest set");
    assert.equal(written.spec.revisionHistoryLimit, undefined, "a proven default stays out");
    // Forty Deployments that differ in name and labels, one shape: one dry-run.
    assert.equal((await proofs()) - before, 1);
  });

  it("a folder missing values heals on the next resync", async () => {
    const secret: Made = { kind: "Secret", name: "heal-secret" };
    const configMap: Made = { kind: "ConfigMap", name: "heal-config" };
    await kubectlOk(
      plane,
      "apply",
      "--server-side",
      "-f",
      fileIn("heal-secret.yaml", stringify(manifest(secret, "stringData"))),
    );
    await kubectlOk(
      plane,
      "apply",
      "--server-side",
      "-f",
      fileIn("heal-config.yaml", stringify(manifest(configMap))),
    );
    await inGitEventually(secret, (o) => (o as { data?: object }).data !== undefined, "is written");
    await inGitEventually(configMap, (o) => o.metadata?.name === configMap.name, "is written");

    // What the faulty rule wrote: the Secret without data, the ConfigMap without one key.
    await operator.stop();
    const lacking = await encryptManifest(
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: secret.name, namespace, labels: { app: secret.name } },
      },
      { recipients: [alice.recipient] },
    );
    const partial = stringify({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: configMap.name, namespace, labels: { app: configMap.name } },
      data: { mode: "fast" },
    });
    await git.pushForeignCommit("state", {
      files: { [pathOf(secret)]: lacking, [pathOf(configMap)]: partial },
    });

    operator = start();
    await snapshotsMeasured(kc, namespace, "values", 4);
    await inGitEventually(
      secret,
      (o) => Object.keys((o as { data?: object }).data ?? {}).length === 2,
      "holds its data again",
    );
    await inGitEventually(
      configMap,
      (o) => Object.keys((o as { data?: object }).data ?? {}).length === 2,
      "holds every key again",
    );
    assert.deepEqual(
      ((await inGit(secret)) as { data?: unknown }).data,
      ((await live(plane, secret)) as { data?: unknown }).data,
    );
  });

  it("a file with raw control characters written by an earlier version heals on the next resync", async () => {
    const made: Made = { kind: "ConfigMap", name: "raw-config" };
    await core.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: { name: made.name, labels: { app: made.name } },
        data: { mode: "fast", note: "one\u0085two" },
      },
    });
    await inGitEventually(
      made,
      (o) => (o as { data?: Record<string, string> }).data?.note === "one\u0085two",
      "is written",
    );
    // As an earlier version wrote it: NEL raw, which Go's YAML readers take for a line break.
    await operator.stop();
    const raw = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${made.name}\n  namespace: ${namespace}\n  labels:\n    app: ${made.name}\ndata:\n  mode: fast\n  note: one\u0085two\n`;
    await git.pushForeignCommit("state", { files: { [pathOf(made)]: raw } });
    operator = start();
    await snapshotsMeasured(kc, namespace, "values", 4);
    const text = await eventually(
      async () => {
        const now = await show(pathOf(made));
        return now !== undefined && unreadableRaw(now) === undefined && now;
      },
      { timeoutMs: 60_000, description: "the file rewritten readable" },
    );
    // kubectl, a Go reader, reads the live value from it.
    const read = JSON.parse(
      await kubectlOk(
        plane,
        "create",
        "--dry-run=client",
        "-o",
        "json",
        "-f",
        fileIn("raw-config.yaml", text),
      ),
    ) as { data?: Record<string, string> };
    assert.deepEqual(read.data, { mode: "fast", note: "one\u0085two" });
    assert.ok(
      operator.logs.some((l) => l.startsWith("rewrote a file Go's YAML readers refused")),
      "the heal is logged",
    );
  });
});
