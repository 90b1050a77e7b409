// The install manifests: config/default rendered by the pinned kubectl's kustomize, checked by a
// real API server (a server-side dry run, then a real apply), and the operator run as the
// ServiceAccount they create, so the ClusterRole is shown to be enough as well as small.
import { startOperatorProcess } from "../../support/operator.ts";
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  AppsV1Api,
  AuthorizationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  EventsV1Api,
  type KubeConfig,
} from "@kubernetes/client-node";
import { flagParser, parseFlags } from "../../../cmd/flags.ts";
import { gitBranchFinalizer } from "../../../controllers/gitbranch.ts";
import {
  gitBranches,
  gitProviders,
  gitTargets,
  kubeProviders,
  watchRules,
} from "../../../generated/v1alpha3/index.ts";
import { EventRecorder } from "../../../internal/operator/events.ts";
import { kubectl } from "../../support/kubectl.ts";
import {
  assertDryRunAccepts,
  find,
  grants,
  kubectlName,
  product,
  render,
  type Manifest,
} from "../../support/rendered.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { releasedImage } from "../../support/helm.ts";
import { installCrds } from "../../support/manifests.ts";
import { eventually } from "../../support/wait.ts";
import { scrapeAsBoundReader } from "../../support/scrape.ts";
import { quiet } from "../../support/logger.ts";

const systemNamespace = "gitops-reverser-system";
const serviceAccount = `system:serviceaccount:${systemNamespace}:gitops-reverser`;

