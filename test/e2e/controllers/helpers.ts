// Small builders and waits shared by the controller tests.
import type { KubeConfig } from "@kubernetes/client-node";
import { gitBranches, gitTargets, kubeProviders, watchRules } from "../../../generated/v1alpha3/index.ts";
import type { ResourceClient } from "../../../internal/kube/resourceclient.ts";
import { eventually } from "../../support/wait.ts";

type WithConditions = {
  status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
};

/** Waits until the object's condition has the status (and reason, if given), and returns the object. */
export async function conditionOf<T extends WithConditions>(
  client: ResourceClient<T & { metadata: { name?: string } } & { apiVersion: string; kind: string }>,
  namespace: string | undefined,
  name: string,
  type: string,
  status: string,
  reason?: string,
  timeoutMs = 30_000,
): Promise<T> {
  let last = "";
  return eventually(
    async () => {
      const object = await client.get(namespace, name);
      const condition = object?.status?.conditions?.find((c) => c.type === type);
      last = JSON.stringify(condition);
      return condition?.status === status && (reason === undefined || condition.reason === reason) && object;
    },
    { timeoutMs, description: `${name} ${type}=${status}${reason ? ` (${reason})` : ""}; last seen ${last}` },
  );
}

export function clients(kc: KubeConfig) {
  return {
    providers: kubeProviders(kc),
    targets: gitTargets(kc),
    branches: gitBranches(kc),
    rules: watchRules(kc),
  };
}
