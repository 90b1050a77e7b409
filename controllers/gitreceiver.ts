// GitReceiver: reads its token Secret (uncached, by name, on every pass: no Secret value sits in
// an informer, and a rotated token is picked up within a minute), publishes status.webhookPath,
// and serves that path on the push receiver while the operator runs one. It runs on every
// replica, since a Service may send a delivery to any of them; only the leader writes status.
import { CoreV1Api } from "@kubernetes/client-node";
import { gitReceivers, resourceTypes, type GitReceiver } from "../generated/v1alpha3/index.ts";
import { informerSource } from "../internal/kube/sources.ts";
import { readSecret } from "../internal/kube/secrets.ts";
import { Controller, type Reconciler, type Request, type Result } from "../internal/operator/controller.ts";
import type { SharedInformer } from "../internal/operator/informer.ts";
import type { Manager } from "../internal/operator/manager.ts";
import { StatusWriter } from "../internal/operator/status.ts";
import { receiverStatus, type TokenRead } from "../internal/receiver/decide.ts";
import type { PushReceiver } from "../internal/receiver/receiver.ts";
import { fieldManager } from "../internal/operator/fieldmanager.ts";

/** How often the token is read again: a rotation is served within a minute. */
const recheckMs = 60_000;

export class GitReceiverReconciler implements Reconciler {
  private readonly status = new StatusWriter(fieldManager);

  constructor(
    private readonly manager: Manager,
    private readonly receivers: SharedInformer<GitReceiver>,
    /** The listener, when --receiver-bind-address serves one. */
    private readonly listener: Pick<PushReceiver, "register" | "unregister"> | undefined,
  ) {}

  async reconcile(request: Request): Promise<Result> {
    const ref = { namespace: request.namespace ?? "", name: request.name };
    const receiver = this.receivers.get(request.name, request.namespace);
    if (!receiver) {
      this.listener?.unregister(ref);
      return {};
    }
    const decided = receiverStatus(receiver, await this.readToken(receiver), this.listener !== undefined);
    if (decided.webhookPath && decided.token)
      this.listener?.register(decided.webhookPath, ref, receiver.spec.type, decided.token);
    else this.listener?.unregister(ref);
    if (!this.manager.isLeader) return { requeueAfterMs: recheckMs };
    await this.status.write(gitReceivers(this.manager.kubeConfig), receiver, {
      conditions: decided.conditions,
      fields: decided.webhookPath ? { webhookPath: decided.webhookPath } : {},
    });
    return { requeueAfterMs: recheckMs };
  }

  private async readToken(receiver: GitReceiver): Promise<TokenRead> {
    const read = await readSecret(
      this.manager.kubeConfig.makeApiClient(CoreV1Api),
      receiver.metadata.namespace!,
      receiver.spec.secretRef.name,
    );
    if (read.kind === "forbidden") return { found: false, forbidden: read.message };
    if (read.kind === "absent") return { found: false };
    const { secret } = read;
    const token = secret.data?.token
      ? Buffer.from(secret.data.token, "base64").toString("utf8").trim()
      : undefined;
    return { found: true, ...(token ? { token } : {}) };
  }
}

export function setupGitReceiverController(manager: Manager, listener: PushReceiver | undefined): Controller {
  const receivers = manager.informer<GitReceiver>(
    informerSource(manager.kubeConfig, resourceTypes.GitReceiver),
  );
  const controller = new Controller(
    "gitreceiver",
    new GitReceiverReconciler(manager, receivers, listener),
    manager.logger,
    { everyReplica: true },
  ).for(receivers);
  manager.addController(controller);
  // The new leader writes every receiver's status at once, not on its next minute's pass.
  manager.onLeading(() => controller.requeueAll());
  return controller;
}
