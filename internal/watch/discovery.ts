import {
  ApisApi,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type V1APIResource,
} from "@kubernetes/client-node";
import type { ServedType } from "../typeset/followability.ts";
import type { Scan } from "../typeset/registry.ts";

function served(group: string, version: string, resources: V1APIResource[]): ServedType[] {
  return resources.map((r) => ({
    group,
    version,
    resource: r.name,
    kind: r.kind,
    namespaced: r.namespaced,
    verbs: r.verbs,
  }));
}

/**
 * One discovery pass over a source cluster. A group version whose resources cannot be read is
 * still listed, so the registry keeps its last known facts instead of dropping them.
 */
export async function discover(kubeConfig: KubeConfig): Promise<Scan> {
  const core = await kubeConfig.makeApiClient(CoreV1Api).getAPIResources();
  const groups = await kubeConfig.makeApiClient(ApisApi).getAPIVersions();
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const scan: Scan = {
    groupVersions: [{ group: "", version: "v1", preferred: true }],
    resources: new Map([["/v1", served("", "v1", core.resources)]]),
  };
  await Promise.all(
    groups.groups.flatMap((group) =>
      group.versions.map(async ({ version }) => {
        scan.groupVersions.push({
          group: group.name,
          version,
          preferred: group.preferredVersion?.version === version,
        });
        try {
          const list = await custom.getAPIResources({ group: group.name, version });
          scan.resources.set(`${group.name}/${version}`, served(group.name, version, list.resources));
        } catch {
          // Left out of resources: the registry keeps serving what it knew of this group version.
        }
      }),
    ),
  );
  return scan;
}
