// The demo's WebhookClaim step: any tool that takes a signed webhook as the applier. A folder in
// a repository of its own is written by a GitTarget that names a WebhookClaim; the demo's own
// small deployer (test/support/webhookapplier.ts) takes the operator's signed POST, applies the
// requested commit with kubectl under its own field manager, and reports back to the operator's
// receiver. A colleague's push reaches the cluster through it, a live edit reaches Git, and the
// deployer applies only when the branch worker asks.
import { webhookClaims, type WebhookClaim } from "../../generated/v1alpha3/index.ts";
import type { ControlPlane } from "../../test/support/controlplane.ts";
import type { GitServer } from "../../test/support/gitserver.ts";
import { kubectlOk } from "../../test/support/kubectl.ts";
import { applyMirror } from "../../test/support/mirror.ts";
import { eventually } from "../../test/support/wait.ts";
import { WebhookApplier } from "../../test/support/webhookapplier.ts";
import type { CoreV1Api, KubeConfig } from "@kubernetes/client-node";

/** The namespace the step mirrors; the operator serves its KubeProvider `self` in-cluster. */
export const webhookNamespace = "deploys";

export interface WebhookDemo {
  plane: ControlPlane;
  kc: KubeConfig;
  core: CoreV1Api;
  git: GitServer;
  user: { username: string; password: string };
  /** The operator's receiver, as it listens now. */
  receiver: () => { host: string; port: number } | undefined;
  /** Posts a push notice for `url` to the operator's receiver. */
  notice: (url: string) => Promise<string>;
  print: (line: string) => void;
}

/** Runs the step; returns the deployer, to close at the end. */
export async function demoWebhookClaim(demo: WebhookDemo): Promise<WebhookApplier> {
  const { kc, core, git, user, print } = demo;
  const namespace = webhookNamespace;
  const url = await git.createRepository("deploys");
  const folder = `clusters/deploys`;
  const token = "demo-deployer-token";
  const applier = await WebhookApplier.start({
    token,
    plane: demo.plane,
    kubeConfig: kc,
    gitUser: user,
    folder,
    receiverUrl: () => {
      const address = demo.receiver();
      return address && `http://${address.host}:${address.port}`;
    },
  });
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: "deployer-hook" }, stringData: { token } },
  });
  await webhookClaims(kc).apply(claim(applier), "demo");
  await applyMirror(kc, namespace, url, user, [
    {
      name: "deploys",
      path: folder,
      idleTimeout: "2s",
      rules: [
        { apiGroups: [""], resources: ["configmaps"], objectSelector: { matchLabels: { app: "shop" } } },
      ],
      applierClaimRef: { kind: "WebhookClaim", name: "deployer" },
    },
  ]);
  const ready = await eventually(
    async () => {
      const c = await webhookClaims(kc).get(namespace, "deployer");
      const inControl = c?.status?.conditions?.find((x) => x.type === "InControl");
      return inControl?.status === "True" && c;
    },
    { timeoutMs: 60_000, description: "the WebhookClaim to be InControl" },
  );
  const reason = (type: string) => ready.status?.conditions?.find((c) => c.type === type)?.reason;
  print(`    WebhookClaim deployer: Configured ${reason("Configured")}, InControl ${reason("InControl")}`);

  // A live edit reaches Git as every live edit does; the deployer is asked for the tip after it.
  await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: "release", labels: { app: "shop" } }, data: { version: "1" } },
  });
  const file = `${folder}/${namespace}/configmaps/release.yaml`;
  const written = await eventually(
    () => git.gitIn("deploys", ["show", `main:${file}`]).catch(() => undefined),
    {
      timeoutMs: 60_000,
      description: "the live ConfigMap in Git",
    },
  );
  print(`    kubectl create configmap release (version 1): in Git as ${file}`);

  // A colleague pushes version 2; the push notice wakes the worker, which asks the deployer.
  const pushed = await git.pushForeignCommit("deploys", {
    files: { [file]: written.replace('version: "1"', 'version: "2"') },
    message: "Release version 2",
  });
  const startedAt = Date.now();
  await demo.notice(url);
  await eventually(
    async () => (await core.readNamespacedConfigMap({ namespace, name: "release" })).data?.version === "2",
    { timeoutMs: 60_000, description: "the pushed version applied by the deployer" },
  );
  print(
    `    a colleague pushed ${pushed.slice(0, 7)} (version 2): applied by the deployer ${((Date.now() - startedAt) / 1000).toFixed(1)} s after the push notice`,
  );
  const request = applier.requestsFor(pushed)[0];
  if (request) {
    print(`    the deployer received: POST ${new URL(applier.url).pathname} ${request.body}`);
    print(
      `      X-Signature: ${String(request.headers["x-signature"])} (HMAC-SHA256 of the body, keyed by the token)`,
    );
  }
  const ended = await eventually(
    async () => {
      const operation = (await webhookClaims(kc).get(namespace, "deployer"))?.status?.operation;
      return operation?.commit === pushed && operation.phase === "Succeeded" && operation;
    },
    { timeoutMs: 60_000, description: "the operation Succeeded, as the deployer reported" },
  );
  print(`    status.operation: ${ended.phase} (${ended.reason}): ${ended.message}`);
  print("    kubectl get webhookclaims -n deploys");
  print(
    (await kubectlOk(demo.plane, "get", "webhookclaims", "-n", namespace)).replace(/^/gm, "      ").trimEnd(),
  );
  return applier;
}

function claim(applier: WebhookApplier): WebhookClaim {
  return {
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "WebhookClaim",
    metadata: { name: "deployer", namespace: webhookNamespace },
    spec: {
      url: applier.url,
      secretRef: { name: "deployer-hook" },
      fieldManagers: [applier.fieldManager],
      completion: { mode: "Callback" },
    },
  };
}