describe("the install manifests in config/default", () => {
  let plane: ControlPlane;
  let kc: KubeConfig;
  let rendered: Manifest[];
  let renderedFile: string;

  before(async () => {
    plane = await ControlPlane.start();
    kc = plane.kubeConfig();
    const { text, objects } = await render(plane, "config/default");
    rendered = objects;
    renderedFile = join(plane.dir, "default.yaml");
    await writeFile(renderedFile, text);
  });
  after(async () => {
    await plane?.stop();
  });

  it("renders the CRDs, the RBAC and the operator, and a server-side dry run accepts all of it", async (t) => {
    const kinds = rendered.map((o) => o.kind);
    assert.equal(kinds.filter((k) => k === "CustomResourceDefinition").length, 11);
    for (const kind of ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role"])
      assert.ok(kinds.includes(kind), `renders a ${kind}`);
    for (const object of rendered) {
      if (object.kind === "CustomResourceDefinition" || object.kind.startsWith("Cluster")) continue;
      if (object.kind === "Namespace") continue;
      assert.equal(object.metadata.namespace, systemNamespace, `${kubectlName(object)}'s namespace`);
    }

    // Namespaced objects are admitted only into a namespace that exists; the rest may be new.
    const namespace = find(rendered, "Namespace", systemNamespace);
    const nsFile = join(plane.dir, "namespace.yaml");
    await writeFile(nsFile, JSON.stringify(namespace));
    const created = await kubectl(plane, "apply", "--server-side", "-f", nsFile);
    assert.equal(created.code, 0, created.stderr);

    const result = await assertDryRunAccepts(t, plane, renderedFile, rendered);
    // The namespace enforces the restricted Pod Security Standard, and warns on workloads.
    assert.doesNotMatch(result.stderr, /PodSecurity/, result.stderr);

    const apps = kc.makeApiClient(AppsV1Api);
    await assert.rejects(
      apps.readNamespacedDeployment({ namespace: systemNamespace, name: "gitops-reverser" }),
      (err: { code?: number }) => err.code === 404,
      "a dry run creates nothing",
    );
  });

  it("grants on configbutler.ai only reads, status writes, and finalizer patches of GitBranches and applier claims", () => {
    const plurals = rendered
      .filter((o) => o.kind === "CustomResourceDefinition")
      .map((crd) => (crd.spec as { names: { plural: string } }).names.plural)
      .sort();
    assert.equal(plurals.length, 11);

    const role = find(rendered, "ClusterRole", "gitops-reverser");
    const granted = grants(role.rules ?? []);
    const expected = [
      ...product(["configbutler.ai"], plurals, ["get", "list", "watch"]),
      ...product(
        ["configbutler.ai"],
        plurals.map((p) => `${p}/status`),
        ["patch", "update"],
      ),
      ...product(["configbutler.ai"], ["gitbranches", "fluxclaims", "argocdclaims"], ["patch", "update"]),
      ...product(["configbutler.ai"], ["commitrequests"], ["delete", "patch"]),
      ...product(["events.k8s.io"], ["events"], ["create", "patch"]),
      ...product([""], ["secrets"], ["get", "create", "update"]),
      ...product([""], ["namespaces"], ["list", "watch"]),
      ...product(["kustomize.toolkit.fluxcd.io"], ["kustomizations"], ["get", "list", "patch"]),
      ...product(["source.toolkit.fluxcd.io"], ["gitrepositories"], ["get", "patch"]),
      ...product(["argoproj.io"], ["applications"], ["get", "patch", "update"]),
      "apiextensions.k8s.io|customresourcedefinitions|get|applications.argoproj.io",
      "apiextensions.k8s.io|customresourcedefinitions|get|argocdclaims.configbutler.ai",
      "apiextensions.k8s.io|customresourcedefinitions|get|clusterwatchrules.configbutler.ai",
      "apiextensions.k8s.io|customresourcedefinitions|get|commitrequests.configbutler.ai",
      "apiextensions.k8s.io|customresourcedefinitions|get|fluxclaims.configbutler.ai",
      "apiextensions.k8s.io|customresourcedefinitions|get|gitbranches.configbutler.ai",
      "apiextensions.k8s.io|customresourcedefinitions|get|gitproviders.configbutler.ai",
      "apiextensions.k8s.io|customresourcedefinitions|get|gitreceivers.configbutler.ai",
      "apiextensions.k8s.io|customresourcedefinitions|get|gittargets.configbutler.ai",
      "apiextensions.k8s.io|customresourcedefinitions|get|kubeproviders.configbutler.ai",
      "apiextensions.k8s.io|customresourcedefinitions|get|watchrules.configbutler.ai",
      "apiextensions.k8s.io|customresourcedefinitions|get|webhookclaims.configbutler.ai",
    ].sort();
    assert.deepEqual(granted, expected);

    // No wildcard, and no write verb but those above, anywhere in the RBAC: delete only of a
    // finished CommitRequest, and of the shard Leases of a replica or a branch that went (in the
    // operator's own namespace, below).
    for (const object of rendered.filter((o) => o.kind === "ClusterRole" || o.kind === "Role")) {
      for (const rule of object.rules ?? []) {
        for (const field of [rule.apiGroups, rule.resources, rule.verbs])
          assert.ok(!field?.includes("*"), `${object.metadata.name} has a wildcard`);
        for (const verb of ["deletecollection", "escalate", "bind", "impersonate"])
          assert.ok(!rule.verbs.includes(verb), `${object.metadata.name} grants ${verb}`);
        if (rule.verbs.includes("delete"))
          assert.ok(
            ["commitrequests", "leases"].includes(rule.resources?.join() ?? ""),
            `${object.metadata.name} grants delete of ${rule.resources?.join()}`,
          );
      }
    }

    // Leases only in the operator's own namespace.
    const leader = find(rendered, "Role", "gitops-reverser-leader-election");
    assert.equal(leader.metadata.namespace, systemNamespace);
    assert.deepEqual(
      grants(leader.rules ?? []),
      product(["coordination.k8s.io"], ["leases"], ["create", "delete", "get", "list", "update", "watch"]),
    );
    assert.ok(!granted.some((g) => g.startsWith("coordination.k8s.io|")), "no cluster-wide leases");

    // Read access to watched types comes by aggregation; the default is read-only.
    const watched = find(rendered, "ClusterRole", "gitops-reverser-watched");
    assert.equal(watched.rules, undefined, "the aggregated role's rules are left to Kubernetes");
    const selector = watched.aggregationRule?.clusterRoleSelectors[0]?.matchLabels;
    assert.deepEqual(selector, { "configbutler.ai/aggregate-to-gitops-reverser": "true" });
    const aggregated = rendered.filter(
      (o) =>
        o.kind === "ClusterRole" &&
        Object.entries(selector).every(([key, value]) => o.metadata.labels?.[key] === value),
    );
    assert.deepEqual(
      aggregated.map((o) => o.metadata.name),
      ["gitops-reverser-watched-default"],
    );
    assert.deepEqual(
      grants(aggregated[0]!.rules ?? []),
      [
        ...product([""], ["configmaps"], ["get", "list", "watch"]),
        ...product(["apps"], ["deployments"], ["get", "list", "watch"]),
      ].sort(),
    );

    // The metrics server only asks the API server about scrapers; who may scrape is the
    // reader role's, bound by whoever installs Prometheus.
    assert.deepEqual(
      grants(find(rendered, "ClusterRole", "gitops-reverser-metrics-auth").rules ?? []),
      [
        ...product(["authentication.k8s.io"], ["tokenreviews"], ["create"]),
        ...product(["authorization.k8s.io"], ["subjectaccessreviews"], ["create"]),
      ].sort(),
    );
    assert.deepEqual(find(rendered, "ClusterRole", "gitops-reverser-metrics-reader").rules, [
      { nonResourceURLs: ["/metrics"], verbs: ["get"] },
    ]);

    // Each of the four is bound to the operator's ServiceAccount, and only to it.
    const bound = rendered
      .filter((o) => o.kind === "ClusterRoleBinding" || o.kind === "RoleBinding")
      .map((b) => {
        assert.deepEqual(b.subjects, [
          { kind: "ServiceAccount", name: "gitops-reverser", namespace: systemNamespace },
        ]);
        return `${b.roleRef!.kind}/${b.roleRef!.name}`;
      })
      .sort();
    assert.deepEqual(bound, [
      "ClusterRole/gitops-reverser",
      "ClusterRole/gitops-reverser-metrics-auth",
      "ClusterRole/gitops-reverser-watched",
      "Role/gitops-reverser-leader-election",
    ]);
  });

  it("runs the operator with flags it accepts, non-root on a read-only root with /tmp writable, behind probes", () => {
    const deployment = find(rendered, "Deployment", "gitops-reverser");
    interface Container {
      image: string;
      args: string[];
      env: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
      livenessProbe: { httpGet: { path: string; port: number } };
      readinessProbe: { httpGet: { path: string; port: number } };
      resources: { requests: object; limits: object };
      securityContext: Record<string, unknown>;
      volumeMounts: { name: string; mountPath: string }[];
    }
    const spec = deployment.spec as {
      replicas: number;
      template: {
        metadata: { labels: Record<string, string> };
        spec: {
          serviceAccountName: string;
          securityContext: Record<string, unknown>;
          containers: Container[];
          volumes: { name: string; emptyDir?: object }[];
        };
      };
    };
    assert.equal(spec.replicas, 1);
    const pod = spec.template.spec;
    assert.equal(pod.serviceAccountName, "gitops-reverser");
    assert.equal(pod.containers.length, 1);
    const [container] = pod.containers as [Container];
    // Pinned at the chart's appVersion, never :latest.
    assert.equal(container.image, releasedImage);

    // Parsed as the process parses them: the container's args, and its plain environment values.
    const plain = container.env.filter((e): e is { name: string; value: string } => "value" in e);
    for (const { name, value } of plain) process.env[name] = value;
    const options = (() => {
      try {
        return parseFlags(container.args, flagParser().exitOverride());
      } finally {
        for (const { name } of plain) delete process.env[name];
      }
    })();
    assert.equal(options.authorAttribution, false, "a first install is configured-author");
    assert.equal(options.leaderElect, true);
    assert.equal(options.metricsBindAddress, ":8443");
    assert.equal(options.metricsSecure, true);
    assert.equal(options.healthProbeBindAddress, ":8081");
    assert.deepEqual(container.env, [
      { name: "GITOPS_REVERSER_AUTHOR_ATTRIBUTION", value: "false" },
      { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
    ]);
    assert.deepEqual(container.livenessProbe.httpGet, { path: "/healthz", port: 8081 });
    assert.deepEqual(container.readinessProbe.httpGet, { path: "/readyz", port: 8081 });
    assert.ok(container.resources.requests && container.resources.limits);

    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.deepEqual(pod.securityContext.seccompProfile, { type: "RuntimeDefault" });
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(container.securityContext.capabilities, { drop: ["ALL"] });
    const tmp = container.volumeMounts.find((m) => m.mountPath === "/tmp");
    assert.ok(tmp, "/tmp is mounted");
    assert.ok(pod.volumes.find((v) => v.name === tmp.name)?.emptyDir, "/tmp is an emptyDir");

    const service = find(rendered, "Service", "gitops-reverser-metrics");
    const { selector, ports } = service.spec as {
      selector: Record<string, string>;
      ports: { port: number; targetPort: string }[];
    };
    assert.deepEqual(
      ports.map((p) => [p.port, p.targetPort]),
      [[8443, "https"]],
    );
    for (const [key, value] of Object.entries(selector))
      assert.equal(spec.template.metadata.labels[key], value, `the Service selects the pod by ${key}`);
  });

  it("renders config/samples, which a server-side dry run accepts once the CRDs and team-a exist", async (t) => {
    await installCrds(kc);
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "team-a" } } });
    const { text, objects } = await render(plane, "config/samples");
    assert.equal(new Set(objects.map((o) => o.kind)).size, 11, "the samples cover every kind");
    const file = join(plane.dir, "samples.yaml");
    await writeFile(file, text);
    await assertDryRunAccepts(t, plane, file, objects);
  });

  it("applied for real, gives the operator exactly what it needs: it leads, serves /metrics only to a scraper bound to the reader role (401, 403, 200), writes status and finalizers, and records events", async () => {
    const applied = await kubectl(plane, "apply", "--server-side", "-f", renderedFile);
    assert.equal(applied.code, 0, applied.stderr);

    // What the ServiceAccount may and may not do, as the API server's authorizer answers.
    const authorization = kc.makeApiClient(AuthorizationV1Api);
    const may = async (verb: string, group: string, resource: string, namespace?: string) => {
      const [plain, subresource] = resource.split("/");
      const review = await authorization.createSubjectAccessReview({
        body: {
          spec: {
            user: serviceAccount,
            groups: ["system:serviceaccounts", `system:serviceaccounts:${systemNamespace}`],
            resourceAttributes: { verb, group, resource: plain, subresource, namespace },
          },
        },
      });
      return review.status?.allowed === true;
    };
    const allowed: [string, string, string, string?][] = [
      ["list", "configbutler.ai", "gittargets"],
      ["watch", "configbutler.ai", "clusterwatchrules"],
      ["patch", "configbutler.ai", "gittargets/status", "team-a"],
      ["patch", "configbutler.ai", "fluxclaims", "team-a"],
      ["watch", "configbutler.ai", "webhookclaims"],
      ["get", "configbutler.ai", "webhookclaims", "team-a"],
      ["patch", "configbutler.ai", "webhookclaims/status", "team-a"],
      ["update", "configbutler.ai", "gitbranches", "team-a"],
      ["create", "events.k8s.io", "events", "team-a"],
      ["get", "", "secrets", "team-a"],
      ["create", "", "secrets", "team-a"],
      ["watch", "", "namespaces"],
      ["update", "coordination.k8s.io", "leases", systemNamespace],
      ["delete", "coordination.k8s.io", "leases", systemNamespace],
      ["delete", "configbutler.ai", "commitrequests", "team-a"],
      ["patch", "kustomize.toolkit.fluxcd.io", "kustomizations", "team-a"],
      ["get", "source.toolkit.fluxcd.io", "gitrepositories", "team-a"],
      ["patch", "source.toolkit.fluxcd.io", "gitrepositories", "team-a"],
      ["get", "argoproj.io", "applications", "team-a"],
      ["update", "argoproj.io", "applications", "team-a"],
      ["create", "authentication.k8s.io", "tokenreviews"],
      ["create", "authorization.k8s.io", "subjectaccessreviews"],
    ];
    const denied: [string, string, string, string?][] = [
      ["create", "configbutler.ai", "gittargets", "team-a"],
      ["patch", "configbutler.ai", "gittargets", "team-a"],
      ["delete", "configbutler.ai", "gitbranches", "team-a"],
      ["update", "configbutler.ai", "kubeproviders", "team-a"],
      ["create", "configbutler.ai", "webhookclaims", "team-a"],
      ["update", "configbutler.ai", "webhookclaims", "team-a"],
      ["delete", "configbutler.ai", "webhookclaims", "team-a"],
      ["list", "", "secrets", "team-a"],
      ["delete", "", "secrets", "team-a"],
      ["watch", "", "secrets"],
      ["get", "", "namespaces"],
      ["create", "", "events", "team-a"],
      ["create", "coordination.k8s.io", "leases", "default"],
      ["delete", "coordination.k8s.io", "leases", "default"],
      ["delete", "kustomize.toolkit.fluxcd.io", "kustomizations", "team-a"],
      ["delete", "source.toolkit.fluxcd.io", "gitrepositories", "team-a"],
      ["delete", "argoproj.io", "applications", "team-a"],
      ["create", "argoproj.io", "applications", "team-a"],
    ];
    for (const check of allowed) assert.ok(await may(...check), `may ${check.join(" ")}`);
    for (const check of denied) assert.ok(!(await may(...check)), `may not ${check.join(" ")}`);

    const identity = await plane.serviceAccountToken(systemNamespace, "gitops-reverser");
    const {
      process: operator,
      port,
      logFile,
    } = startOperatorProcess(identity.kubeconfigPath, plane.dir, ["--leader-elect=true"], {
      POD_NAMESPACE: systemNamespace,
    });
    try {
      const [probePort, metricsPort] = [await port("probes"), await port("metrics")];
      // Ready means every informer listed and watched its collection.
      await eventually(
        async () => {
          operator.assertRunning();
          return (await fetch(`http://127.0.0.1:${probePort}/readyz`)).status === 200;
        },
        { timeoutMs: 30_000, description: "/readyz to answer 200" },
      );
      const leases = kc.makeApiClient(CoordinationV1Api);
      await eventually(
        async () =>
          (await leases.readNamespacedLease({ namespace: systemNamespace, name: "gitops-reverser-leader" }))
            .spec?.holderIdentity,
        { description: "the operator to hold its Lease in its own namespace" },
      );

      // /metrics over HTTPS: the API server says who a scraper is, and whether they may read it.
      const scraped = await scrapeAsBoundReader(
        plane,
        `https://127.0.0.1:${metricsPort}/metrics`,
        "gitops-reverser-metrics-reader",
        "prometheus",
      );
      assert.match(scraped.body, /^gitopsreverser_leader 1$/m);

      const ns = "deploy-a";
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
      const meta = { namespace: ns, name: "repo" };
      const apiVersion = "configbutler.ai/v1alpha3";
      // A 404 for its Secret, not a 403, and a status written about it.
      await gitProviders(kc).apply(
        {
          apiVersion,
          kind: "GitProvider",
          metadata: meta,
          spec: { url: "https://git.invalid/repo.git", secretRef: { name: "absent" } },
        },
        "test",
      );
      await kubeProviders(kc).apply(
        {
          apiVersion,
          kind: "KubeProvider",
          metadata: { namespace: ns, name: "here" },
          spec: { inCluster: {} },
        },
        "test",
      );
      await gitBranches(kc).apply(
        {
          apiVersion,
          kind: "GitBranch",
          metadata: { namespace: ns, name: "main" },
          spec: { gitProviderRef: { name: "repo" }, branch: "main" },
        },
        "test",
      );
      const reasonOf = (
        object: { status?: { conditions?: { type: string; reason: string }[] } } | undefined,
      ) => object?.status?.conditions?.find((c) => c.type === "Validated")?.reason;
      await eventually(async () => reasonOf(await gitProviders(kc).get(ns, "repo")) === "SecretNotFound", {
        description: "the GitProvider's status to say SecretNotFound",
      });
      await eventually(
        async () => reasonOf(await kubeProviders(kc).get(ns, "here")) === "InClusterNotAuthorized",
        { description: "the KubeProvider's status to say InClusterNotAuthorized" },
      );
      const branch = await eventually(
        async () => {
          const found = await gitBranches(kc).get(ns, "main");
          return (
            found?.metadata.finalizers?.includes(gitBranchFinalizer) && found.status?.conditions && found
          );
        },
        { description: "the GitBranch to carry its finalizer and a status" },
      );
      // The kinds that only ever get a status: written as well.
      await gitTargets(kc).apply(
        {
          apiVersion,
          kind: "GitTarget",
          metadata: { namespace: ns, name: "apps" },
          spec: { gitBranchRef: { name: "main" }, kubeProviderRef: { name: "here" }, path: "apps" },
        },
        "test",
      );
      await watchRules(kc).apply(
        {
          apiVersion,
          kind: "WatchRule",
          metadata: { namespace: ns, name: "configmaps" },
          spec: { gitTargetRef: { name: "apps" }, rules: [{ resources: ["configmaps"] }] },
        },
        "test",
      );
      await eventually(async () => (await gitTargets(kc).get(ns, "apps"))?.status?.conditions?.length, {
        description: "the GitTarget to have a status",
      });
      await eventually(async () => (await watchRules(kc).get(ns, "configmaps"))?.status?.conditions?.length, {
        description: "the WatchRule to have a status",
      });

      await gitBranches(kc).delete(ns, "main");
      await eventually(async () => (await gitBranches(kc).get(ns, "main")) === undefined, {
        description: "the GitBranch to go once the operator removed its finalizer",
      });

      const failures: string[] = [];
      const recorder = new EventRecorder(identity.kubeConfig, "deploy-test", {
        ...quiet,
        warn: (_message, meta) => failures.push(JSON.stringify(meta)),
      });
      await recorder.record(branch, "Normal", "Checked", "Check", "recorded as the ServiceAccount");
      assert.deepEqual(failures, []);
      const events = await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: ns });
      assert.ok(events.items.some((e) => e.reason === "Checked"));

      await operator.stop();
      assert.deepEqual(await operator.exited, { code: 0, signal: null }, operator.logTail());
      const released = await leases.readNamespacedLease({
        namespace: systemNamespace,
        name: "gitops-reverser-leader",
      });
      assert.equal(released.spec?.holderIdentity, "", "it could update its Lease to give it up");
      const log = await readFile(logFile, "utf8");
      assert.doesNotMatch(log, /forbidden/i, "nothing the operator did was refused");
    } finally {
      await operator.stop();
    }
  });
});
