import { EventsV1Api, V1MicroTime, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "../telemetry/logger.ts";
import { keyOf } from "../types/names.ts";
import { errorText } from "../telemetry/errortext.ts";

export const reportingController = "configbutler.ai/gitops-reverser";

export type EventType = "Normal" | "Warning";

/** <object name>.<hex time><random>, unique enough that two events in one millisecond differ. */
export function eventName(objectName: string): string {
  const suffix = `${Date.now().toString(16)}${Math.floor(Math.random() * 0xfffff).toString(16)}`;
  return `${objectName.slice(0, 253 - suffix.length - 1)}.${suffix}`;
}

/**
 * Records events.k8s.io/v1 Events about objects, for `kubectl describe` and `kubectl events`.
 * Events are information: a failure to record one is logged and never fails a reconcile.
 */
export class EventRecorder {
  private readonly api: EventsV1Api;

  constructor(
    kubeConfig: KubeConfig,
    private readonly instance: string,
    private readonly logger: Logger,
    /** Who reports: the operator, or a sibling process such as the Kargo observer. */
    private readonly controller = reportingController,
  ) {
    this.api = kubeConfig.makeApiClient(EventsV1Api);
  }

  async record(
    regarding: KubernetesObject,
    type: EventType,
    reason: string,
    action: string,
    note: string,
  ): Promise<void> {
    const { name, namespace, uid, resourceVersion } = regarding.metadata ?? {};
    // A cluster-scoped object's Events live in the default namespace, as kubectl looks for them.
    const eventNamespace = namespace ?? "default";
    try {
      await this.api.createNamespacedEvent({
        namespace: eventNamespace,
        body: {
          // Named as client-go names Events; a generateName ending in "." fails name validation.
          metadata: { name: eventName(name ?? "object"), namespace: eventNamespace },
          eventTime: new V1MicroTime(),
          reportingController: this.controller,
          reportingInstance: this.instance,
          type,
          reason,
          action,
          note: note.slice(0, 1024),
          regarding: {
            apiVersion: regarding.apiVersion,
            kind: regarding.kind,
            name,
            namespace,
            uid,
            resourceVersion,
          },
        },
      });
    } catch (err) {
      this.logger.warn("could not record an event", {
        reason,
        object: keyOf({ namespace, name }),
        error: errorText(err),
      });
    }
  }
}
