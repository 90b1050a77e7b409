// The OLM bundle (bundle/, bundle.Dockerfile): exactly what make bundle writes from config/ and
// the chart; checked by the operator-framework's own validation library (hack/olm/validate, the
// library `operator-sdk bundle validate` runs), which must pass it and must refuse a broken copy;
// and what OLM would create from it (the CRDs, the CSV's RBAC and Deployment) accepted by a real
// API server's server-side dry run.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { parse, parseAllDocuments, stringify } from "yaml";
import type { Crd, KubeObject, Rule } from "../../../hack/olm/csv.ts";
import { readInputs, renderBundle } from "../../../hack/olm/files.ts";
import { olmValidateBinary, repoRoot } from "../../support/binaries.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { kubectl } from "../../support/kubectl.ts";
import { assertDryRunAccepts, grants, type Manifest } from "../../support/rendered.ts";

const exec = promisify(execFile);
const csvFile = "bundle/manifests/gitops-reverser.clusterserviceversion.yaml";

interface Finding {
  validator: string;
  detail: string;
}
interface Report {
  passed: boolean;
  csv: string;
  crds: number;
  validators: string[];
  errors: Finding[];
  warnings: Finding[];
}

/** Runs the validator on a bundle directory: its exit code and its JSON report. */
async function validate(dir: string): Promise<{ code: number; report: Report }> {
  try {
    const { stdout } = await exec(olmValidateBinary(), [dir], { maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, report: JSON.parse(stdout) as Report };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    assert.ok(failed.stdout, `the validator printed no report: ${failed.stderr}`);
    return { code: failed.code ?? -1, report: JSON.parse(failed.stdout) as Report };
  }
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => relative(repoRoot, join(e.parentPath, e.name)));
}

async function readYaml<T>(path: string): Promise<T> {
  return parse(await readFile(join(repoRoot, path), "utf8")) as T;
}

async function readObjects(path: string): Promise<KubeObject[]> {
  return parseAllDocuments(await readFile(join(repoRoot, path), "utf8")).map((d) => d.toJS() as KubeObject);
}

interface Csv extends KubeObject {
  spec: {
    version: string;
    maturity: string;
    minKubeVersion: string;
    icon: { base64data: string; mediatype: string }[];
    installModes: { type: string; supported: boolean }[];
    customresourcedefinitions: {
      owned: {
        name: string;
        version: string;
        kind: string;
        displayName: string;
        description: string;
        specDescriptors: { path: string; description?: string }[];
        statusDescriptors: { path: string; "x-descriptors"?: string[] }[];
      }[];
    };
    install: {
      strategy: string;
      spec: {
        clusterPermissions: { serviceAccountName: string; rules: Rule[] }[];
        permissions: { serviceAccountName: string; rules: Rule[] }[];
        deployments: { name: string; spec: Record<string, unknown> }[];
      };
    };
  };
}

/** A copy of bundle/ with its CSV changed by `edit`, in a folder removed after the test. */
async function brokenCopy(edit: (csv: Csv) => void): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "bundle-"));
  await cp(join(repoRoot, "bundle"), dir, { recursive: true });
  const path = join(dir, "manifests/gitops-reverser.clusterserviceversion.yaml");
  const csv = parse(await readFile(path, "utf8")) as Csv;
  edit(csv);
  await writeFile(path, stringify(csv));
  return dir;
}

