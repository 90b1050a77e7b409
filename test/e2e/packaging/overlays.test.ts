// The kustomize overlays (config/overlays, built from config/components): each rendered by the
// pinned kubectl and accepted whole by a real API server's server-side dry run; each adding to
// config/default exactly the flags, ports, volumes, Services and Certificate the chart adds for
// the same choice, so either install gives the same operator; the production profile's sizes,
// spread, disruption budget and pinned image; and `make deploy OVERLAY=… IMG=…` applying them.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { AppsV1Api, PolicyV1Api, type KubeConfig } from "@kubernetes/client-node";
import { flagParser, parseFlags } from "../../../cmd/flags.ts";
import { parseQuantity } from "../../../internal/types/units.ts";
import { repoRoot, testenvBinaries } from "../../support/binaries.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { helmTemplate, releasedImage } from "../../support/helm.ts";
import { kubectlOk } from "../../support/kubectl.ts";
import { installCrdFiles } from "../../support/manifests.ts";
import {
  assertDryRunAccepts,
  expandedArgs,
  find,
  podOf,
  render,
  type Container,
  type Manifest,
} from "../../support/rendered.ts";

const exec = promisify(execFile);
const systemNamespace = "gitops-reverser-system";
const overlays = ["redis", "attribution", "receiver", "production", "replicas"];
const digest = `sha256:${"ab".repeat(32)}`;

/** What an install adds to the operator's pod and Services, in a form two installs share. */
interface Additions {
  args: string[];
  ports: Container["ports"];
  mounts: Container["volumeMounts"];
  volumes: unknown[];
  services: { name: string; type: string; ports: unknown }[];
  certificate: unknown;
}

function operatorContainer(objects: Manifest[]): Container {
  return podOf(find(objects, "Deployment", "gitops-reverser")).spec.containers[0]!;
}

/** What `objects` holds beyond `base`: args as the kubelet passes them, Services by name. */
function additions(base: Manifest[], objects: Manifest[]): Additions {
  const before = operatorContainer(base);
  const after = operatorContainer(objects);
  const beforeArgs = expandedArgs(before, base);
  const named = <T extends { name: string }>(list: T[] | undefined, than: T[] | undefined): T[] =>
    (list ?? []).filter((item) => !(than ?? []).some((b) => b.name === item.name));
  const services = (list: Manifest[]) =>
    list
      .filter((o) => o.kind === "Service")
      .map((s) => {
        const spec = s.spec as { type?: string; ports: unknown };
        return { name: s.metadata.name, type: spec.type ?? "ClusterIP", ports: spec.ports };
      });
  const certificate = objects.find((o) => o.kind === "Certificate");
  return {
    args: expandedArgs(after, objects)
      .filter((a) => !beforeArgs.includes(a))
      .sort(),
    ports: named(after.ports, before.ports),
    mounts: named(after.volumeMounts, before.volumeMounts),
    volumes: named(
      podOf(find(objects, "Deployment", "gitops-reverser")).spec.volumes,
      podOf(find(base, "Deployment", "gitops-reverser")).spec.volumes,
    ),
    services: named(services(objects), services(base)),
    certificate: certificate && { namespace: certificate.metadata.namespace, spec: certificate.spec },
  };
}

