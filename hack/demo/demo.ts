// make demo: the main job on an embedded default. Starts a local kube-apiserver, a Git server
// with an empty repository and the operator, applies the providers, a branch, a target and a
// rule, makes a few changes in the cluster (as the admin, as alice and as a ServiceAccount), and
// shows the commits the operator wrote: authored by whoever made each change, as the audit
// webhook named them (the facts carried by Redis Streams, where the watches keep their resume
// cursors too), signed with a key it generated and checked by git verify-commit; a colleague's
// hand-made commit announced by a signed GitHub push webhook; alice's edits saved with a
// CommitRequest and its message; a FluxClaim holding the Kustomization that applies the folder
// (when the Flux controllers are built), where a value kustomize cannot carry is held back and
// named until it is fixed; and a Secret applied server-side from a stringData
// manifest, which it wrote as a SOPS document with every key, decrypted by the real sops CLI.
// Last, three operator processes share the repository's branches out (hack/demo/replicas.ts).
import { AppsV1Api, CoreV1Api } from "@kubernetes/client-node";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import {
  commitRequests,
  gitBranches,
  gitProviders,
  gitReceivers,
  gitTargets,
} from "../../generated/v1alpha3/index.ts";
import { deliverGithubPush } from "./push.ts";
import { ControlPlane } from "../../test/support/controlplane.ts";
import { GitServer } from "../../test/support/gitserver.ts";
import { installCrds } from "../../test/support/manifests.ts";
import { applyGeneratedSigning, applyMirror, type MirrorTarget } from "../../test/support/mirror.ts";
import type { Flux } from "../../test/support/flux.ts";
import { demoFluxClaim } from "./flux.ts";
import { demoReplicas } from "./replicas.ts";
import { demoWebhookClaim, webhookNamespace } from "./webhook.ts";
import type { WebhookApplier } from "../../test/support/webhookapplier.ts";
import { fluxBuilt } from "../../test/support/flux.ts";
import { startOperator, type OperatorProcess } from "../../test/support/operator.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../test/support/reaper.ts";
import { ageIdentity, sopsDecryptText } from "../../test/support/sops.ts";
import { attributionEnv, grantEditing } from "../../test/support/attributionenv.ts";
import { RedisServer } from "../../test/support/redis.ts";
import { eventually } from "../../test/support/wait.ts";
import { kubectlOk } from "../../test/support/kubectl.ts";
import { registerInstruments } from "../../internal/telemetry/instruments.ts";
import { createRegistry } from "../../internal/telemetry/metrics.ts";

const namespace = "demo";
const user = { username: "demo", password: "demo-password" };
const say = (line: string) => process.stdout.write(`\n==> ${line}\n`);

