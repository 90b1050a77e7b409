// Shared by the reconciler decision tests: the status of a provider or branch that is Ready.

const holds = (type: string) => ({
  type,
  status: "True" as const,
  reason: "Succeeded",
  message: "",
  lastTransitionTime: "",
});

/** A KubeProvider or GitBranch status whose Ready and SourceClusterReachable hold. */
export const readyStatus = { conditions: [holds("Ready"), holds("SourceClusterReachable")] };
