// Small builders and waits shared by the controller tests.
import assert from "node:assert/strict";
import type { KubeConfig } from "@kubernetes/client-node";
import {
  gitBranches,
  gitTargets,
  kubeProviders,
  watchRules,
  type GitProvider,
} from "../../../generated/v1alpha3/index.ts";
import type { ResourceClient } from "../../../internal/kube/resourceclient.ts";
import { findCondition, type Condition } from "../../../internal/operator/conditions.ts";
import { eventually } from "../../support/wait.ts";

type WithConditions = { status?: { conditions?: Condition[] } };

/** The object's condition of this type, if it has one. */
export function condition(object: WithConditions | undefined, type: string): Condition | undefined {
  return findCondition(object?.status?.conditions, type);
}

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
      const found = condition(object, type);
      last = JSON.stringify(found);
      return found?.status === status && (reason === undefined || found.reason === reason) && object;
    },
    {
      timeoutMs,
      description: () => `${name} ${type}=${status}${reason ? ` (${reason})` : ""}; last seen ${last}`,
    },
  );
}

/**
 * Waits until the GitProvider says its signing key cannot be used (SigningConfigured False,
 * CredentialsInvalid), asserts the condition's message matches `message`, and returns it.
 */
export async function signingRefused(
  providers: ResourceClient<GitProvider>,
  namespace: string,
  name: string,
  message: RegExp,
): Promise<GitProvider> {
  const refused = await conditionOf(
    providers,
    namespace,
    name,
    "SigningConfigured",
    "False",
    "CredentialsInvalid",
    60_000,
  );
  assert.match(condition(refused, "SigningConfigured")?.message ?? "", message);
  return refused;
}

export function clients(kc: KubeConfig) {
  return {
    providers: kubeProviders(kc),
    targets: gitTargets(kc),
    branches: gitBranches(kc),
    rules: watchRules(kc),
  };
}

/**
 * Waits until every one of a GitTarget's `collections` has had its snapshot measured against the
 * folder (RenderMatchesLive True over all of them): the snapshots were handled.
 */
export async function snapshotsMeasured(
  kc: KubeConfig,
  namespace: string,
  name: string,
  collections: number,
) {
  const { targets } = clients(kc);
  return eventually(
    async () => {
      const found = condition(await targets.get(namespace, name), "RenderMatchesLive");
      return found?.status === "True" && found.message.includes(`of ${collections} collections matches live`);
    },
    { timeoutMs: 60_000, description: `${name}'s ${collections} snapshots measured` },
  );
}