describe("the OLM bundle", () => {
  let csv: Csv;

  before(async () => {
    csv = await readYaml<Csv>(csvFile);
  });

  it("is exactly what make bundle writes from config/, the chart and hack/olm", async () => {
    const inputs = await readInputs(repoRoot);
    assert.ok(typeof inputs !== "string", inputs as string);
    const files = renderBundle(inputs);
    assert.ok(typeof files !== "string", files as string);
    const committed = [...(await filesUnder(join(repoRoot, "bundle"))), "bundle.Dockerfile"].sort();
    assert.deepEqual(committed, [...files.keys()].sort(), "the same files: run make bundle");
    for (const [path, text] of files)
      assert.equal(await readFile(join(repoRoot, path), "utf8"), text, `${path} is stale: run make bundle`);
  });

  it("owns every CRD of config/crd, with its schema's description, every top-level spec field, and status conditions", async () => {
    const crdDir = join(repoRoot, "config/crd/bases");
    const crds = await Promise.all(
      (await readdir(crdDir)).map(async (f) => parse(await readFile(join(crdDir, f), "utf8")) as Crd),
    );
    assert.equal(crds.length, 11);
    const owned = csv.spec.customresourcedefinitions.owned;
    assert.deepEqual(owned.map((o) => o.name).sort(), crds.map((c) => c.metadata.name).sort());
    for (const crd of crds) {
      const entry = owned.find((o) => o.name === crd.metadata.name)!;
      const schema = crd.spec.versions[0]!.schema.openAPIV3Schema;
      assert.equal(entry.version, "v1alpha3");
      assert.equal(entry.kind, crd.spec.names.kind);
      assert.ok(entry.displayName.length > 0);
      assert.equal(entry.description, schema.description);
      const spec = schema.properties!.spec!.properties!;
      assert.deepEqual(
        entry.specDescriptors.map((d) => d.path),
        Object.keys(spec),
      );
      for (const d of entry.specDescriptors) assert.equal(d.description, spec[d.path]!.description);
      const conditions = entry.statusDescriptors.find((d) => d.path === "conditions");
      assert.deepEqual(conditions?.["x-descriptors"], ["urn:alm:descriptor:io.kubernetes.conditions"]);
    }
    // Every bundle CRD is config/crd's, unchanged.
    for (const crd of crds)
      assert.deepEqual(await readYaml(`bundle/manifests/configbutler.ai_${crd.spec.names.plural}.yaml`), crd);
  });

  it("installs for all namespaces only, and grants the ServiceAccount what config/rbac binds to it", async () => {
    assert.deepEqual(
      csv.spec.installModes.filter((m) => m.supported).map((m) => m.type),
      ["AllNamespaces"],
    );
    const rbac = (
      await Promise.all(
        [
          "role.yaml",
          "watched_role.yaml",
          "leader_election_role.yaml",
          "metrics_auth_role.yaml",
          "metrics_reader_role.yaml",
        ].map((f) => readObjects(`config/rbac/${f}`)),
      )
    ).flat() as (KubeObject & { rules?: Rule[] })[];
    const rulesOf = (name: string) => rbac.find((o) => o.metadata.name === name)!.rules!;
    const install = csv.spec.install;
    assert.equal(install.strategy, "deployment");
    assert.deepEqual(
      install.spec.clusterPermissions.map((p) => p.serviceAccountName),
      ["gitops-reverser"],
    );
    assert.deepEqual(
      grants(install.spec.clusterPermissions[0]!.rules),
      grants([
        ...rulesOf("gitops-reverser"),
        ...rulesOf("gitops-reverser-watched-default"),
        ...rulesOf("gitops-reverser-metrics-auth"),
      ]),
    );
    // The role config/rbac offers Prometheus is shipped for an administrator to bind.
    const reader = await readYaml(
      "bundle/manifests/gitops-reverser-metrics-reader_rbac.authorization.k8s.io_v1_clusterrole.yaml",
    );
    assert.deepEqual((reader as { rules: Rule[] }).rules, rulesOf("gitops-reverser-metrics-reader"));
    assert.deepEqual(install.spec.permissions, [
      { serviceAccountName: "gitops-reverser", rules: rulesOf("gitops-reverser-leader-election") },
    ]);
  });

  it("runs config/manager's Deployment with the chart's image, at the chart's version, alpha, with its icon", async () => {
    const [manager] = await readObjects("config/manager/manager.yaml");
    const chart = await readYaml<{ appVersion: string; kubeVersion: string }>(
      "charts/gitops-reverser/Chart.yaml",
    );
    const values = await readYaml<{ image: { repository: string } }>("charts/gitops-reverser/values.yaml");
    const image = `${values.image.repository}:${chart.appVersion}`;
    const expected = structuredClone(manager!.spec) as {
      template: { spec: { containers: { image: string }[] } };
    };
    expected.template.spec.containers[0]!.image = image;
    assert.deepEqual(csv.spec.install.spec.deployments, [
      { name: "gitops-reverser", label: manager!.metadata.labels, spec: expected },
    ]);
    assert.equal(csv.metadata.annotations?.containerImage, image);
    assert.equal(csv.metadata.name, `gitops-reverser.v${chart.appVersion}`);
    assert.equal(csv.spec.version, chart.appVersion);
    assert.equal(`>=${csv.spec.minKubeVersion}-0`, chart.kubeVersion);
    assert.equal(csv.spec.maturity, "alpha");
    assert.deepEqual(
      csv.spec.icon.map((i) => [i.mediatype, Buffer.from(i.base64data, "base64").toString()]),
      [["image/svg+xml", await readFile(join(repoRoot, "hack/olm/icon.svg"), "utf8")]],
    );
    const examples = JSON.parse(csv.metadata.annotations["alm-examples"]!) as KubeObject[];
    assert.equal(new Set(examples.map((e) => e.kind)).size, 11, "an example of every kind");

    // The bundle image's labels say what metadata/annotations.yaml says.
    const { annotations } = await readYaml<{ annotations: Record<string, string> }>(
      "bundle/metadata/annotations.yaml",
    );
    assert.equal(annotations["operators.operatorframework.io.bundle.channels.v1"], "alpha");
    const dockerfile = await readFile(join(repoRoot, "bundle.Dockerfile"), "utf8");
    const labels = [...dockerfile.matchAll(/^LABEL (\S+)=(\S+)$/gm)].map((m) => [m[1], m[2]]);
    assert.deepEqual(Object.fromEntries(labels), annotations);
    assert.match(dockerfile, /^COPY bundle\/manifests \/manifests\/$/m);
    assert.match(dockerfile, /^COPY bundle\/metadata \/metadata\/$/m);
  });

  it("the bundle validates: the operator-framework's validators find no error and only the two known warnings", async (t) => {
    const { code, report } = await validate(join(repoRoot, "bundle"));
    for (const w of report.warnings) t.diagnostic(`${w.validator}: ${w.detail}`);
    assert.equal(code, 0, JSON.stringify(report.errors, null, 2));
    assert.equal(report.passed, true);
    assert.equal(report.csv, csv.metadata.name);
    assert.equal(report.crds, 11);
    assert.deepEqual(report.validators, [
      "csv",
      "crd",
      "bundle",
      "operatorhub-v2",
      "standard-capabilities",
      "standard-categories",
      "good-practices",
      "object",
      "deprecated-apis",
    ]);
    // The removed-API check matches RBAC rules on "events" by resource name alone: the rule is
    // events.k8s.io/v1's, which was not removed. And OperatorHub's convention names channels
    // after a release stream (stable, fast, candidate); this bundle's is alpha on purpose.
    const known = [
      /^operatorhub-v2: .*removed in v1\.25.*Migrate the API\(s\) for events/,
      /^deprecated-apis: .*removed in v1\.25.*Migrate the API\(s\) for events/,
      /^good-practices: .*channel\(s\) \["alpha"\] are not following the recommended naming convention/,
    ];
    const unexplained = report.warnings
      .map((w) => `${w.validator}: ${w.detail}`)
      .filter((w) => !known.some((k) => k.test(w)));
    assert.deepEqual(unexplained, []);
    const rule = csv.spec.install.spec.clusterPermissions[0]!.rules.find((r) =>
      r.resources?.includes("events"),
    );
    assert.deepEqual(rule?.apiGroups, ["events.k8s.io"], "the events rule is events.k8s.io's");
  });

  it("the validators refuse a CSV that does not own one of the bundle's CRDs", async (t) => {
    const dir = await brokenCopy((broken) => {
      const owned = broken.spec.customresourcedefinitions.owned;
      owned.splice(
        owned.findIndex((o) => o.kind === "WatchRule"),
        1,
      );
    });
    t.after(() => rm(dir, { recursive: true, force: true }));
    const { code, report } = await validate(dir);
    assert.equal(code, 1);
    assert.equal(report.passed, false);
    assert.ok(
      report.errors.some((e) =>
        /CRD "configbutler.ai\/v1alpha3, Kind=WatchRule" is present in bundle/.test(e.detail),
      ),
      JSON.stringify(report.errors, null, 2),
    );
  });

  it("the validators refuse a CSV that supports no install mode", async (t) => {
    const dir = await brokenCopy((broken) => {
      for (const mode of broken.spec.installModes) mode.supported = false;
    });
    t.after(() => rm(dir, { recursive: true, force: true }));
    const { code, report } = await validate(dir);
    assert.equal(code, 1);
    assert.ok(
      report.errors.some((e) => /none of InstallModeTypes are supported/.test(e.detail)),
      JSON.stringify(report.errors, null, 2),
    );
  });

  describe("against a real API server", () => {
    let plane: ControlPlane;
    before(async () => {
      plane = await ControlPlane.start();
    });
    after(async () => {
      await plane?.stop();
    });

    it("accepts, in a server-side dry run, the bundle's CRDs and the RBAC, Deployment and Service OLM makes from it", async (t) => {
      // The namespace OLM would install into, enforcing the restricted Pod Security Standard as
      // config/manager's does.
      const namespace = "operators";
      const [nsTemplate] = await readObjects("config/manager/namespace.yaml");
      const nsFile = join(plane.dir, "namespace.yaml");
      await writeFile(
        nsFile,
        JSON.stringify({ ...nsTemplate, metadata: { ...nsTemplate!.metadata, name: namespace } }),
      );
      const created = await kubectl(plane, "apply", "--server-side", "-f", nsFile);
      assert.equal(created.code, 0, created.stderr);

      const manifests = await readdir(join(repoRoot, "bundle/manifests"));
      const crds = (
        await Promise.all(
          manifests
            .filter((f) => f.startsWith("configbutler.ai_"))
            .map((f) => readObjects(`bundle/manifests/${f}`)),
        )
      ).flat();
      const [service] = await readObjects("bundle/manifests/gitops-reverser-metrics_v1_service.yaml");
      const install = csv.spec.install.spec;
      const account = install.clusterPermissions[0]!.serviceAccountName;
      const subjects = [{ kind: "ServiceAccount", name: account, namespace }];
      const rbac = "rbac.authorization.k8s.io";
      const objects = [
        ...crds,
        { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: account, namespace } },
        {
          apiVersion: `${rbac}/v1`,
          kind: "ClusterRole",
          metadata: { name: "bundle-operator" },
          rules: install.clusterPermissions[0]!.rules,
        },
        {
          apiVersion: `${rbac}/v1`,
          kind: "ClusterRoleBinding",
          metadata: { name: "bundle-operator" },
          roleRef: { apiGroup: rbac, kind: "ClusterRole", name: "bundle-operator" },
          subjects,
        },
        {
          apiVersion: `${rbac}/v1`,
          kind: "Role",
          metadata: { name: "bundle-operator", namespace },
          rules: install.permissions[0]!.rules,
        },
        {
          apiVersion: `${rbac}/v1`,
          kind: "RoleBinding",
          metadata: { name: "bundle-operator", namespace },
          roleRef: { apiGroup: rbac, kind: "Role", name: "bundle-operator" },
          subjects,
        },
        ...install.deployments.map((d) => ({
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: d.name, namespace },
          spec: d.spec,
        })),
        { ...service!, metadata: { ...service!.metadata, namespace } },
      ] as Manifest[];
      const file = join(plane.dir, "bundle-install.yaml");
      await writeFile(file, objects.map((o) => stringify(o)).join("---\n"));
      const result = await assertDryRunAccepts(t, plane, file, objects);
      assert.doesNotMatch(result.stderr, /PodSecurity/, result.stderr);
    });
  });
});