const started = Date.now();
say("Starting kube-apiserver, etcd, a Git server and Redis on loopback");
const keys = makeOwnedTempDir("demo-keys");
// kube-apiserver's audit webhook posts to the operator's audit ingress, over mTLS.
const attribution = await attributionEnv(keys);
const [plane, git, redis] = await Promise.all([
  ControlPlane.start({ audit: attribution.webhook(`${namespace}.self`) }),
  GitServer.start({ users: [user] }),
  RedisServer.start(),
]);
const workerRoot = makeOwnedTempDir("demo-workers");
let operator: ReturnType<typeof startOperator> | undefined;
let flux: Flux | undefined;
let webhookDeployer: WebhookApplier | undefined;
const replicas: OperatorProcess[] = [];
try {
  const kc = plane.kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  await installCrds(kc);
  const url = await git.createRepository("cluster-state");
  process.stdout.write(`    apiserver ${plane.server}\n    repository ${url}\n    redis ${redis.address}\n`);
  // The identity Flux would hold to decrypt; the operator is given only its public key.
  const identity = await ageIdentity(keys, "flux");
  process.stdout.write(`    age recipient ${identity.recipient}\n`);

  say("Applying a GitProvider, a GitBranch, a KubeProvider, a GitTarget and a WatchRule");
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const target: MirrorTarget = {
    name: "demo",
    path: "clusters/demo",
    idleTimeout: "2s",
    recipients: [identity.recipient],
    rules: [
      { apiGroups: [""], resources: ["configmaps", "secrets"] },
      { apiGroups: ["apps"], resources: ["deployments"] },
    ],
  };
  await applyMirror(kc, namespace, url, user, [target]);

  // Every commit signed with an ed25519 key the operator generates into the Secret "signing".
  await applyGeneratedSigning(kc, namespace);
  // alice (a client certificate) and the deployer ServiceAccount make some of the changes.
  const alice = await plane.mintUser("alice");
  const deployer = await plane.serviceAccountToken(namespace, "deployer");
  await grantEditing(kc, namespace, [
    { kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" },
    { kind: "ServiceAccount", name: "deployer", namespace },
  ]);

  say("Starting the operator");
  const operatorSettings = {
    inClusterKubeProviders: [`${namespace}/self`, `${webhookNamespace}/self`],
    workerRoot,
    pushCooldownMs: 1_000,
    attribution: attribution.settings({ transport: "redis" }),
    redisAddr: redis.address,
    receiverBindAddress: "127.0.0.1:0",
    // The demo's deployer listens on plain http on loopback.
    webhookClaimAllowLoopbackHttp: true,
  };
  operator = startOperator(kc, operatorSettings);
  await eventually(
    async () =>
      (await gitTargets(kc).get(namespace, "demo"))?.status?.conditions?.find((c) => c.type === "Ready")
        ?.status === "True",
    { timeoutMs: 60_000, description: "the GitTarget to become Ready" },
  );

  const show = (path: string) => git.gitIn("cluster-state", ["show", `main:${path}`]).catch(() => undefined);
  say("Creating two ConfigMaps, a Secret and a Deployment");
  await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: "settings" }, data: { color: "blue", replicas: "2" } },
  });
  await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: "feature-flags" }, data: { newCheckout: "false" } },
  });
  // As people write Secrets: a stringData manifest, applied server-side. The API server stores
  // it as data, owned by nobody; the operator writes every key (docs/sanitize.md).
  const secretManifest = join(keys, "db-credentials.yaml");
  writeFileSync(
    secretManifest,
    stringify({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "db-credentials", namespace },
      stringData: { username: "shop", password: "correct-horse" },
    }),
  );
  await kubectlOk(plane, "apply", "--server-side", "-f", secretManifest);
  await kc.makeApiClient(AppsV1Api).createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name: "web", labels: { app: "web" } },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { labels: { app: "web" } },
          spec: { containers: [{ name: "web", image: "nginx:1.27" }] },
        },
      },
    },
  });
  await eventually(() => show("clusters/demo/demo/apps/deployments/web.yaml"), {
    timeoutMs: 60_000,
    description: "the Deployment in Git",
  });

  say(
    "alice edits one ConfigMap, the admin deletes the other, the deployer ServiceAccount scales the Deployment",
  );
  await alice.kubeConfig.makeApiClient(CoreV1Api).patchNamespacedConfigMap({
    namespace,
    name: "settings",
    body: [{ op: "replace", path: "/data/color", value: "green" }],
  });
  await core.deleteNamespacedConfigMap({ namespace, name: "feature-flags" });
  await deployer.kubeConfig.makeApiClient(AppsV1Api).patchNamespacedDeployment({
    namespace,
    name: "web",
    body: [{ op: "replace", path: "/spec/replicas", value: 3 }],
  });
  await eventually(
    async () =>
      (await show("clusters/demo/demo/configmaps/feature-flags.yaml")) === undefined &&
      ((await show("clusters/demo/demo/apps/deployments/web.yaml")) ?? "").includes("replicas: 3") &&
      ((await show("clusters/demo/demo/configmaps/settings.yaml")) ?? "").includes("color: green"),
    { timeoutMs: 60_000, description: "the edits in Git" },
  );

  say("A colleague pushes to Git by hand; the host's push webhook reaches the GitReceiver");
  await core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: "hook" }, stringData: { token: "demo-hook-token" } },
  });
  await gitReceivers(kc).apply(
    {
      apiVersion: "configbutler.ai/v1alpha3",
      kind: "GitReceiver",
      metadata: { name: "github", namespace },
      spec: { type: "github", secretRef: { name: "hook" } },
    },
    "demo",
  );
  const webhookPath = await eventually(
    async () => (await gitReceivers(kc).get(namespace, "github"))?.status?.webhookPath,
    { description: "the GitReceiver's webhook path" },
  );
  await git.pushForeignCommit("cluster-state", {
    files: { "clusters/demo/NOTES.md": "Reviewed by the platform team.\n" },
    message: "Add review notes",
    author: { name: "Colleague", email: "colleague@example.com" },
  });
  const answer = await deliverGithubPush(operator.receiver!.address!, webhookPath, "demo-hook-token", url);
  const noticed = await eventually(
    async () => (await gitBranches(kc).get(namespace, "main"))?.status?.lastPushNoticeAt,
    { description: "the GitBranch to record the delivery" },
  );
  process.stdout.write(
    `    POST ${webhookPath} (X-Hub-Signature-256): ${answer}; GitBranch lastPushNoticeAt ${noticed}\n`,
  );
  process.stdout.write(
    "    the worker reads the remote itself, so the next commit sits on the colleague's\n",
  );

  say("alice saves her next edits now, with a CommitRequest: one commit, her message, closed on her timers");
  const message = "Move checkout to the teal theme\n\nTicket SHOP-142: both settings in one reviewed change.";
  await commitRequests(alice.kubeConfig).apply(
    {
      apiVersion: "configbutler.ai/v1alpha3",
      kind: "CommitRequest",
      metadata: { name: "shop-142", namespace },
      // It waits for her next window, and closes it 3 s after attaching, whatever the target's timers say.
      spec: { gitTargetRef: { name: "demo" }, message, window: { attachTimeout: "30s", maxDuration: "3s" } },
    },
    "alice",
  );
  const aliceCore = alice.kubeConfig.makeApiClient(CoreV1Api);
  for (const [path, value] of [
    ["/data/color", "teal"],
    ["/data/replicas", "4"],
  ] as const)
    await aliceCore.patchNamespacedConfigMap({
      namespace,
      name: "settings",
      body: [{ op: "replace", path, value }],
    });
  const saved = await eventually(
    async () => {
      const request = await commitRequests(kc).get(namespace, "shop-142");
      const ready = request?.status?.conditions?.find((c) => c.type === "Ready");
      return request && ready?.status === "True" && { request, ready };
    },
    { timeoutMs: 60_000, description: "the CommitRequest to finish" },
  );
  process.stdout.write(
    `    kubectl get commitrequest shop-142: author ${saved.request.status?.author}, commit ${saved.request.status?.commit?.slice(0, 7)}, Ready ${saved.ready.status}, reason ${saved.ready.reason}\n`,
  );
  const body = await git.gitIn("cluster-state", [
    "log",
    "-1",
    "--format=%B",
    saved.request.status?.commit ?? "main",
  ]);
  process.stdout.write(`    its commit's message, verbatim:\n${body.replace(/^/gm, "      ")}\n`);

  if (fluxBuilt()) {
    say(
      "Flux applies the ConfigMaps folder; the GitTarget names a FluxClaim, which holds it suspended and applies when the branch worker asks",
    );
    // The colleague's push reaches the worker as every push does here: the Git host's webhook.
    // A restart in the FluxClaim step stops the operator, lets `whileDown` happen, and starts it again.
    const restart = async (whileDown: () => Promise<void>) => {
      await operator!.stop();
      await whileDown();
      operator = startOperator(kc, operatorSettings);
    };
    const round = {
      git,
      repository: "cluster-state",
      notice: () => void deliverGithubPush(operator!.receiver!.address!, webhookPath, "demo-hook-token", url),
      restart,
    };
    flux = await demoFluxClaim(plane, { kc, core, url }, namespace, target, user, round, (line) =>
      process.stdout.write(`${line}\n`),
    );
  } else {
    say("FluxClaim: skipped, the Flux controllers are not built (make flux builds them)");
  }

  say(
    "A WebhookClaim: the demo's own deployer applies a folder when the branch worker asks, told by a signed POST, and reports back",
  );
  webhookDeployer = await demoWebhookClaim({
    plane,
    kc,
    core,
    git,
    user,
    receiver: () => operator?.receiver?.address,
    notice: (cloneUrl) =>
      deliverGithubPush(operator!.receiver!.address!, webhookPath, "demo-hook-token", cloneUrl),
    print: (line) => process.stdout.write(`${line}\n`),
  });

  const publicKey = (await gitProviders(kc).get(namespace, "state"))?.status?.signingPublicKey ?? "";
  const signers = join(keys, "allowed_signers");
  writeFileSync(signers, `noreply@configbutler.ai namespaces="git" ${publicKey}\n`);
  say(
    "git log --stat --show-signature: who made each change is its author, the operator its committer, every commit signed",
  );
  process.stdout.write(
    `${await git.gitIn("cluster-state", [
      "-c",
      `gpg.ssh.allowedSignersFile=${signers}`,
      "log",
      "--stat",
      "--show-signature",
      "--format=%h %s%n    Author: %an <%ae>%n    Commit: %cn <%ce>, signature: %G?",
      "main",
    ])}\n`,
  );
  say("clusters/demo/demo/configmaps/settings.yaml");
  process.stdout.write(`${await show("clusters/demo/demo/configmaps/settings.yaml")}`);
  const secretPath = "clusters/demo/demo/secrets/db-credentials.sops.yaml";
  const encrypted = await eventually(() => show(secretPath), { description: "the Secret in Git" });
  say(`${secretPath}: the Secret as Git holds it, encrypted to the age recipient`);
  process.stdout.write(encrypted);
  say(`sops --decrypt ${secretPath}, with the age identity`);
  process.stdout.write(await sopsDecryptText(keys, encrypted, identity));
  const cursors = redis.client();
  const keysInRedis = await cursors.keys("gitopsreverser:*").finally(() => cursors.disconnect());
  say(
    "What Redis holds: a fact stream per type, a resume cursor per watched collection, and each GitBranch's durable write queue (empty once its pushes landed)",
  );
  process.stdout.write(
    `${keysInRedis
      .sort()
      .map((k) => `    ${k}`)
      .join("\n")}\n`,
  );
  say(
    "kubectl get gitbranch: the DurableQueue condition, True while Redis keeps every accepted write until its push",
  );
  process.stdout.write(
    await kubectlOk(
      plane,
      "get",
      "gitbranch",
      "-A",
      "-o",
      'custom-columns=NAME:.metadata.name,DURABLE:.status.conditions[?(@.type=="DurableQueue")].status,MESSAGE:.status.conditions[?(@.type=="DurableQueue")].message',
    ),
  );
  say(`kubectl events -n ${namespace}: what the operator recorded on the objects it reconciles`);
  process.stdout.write(await kubectlOk(plane, "events", "-n", namespace));
  // The instruments /metrics serves (docs/metrics.md), read from this process's registry.
  const registry = createRegistry();
  registerInstruments(registry);
  const exposition = await registry.metrics();
  const shown = [
    "watch_events_total",
    "git_documents_total",
    "git_commits_total",
    "git_pushes_total",
    "git_queue_appends_total",
    "git_branch_targets",
    "resource_condition",
  ].map((family) => `gitopsreverser_${family}`);
  say("/metrics: the pipeline's funnel for this run, and every object's Ready (docs/metrics.md)");
  process.stdout.write(
    `${exposition
      .split("\n")
      .filter((line) => shown.some((name) => line.startsWith(`${name}{`)))
      .filter((line) => !line.includes('condition="Reconciling"') && !line.includes('condition="Stalled"'))
      .map((line) => `    ${line}`)
      .join("\n")}\n`,
  );
  say("More than one replica: the operator stops, and three operator processes with --replica-count=3 start");
  await operator.stop();
  operator = undefined;
  await demoReplicas(
    {
      plane,
      git,
      repository: "cluster-state",
      user,
      redisAddress: redis.address,
      namespace,
      otherNamespaces: [webhookNamespace],
      dir: workerRoot,
    },
    say,
    (text) => process.stdout.write(text),
    replicas,
  );
  say(`Done in ${Math.round((Date.now() - started) / 1000)} s. Stopping everything.`);
} finally {
  await webhookDeployer?.close();
  await flux?.stop();
  await operator?.stop();
  for (const replica of replicas) await replica.process.stop();
  await git.close();
  await plane.stop();
  await redis.stop();
  removeOwnedTempDir(workerRoot);
  removeOwnedTempDir(keys);
}
