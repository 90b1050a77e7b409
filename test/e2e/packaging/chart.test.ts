// The Helm chart (charts/gitops-reverser): linted by the pinned helm, rendered and accepted by a
// real API server's server-side dry run, installed, upgraded and uninstalled against it, its
// values schema refusing what the operator could not run with, and its ClusterRole granting
// exactly what config/rbac grants.
import assert from "node:assert/strict";
import { cp, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ApiextensionsV1Api, AppsV1Api, CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { parse, stringify } from "yaml";
import { flagParser, parseFlags } from "../../../cmd/flags.ts";
import { chart, helm, helmTemplate } from "../../support/helm.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { assertDryRunAccepts, find, grants, render, type Manifest } from "../../support/rendered.ts";
import { eventually } from "../../support/wait.ts";

const namespace = "gitops-reverser";

/** The parts of the operator's pod template these tests read. */
interface PodTemplate {
  metadata: { labels: Record<string, string> };
  spec: {
    containers: { image: string; args: string[]; env: { name: string; value?: string }[] }[];
    priorityClassName?: string;
    volumes: { name: string; emptyDir?: { sizeLimit?: string } }[];
    topologySpreadConstraints?: unknown[];
  };
}

/** A CRD version's schema, as far as the status properties. */
interface Schema {
  openAPIV3Schema: { properties: { status: { properties: Record<string, unknown> } } };
}
const statusOf = (schema: Schema) => schema.openAPIV3Schema.properties.status.properties;

describe("the Helm chart", () => {
  let plane: ControlPlane;
  let kc: KubeConfig;

  const run = (...args: string[]) => helm(plane, ...args);
  const template = (...sets: string[]) => helmTemplate(plane, namespace, ...sets);

  before(async () => {
    plane = await ControlPlane.start();
    kc = plane.kubeConfig();
  });
  after(async () => {
    await plane?.stop();
  });

  it("lints", async () => {
    const result = await run("lint", chart, "--strict");
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
  });

  it("the chart installs into the envtest and every object is accepted", async (t) => {
    // Every optional part on, but the ServiceMonitor and the Certificate, whose CRDs this plane lacks.
    const all = [
      "--set",
      "receiver.enabled=true",
      "--set",
      "networkPolicy.enabled=true",
      "--set",
      "kargoObserver.enabled=true",
      "--set",
      "attribution.enabled=true",
      "--set",
      "attribution.certificate.secretName=audit-tls",
      "--set",
      "redis.address=redis:6379",
      "--set",
      "inClusterKubeProviders={team-a/in-cluster}",
      // Standbys: a PodDisruptionBudget and a spread over nodes come with them.
      "--set",
      "replicaCount=3",
    ];
    const { text, objects } = await template(...all);
    const file = join(plane.dir, "chart.yaml");
    await writeFile(file, text);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    // The CRDs first (as helm installs crds/ before the templates), then every object, dry run.
    const crds = objects.filter((o) => o.kind === "CustomResourceDefinition");
    assert.equal(crds.length, 11, "the chart carries every CRD");
    await assertDryRunAccepts(t, plane, file, objects);
    const operator = find(objects, "Deployment", "gitops-reverser");
    const args = (operator.spec as { template: { spec: { containers: { args: string[] }[] } } }).template.spec
      .containers[0]!.args;
    assert.ok(args.includes("--author-attribution=true"));
    assert.ok(args.includes("--redis-addr=redis:6379"));
    assert.ok(args.includes("--in-cluster-kube-providers=team-a/in-cluster"));
    assert.ok(args.includes("--receiver-bind-address=:9292"));
    assert.ok(args.includes("--replica-count=3") && args.includes("--leader-elect=true"));
    assert.equal((operator.spec as { replicas: number }).replicas, 3);
    const budget = find(objects, "PodDisruptionBudget", "gitops-reverser").spec as { maxUnavailable: number };
    assert.equal(budget.maxUnavailable, 1, "a drain evicts one replica at a time");
    // Every flag the chart passes is one the operator accepts, and the settings it makes hold.
    const options = parseFlags(args, flagParser().exitOverride());
    assert.equal(options.metricsBindAddress, ":8443");
    assert.equal(options.metricsSecure, true);
    assert.equal(options.authorAttribution, true);
    assert.equal(options.redisAddr, "redis:6379");
    assert.equal(options.logLevel, "info");

    // Installed for real, upgraded, uninstalled.
    const install = await run("install", "gitops-reverser", chart, "--namespace", namespace);
    assert.equal(install.code, 0, install.stderr);
    const apps = kc.makeApiClient(AppsV1Api);
    const deployed = await apps.readNamespacedDeployment({ namespace, name: "gitops-reverser" });
    assert.ok(
      deployed.spec?.template.spec?.containers[0]?.args?.includes("--author-attribution=false"),
      "attribution off by default, as the seeds say",
    );
    const upgrade = await run(
      "upgrade",
      "gitops-reverser",
      chart,
      "--namespace",
      namespace,
      "--set",
      "logLevel=debug",
    );
    assert.equal(upgrade.code, 0, upgrade.stderr);
    const upgraded = await apps.readNamespacedDeployment({ namespace, name: "gitops-reverser" });
    assert.ok(upgraded.spec?.template.spec?.containers[0]?.args?.includes("--log-level=debug"));
    const uninstall = await run("uninstall", "gitops-reverser", "--namespace", namespace);
    assert.equal(uninstall.code, 0, uninstall.stderr);
    await eventually(
      async () =>
        !(await apps.readNamespacedDeployment({ namespace, name: "gitops-reverser" }).catch(() => undefined)),
      { timeoutMs: 30_000, description: "the Deployment gone with the release" },
    );
  });

  it("helm upgrade applies the new CRDs, and an uninstall keeps them", async () => {
    // The chart as an earlier version shipped it: GitBranch's status without heldBy.
    const earlier = join(plane.dir, "earlier-chart");
    await cp(chart, earlier, { recursive: true });
    const file = join(earlier, "files/crds/configbutler.ai_gitbranches.yaml");
    const crd = parse(await readFile(file, "utf8")) as { spec: { versions: { schema: Schema }[] } };
    delete statusOf(crd.spec.versions[0]!.schema).heldBy;
    await writeFile(file, stringify(crd));
    const extensions = kc.makeApiClient(ApiextensionsV1Api);
    const served = async () =>
      statusOf(
        (await extensions.readCustomResourceDefinition({ name: "gitbranches.configbutler.ai" })).spec
          .versions[0]!.schema as Schema,
      );
    await kc
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: namespace } } })
      .catch(() => undefined);

    const install = await run("install", "gitops-reverser", earlier, "--namespace", namespace);
    assert.equal(install.code, 0, install.stderr);
    assert.equal((await served()).heldBy, undefined, "the earlier schema is served");
    const upgrade = await run("upgrade", "gitops-reverser", chart, "--namespace", namespace);
    assert.equal(upgrade.code, 0, upgrade.stderr);
    assert.ok((await served()).heldBy, "the upgrade served the new schema, status.heldBy with it");

    const uninstall = await run("uninstall", "gitops-reverser", "--namespace", namespace);
    assert.equal(uninstall.code, 0, uninstall.stderr);
    const kept = await extensions.readCustomResourceDefinition({ name: "gitbranches.configbutler.ai" });
    assert.equal(
      kept.metadata?.deletionTimestamp,
      undefined,
      "the CRDs, and every object of their kinds, outlive the release",
    );
  });

  it("takes the values people expect: extra flags and environment, a priority class, the /tmp size, pod labels, a spread of its own, and an image by digest", async (t) => {
    const digest = `sha256:${"0123456789abcdef".repeat(4)}`;
    const spread = [
      { maxSkew: 1, topologyKey: "topology.kubernetes.io/zone", whenUnsatisfiable: "DoNotSchedule" },
    ];
    const { text, objects } = await template(
      "--set",
      `image.digest=${digest}`,
      "--set-json",
      'extraArgs=["--log-level=debug","--git-refresh-interval=2m"]',
      "--set-json",
      'extraEnv=[{"name":"NODE_OPTIONS","value":"--max-semi-space-size=8"}]',
      "--set",
      "priorityClassName=system-cluster-critical",
      "--set",
      "tmpSizeLimit=4Gi",
      "--set",
      "podLabels.team=platform",
      "--set-json",
      `topologySpreadConstraints=${JSON.stringify(spread)}`,
    );
    const file = join(plane.dir, "chart-values.yaml");
    await writeFile(file, text);
    await kc
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: namespace } } })
      .catch(() => undefined);
    await assertDryRunAccepts(t, plane, file, objects);
    const pod = (find(objects, "Deployment", "gitops-reverser").spec as { template: PodTemplate }).template;
    const [container] = pod.spec.containers;
    assert.equal(container!.image, `ghcr.io/configbutler/gitops-reverser-ts@${digest}`);
    // The extra flags come last, so each wins over the chart's own; the operator accepts them.
    assert.deepEqual(container!.args.slice(-2), ["--log-level=debug", "--git-refresh-interval=2m"]);
    const options = parseFlags(container!.args, flagParser().exitOverride());
    assert.equal(options.logLevel, "debug");
    assert.ok(container!.env.some((e) => e.name === "NODE_OPTIONS" && e.value === "--max-semi-space-size=8"));
    assert.equal(pod.spec.priorityClassName, "system-cluster-critical");
    assert.equal(pod.spec.volumes.find((v) => v.name === "tmp")?.emptyDir?.sizeLimit, "4Gi");
    assert.equal(pod.metadata.labels.team, "platform");
    assert.deepEqual(pod.spec.topologySpreadConstraints, spread);
  });

  it("reaches a guarded Redis: TLS with its CA and a client certificate, and a password from a Secret, never in the args", async () => {
    const { objects } = await template(
      "--set",
      "redis.address=redis.infra:6380",
      "--set",
      "redis.auth.existingSecret=redis-auth",
      "--set",
      "redis.tls.enabled=true",
      "--set",
      "redis.tls.secretName=redis-tls",
      "--set",
      "redis.tls.clientCertificate=true",
    );
    type Pod = {
      template: {
        spec: {
          containers: {
            args: string[];
            env: { name: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
            volumeMounts: { name: string; mountPath: string }[];
          }[];
          volumes: { name: string; secret?: { secretName: string } }[];
        };
      };
    };
    const pod = (find(objects, "Deployment", "gitops-reverser").spec as Pod).template.spec;
    const [container] = pod.containers;
    const options = parseFlags(container!.args, flagParser().exitOverride());
    assert.equal(options.redisAddr, "rediss://redis.infra:6380");
    assert.equal(options.redisCaFile, "/etc/gitops-reverser/redis-tls/ca.crt");
    assert.equal(options.redisCertFile, "/etc/gitops-reverser/redis-tls/tls.crt");
    assert.equal(options.redisPassword, "", "no password on the command line");
    assert.deepEqual(
      container!.env.find((e) => e.name === "GITOPS_REVERSER_REDIS_PASSWORD")?.valueFrom?.secretKeyRef,
      { name: "redis-auth", key: "password" },
    );
    assert.ok(
      container!.volumeMounts.some(
        (m) => m.name === "redis-tls" && m.mountPath === "/etc/gitops-reverser/redis-tls",
      ),
    );
    assert.equal(pod.volumes.find((v) => v.name === "redis-tls")?.secret?.secretName, "redis-tls");
  });

  it("values.schema.json refuses a bad value", async () => {
    const refused = async (set: string, says: RegExp) => {
      const result = await run("template", "gitops-reverser", chart, "--set", set);
      assert.notEqual(result.code, 0, `${set} was accepted`);
      assert.match(result.stderr, says, set);
    };
    await refused("replicaCount=0", /replicaCount/);
    await refused("logLevel=verbose", /logLevel/);
    await refused("gitRefreshInterval=ten minutes", /gitRefreshInterval/);
    await refused("inClusterKubeProviders={in-cluster}", /inClusterKubeProviders/);
    await refused("unknownValue=1", /unknownValue/);
    await refused("image.digest=latest", /digest/);
    await refused("extraArgs={verbose}", /extraArgs/);
    await refused("tmpSizeLimit=big", /tmpSizeLimit/);
    // And what the schema cannot say, the templates say: attribution needs Redis or memory, and a certificate.
    await refused("attribution.enabled=true", /redis\.address|certificate/);
    // More than one replica needs leader election and Redis.
    await refused("replicaCount=2", /replicaCount above 1 needs redis\.address/);
  });

  it("grants exactly what config/rbac grants", async () => {
    const { objects } = await template();
    const config = (await render(plane, "config/default")).objects;
    for (const name of ["gitops-reverser", "gitops-reverser-metrics-auth"]) {
      const fromChart = grants(find(objects, "ClusterRole", name).rules ?? []);
      assert.deepEqual(fromChart, grants(find(config, "ClusterRole", name).rules ?? []), name);
    }
    assert.deepEqual(
      find(objects, "ClusterRole", "gitops-reverser-metrics-reader").rules,
      find(config, "ClusterRole", "gitops-reverser-metrics-reader").rules,
    );
  });

  it("serves metrics on 8443 over HTTPS, scraped by the ServiceMonitor with Prometheus's token, and admitted by the NetworkPolicy", async () => {
    interface Endpoint {
      port: string;
      scheme?: string;
      bearerTokenFile?: string;
      tlsConfig?: Record<string, unknown>;
    }
    const endpointOf = (objects: Manifest[]) =>
      (find(objects, "ServiceMonitor", "gitops-reverser").spec as { endpoints: Endpoint[] }).endpoints[0]!;
    const on = ["--set", "metrics.serviceMonitor.enabled=true", "--set", "networkPolicy.enabled=true"];
    const { objects } = await template(...on);
    assert.deepEqual(endpointOf(objects), {
      port: "https",
      path: "/metrics",
      interval: "30s",
      scheme: "https",
      bearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
      tlsConfig: { insecureSkipVerify: true },
    });
    const service = find(objects, "Service", "gitops-reverser-metrics").spec as {
      ports: { name: string; port: number; targetPort: string }[];
    };
    assert.deepEqual(service.ports, [{ name: "https", port: 8443, targetPort: "https", protocol: "TCP" }]);
    const policy = find(objects, "NetworkPolicy", "gitops-reverser").spec as {
      ingress: { ports: { port: number }[] }[];
    };
    assert.ok(
      policy.ingress[0]!.ports.some((p) => p.port === 8443),
      "the NetworkPolicy admits 8443",
    );

    // A certificate of one's own: mounted, named to the operator, and verified by the scrape.
    const own = await template(
      ...on,
      "--set",
      "metrics.certificate.secretName=metrics-tls",
      "--set",
      "metrics.serviceMonitor.tlsConfig.serverName=gitops-reverser-metrics.gitops-reverser.svc",
    );
    assert.deepEqual(endpointOf(own.objects).tlsConfig, {
      serverName: "gitops-reverser-metrics.gitops-reverser.svc",
    });
    const args = (
      find(own.objects, "Deployment", "gitops-reverser").spec as {
        template: { spec: { containers: { args: string[] }[] } };
      }
    ).template.spec.containers[0]!.args;
    assert.equal(
      parseFlags(args, flagParser().exitOverride()).metricsCertPath,
      "/etc/gitops-reverser/metrics-tls",
    );

    // Plain HTTP only when asked: no reviews to ask for, and a plain scrape.
    const plain = await template(...on, "--set", "metrics.secure=false");
    assert.deepEqual(endpointOf(plain.objects), { port: "http", path: "/metrics", interval: "30s" });
    assert.ok(!plain.objects.some((o) => o.metadata.name === "gitops-reverser-metrics-auth"));
  });
});