describe("the kustomize overlays in config/overlays", () => {
  let plane: ControlPlane;
  let kc: KubeConfig;
  let base: Manifest[];
  let chartBase: Manifest[];
  const rendered = new Map<string, Manifest[]>();

  const chart = async (...sets: string[]) =>
    (await helmTemplate(plane, systemNamespace, ...sets.flatMap((s) => ["--set", s]))).objects;

  before(async () => {
    plane = await ControlPlane.start();
    kc = plane.kubeConfig();
    base = (await render(plane, "config/default")).objects;
    chartBase = await chart();
    // Namespaced objects are admitted only into a namespace that exists; cert-manager's
    // Certificate only once its CRD does.
    const nsFile = join(plane.dir, "namespace.yaml");
    await writeFile(nsFile, JSON.stringify(find(base, "Namespace", systemNamespace)));
    await kubectlOk(plane, "apply", "--server-side", "-f", nsFile);
    await installCrdFiles(kc, [join(repoRoot, "test/e2e/packaging/certificate-crd.yaml")]);
  });
  after(async () => {
    await plane?.stop();
  });

  it("every overlay renders and is accepted: a server-side dry run accepts every object of each", async (t) => {
    for (const overlay of overlays) {
      const { text, objects } = await render(plane, `config/overlays/${overlay}`);
      rendered.set(overlay, objects);
      const file = join(plane.dir, `${overlay}.yaml`);
      await writeFile(file, text);
      const result = await assertDryRunAccepts(t, plane, file, objects);
      assert.doesNotMatch(result.stderr, /PodSecurity/, `${overlay}: ${result.stderr}`);
      // Every flag it passes, as the kubelet passes it, is one the operator accepts.
      parseFlags(expandedArgs(operatorContainer(objects), objects), flagParser().exitOverride());
    }
  });

  it("the redis overlay passes --redis-addr as the chart's redis.address does, and a patch of its ConfigMap names your Redis", async () => {
    const objects = rendered.get("redis")!;
    const added = additions(base, objects);
    assert.deepEqual(added.args, ["--redis-addr=redis:6379"]);
    assert.deepEqual(added, additions(chartBase, await chart("redis.address=redis:6379")));

    // A kustomization of your own, outside the repository, patching the address.
    const mine = join(plane.dir, "my-install");
    await mkdir(mine);
    const config = relative(mine, join(repoRoot, "config"));
    await writeFile(
      join(mine, "kustomization.yaml"),
      [
        "resources: [" + join(config, "default") + "]",
        "components: [" + join(config, "components/redis") + "]",
        "patches:",
        "  - patch: |-",
        "      apiVersion: v1",
        "      kind: ConfigMap",
        `      metadata: {name: gitops-reverser-redis, namespace: ${systemNamespace}}`,
        "      data: {address: my-redis.redis.svc:6379}",
        "",
      ].join("\n"),
    );
    const { objects: mineObjects } = await render(plane, relative(repoRoot, mine));
    const patched = parseFlags(
      expandedArgs(operatorContainer(mineObjects), mineObjects),
      flagParser().exitOverride(),
    );
    assert.equal(patched.redisAddr, "my-redis.redis.svc:6379");
  });

  it("the attribution overlay adds the audit ingress, its Service, its cert-manager certificate and the Redis transport the chart adds for attribution", async () => {
    const objects = rendered.get("attribution")!;
    const added = additions(base, objects);
    const fromChart = additions(
      chartBase,
      await chart(
        "attribution.enabled=true",
        "attribution.certificate.certManager.enabled=true",
        "attribution.certificate.certManager.issuerRef.name=gitops-reverser-audit-ca",
        "redis.address=redis:6379",
      ),
    );
    assert.deepEqual(added, fromChart);
    assert.deepEqual(
      added.services.map((s) => s.name),
      ["gitops-reverser-audit"],
    );
    assert.ok(added.certificate, "a Certificate is rendered");

    const options = parseFlags(
      expandedArgs(operatorContainer(objects), objects),
      flagParser().exitOverride(),
    );
    assert.equal(options.authorAttribution, true);
    assert.equal(options.authorAttributionTransport, "redis");
    assert.equal(options.redisAddr, "redis:6379", "the redis transport has its Redis");
    assert.equal(options.auditBindAddress, ":9444");
    const mount = added.mounts?.find((m) => m.name === "audit-tls");
    assert.equal(options.auditCertDir, mount?.mountPath, "the certificate is where the flag reads it");
  });

  it("the receiver overlay adds the push receiver's flag, port and Service the chart adds for receiver.enabled", async () => {
    const added = additions(base, rendered.get("receiver")!);
    assert.deepEqual(added.args, ["--receiver-bind-address=:9292"]);
    assert.deepEqual(added, additions(chartBase, await chart("receiver.enabled=true")));
  });

  it("the production overlay sizes the operator above the benchmark's peak, spreads it, lets one pod go at a time and pins its image by digest", () => {
    const objects = rendered.get("production")!;
    const deployment = find(objects, "Deployment", "gitops-reverser");
    assert.equal((deployment.spec as { replicas: number }).replicas, 1, "one active replica, as today");
    const pod = podOf(deployment);
    const container = pod.spec.containers[0]!;
    assert.match(container.image, /^ghcr\.io\/configbutler\/gitops-reverser-ts@sha256:[0-9a-f]{64}$/);

    // The operator process's peak RSS at 10,000 objects, docs/architecture.md: 174 MiB.
    const peak = 174 * 1024 * 1024;
    const { requests, limits } = container.resources!;
    assert.ok(parseQuantity(requests!.memory!) > peak, `requests ${requests!.memory} hold the peak`);
    assert.ok(parseQuantity(limits!.memory!) >= 2 * parseQuantity(requests!.memory!), "limit with headroom");
    assert.ok(requests!.cpu && limits!.cpu);

    const selects = (selector: Record<string, string>) =>
      Object.entries(selector).every(([key, value]) => pod.labels[key] === value);
    const spread = pod.spec.topologySpreadConstraints ?? [];
    assert.deepEqual(spread.map((c) => c.topologyKey).sort(), [
      "kubernetes.io/hostname",
      "topology.kubernetes.io/zone",
    ]);
    for (const constraint of spread) {
      assert.equal(constraint.whenUnsatisfiable, "ScheduleAnyway", "one zone or one node still schedules it");
      assert.ok(selects(constraint.labelSelector.matchLabels), "the spread counts the operator's pods");
    }

    const budget = find(objects, "PodDisruptionBudget", "gitops-reverser").spec as {
      maxUnavailable?: number;
      minAvailable?: number;
      selector: { matchLabels: Record<string, string> };
    };
    assert.equal(budget.maxUnavailable, 1, "a node with the one replica can still drain");
    assert.equal(budget.minAvailable, undefined);
    assert.ok(selects(budget.selector.matchLabels), "the budget covers the operator's pod");
  });

  it("the replicas overlay runs three replicas with leader election and Redis, as the chart's replicaCount=3 does", async () => {
    const objects = rendered.get("replicas")!;
    const deployment = find(objects, "Deployment", "gitops-reverser");
    assert.equal((deployment.spec as { replicas: number }).replicas, 3);
    const args = expandedArgs(operatorContainer(objects), objects);
    for (const flag of ["--replica-count=3", "--leader-elect=true", "--redis-addr=redis:6379"])
      assert.ok(args.includes(flag), `${flag} in ${args.join(" ")}`);
    find(objects, "PodDisruptionBudget", "gitops-reverser");
    const chartArgs = operatorContainer(await chart("replicaCount=3", "redis.address=redis:6379")).args ?? [];
    assert.ok(chartArgs.includes("--replica-count=3") && chartArgs.includes("--leader-elect=true"));
  });

  it("make deploy OVERLAY=… IMG=… applies that overlay with that image, and leaves the repository as it was", async () => {
    const make = async (...args: string[]) =>
      (await exec("make", args, { cwd: repoRoot, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })).stdout;
    const status = () => exec("git", ["status", "--porcelain"], { cwd: repoRoot, encoding: "utf8" });
    const statusBefore = (await status()).stdout;

    const image = `registry.example:5000/gitops-reverser@${digest}`;
    const planned = await make("-n", "deploy", "OVERLAY=production", `IMG=${image}`);
    assert.ok(
      planned.includes(`bash hack/deploy/render.sh production ${image} | kubectl apply --server-side -f -`),
      planned,
    );

    const kubectl = `${testenvBinaries().kubectl} --kubeconfig ${plane.kubeconfigPath}`;
    await make("deploy", "OVERLAY=production", `IMG=${image}`, `KUBECTL=${kubectl}`);
    const deployed = await kc
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ namespace: systemNamespace, name: "gitops-reverser" });
    assert.equal(deployed.spec?.template.spec?.containers[0]?.image, image);
    const budget = await kc
      .makeApiClient(PolicyV1Api)
      .readNamespacedPodDisruptionBudget({ namespace: systemNamespace, name: "gitops-reverser" });
    assert.equal(budget.spec?.maxUnavailable, 1, "the production overlay was applied");

    // A tag replaces the overlay's digest; no IMG keeps config/default's image, and is refused
    // where it would leave the production overlay's placeholder digest.
    const render = (...args: string[]) => renderWith({}, ...args);
    const renderWith = (env: Record<string, string>, ...args: string[]) =>
      exec("bash", ["hack/deploy/render.sh", ...args], {
        cwd: repoRoot,
        encoding: "utf8",
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, KUBECTL: testenvBinaries().kubectl, ...env },
      });
    const imageOf = (text: string) => /image: (\S+)/.exec(text)?.[1];
    assert.equal(
      imageOf((await render("production", "registry.example:5000/gr:v2")).stdout),
      "registry.example:5000/gr:v2",
    );
    // config/default pins the chart's appVersion, never :latest.
    assert.equal(imageOf((await render("default")).stdout), releasedImage);
    await assert.rejects(
      render("production"),
      (err: { code: number; stderr: string }) =>
        err.code === 3 && /pins the image by a placeholder digest/.test(err.stderr),
    );
    // make undeploy removes the same objects, whatever their image.
    assert.match(
      await make("-n", "undeploy", "OVERLAY=production"),
      /UNDEPLOY=1 KUBECTL=.* bash hack\/deploy\/render\.sh production /,
    );
    assert.ok(
      imageOf((await renderWith({ UNDEPLOY: "1" }, "production")).stdout)?.endsWith(
        "@sha256:" + "0".repeat(64),
      ),
    );
    await assert.rejects(render("nonesuch"), (err: { stderr: string }) =>
      /OVERLAY=nonesuch: not default, a folder of config\/overlays/.test(err.stderr),
    );
    assert.equal((await status()).stdout, statusBefore, "the repository is as it was");
  });
});
