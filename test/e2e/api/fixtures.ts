// Minimal valid objects of every kind, and the ways to break them that admission must refuse.
// The cases reach into specs as plain data on purpose, to build objects no type would allow.
/* eslint-disable @typescript-eslint/no-unsafe-member-access */
import type { KubernetesObject } from "@kubernetes/client-node";

export type Kind =
  | "WatchRule"
  | "ClusterWatchRule"
  | "CommitRequest"
  | "GitTarget"
  | "KubeProvider"
  | "GitProvider"
  | "GitBranch"
  | "GitReceiver"
  | "FluxClaim"
  | "ArgoCDClaim"
  | "WebhookClaim";

type Spec = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A minimal valid object of `kind`, named `name`, in `namespace` unless cluster-scoped. */
export function validObject(kind: Kind, name: string, namespace: string): KubernetesObject & { spec: Spec } {
  const specs: Record<Kind, Spec> = {
    WatchRule: { gitTargetRef: { name: "t" }, rules: [{ resources: ["configmaps"] }] },
    ClusterWatchRule: { gitTargetRef: { name: "t", namespace }, rules: [{ resources: ["namespaces"] }] },
    CommitRequest: { gitTargetRef: { name: "t" }, message: "save" },
    GitTarget: { gitBranchRef: { name: "b" }, kubeProviderRef: { name: "k" }, path: "clusters/dev" },
    KubeProvider: { secretRef: { name: "kubeconfig" } },
    GitProvider: {
      url: "https://git.example.com/org/repo.git",
      allowedGitBranches: [{ consumerNamespaces: { from: "Same" }, branches: ["main"] }],
    },
    GitBranch: { gitProviderRef: { name: "p" }, branch: "main" },
    GitReceiver: { type: "github", secretRef: { name: "token" } },
    FluxClaim: {
      kubeProviderRef: { name: "k" },
      kustomizationRef: { name: "apps", namespace: "flux-system" },
    },
    ArgoCDClaim: { kubeProviderRef: { name: "k" }, applicationRef: { name: "apps", namespace: "argocd" } },
    WebhookClaim: { url: "https://ci.example.com/hooks/apply", secretRef: { name: "hmac" } },
  };
  const clusterScoped = kind === "ClusterWatchRule";
  return {
    apiVersion: "configbutler.ai/v1alpha3",
    kind,
    metadata: clusterScoped ? { name } : { name, namespace },
    spec: structuredClone(specs[kind]),
  };
}

export interface InvalidCase {
  kind: Kind;
  what: string;
  breakIt: (spec: Spec) => void;
  /** A part of the message the API server must answer with. */
  message: string;
}

const tooLong = "x".repeat(1025);

export const invalidCases: InvalidCase[] = [
  // GitTarget
  {
    kind: "GitTarget",
    what: "an empty path",
    breakIt: (s) => (s.path = ""),
    message: "should be at least 1 chars long",
  },
  {
    kind: "GitTarget",
    what: "a path that climbs out",
    breakIt: (s) => (s.path = "team/../../etc"),
    message: "path must be '.' or a relative path",
  },
  {
    kind: "GitTarget",
    what: "an absolute path",
    breakIt: (s) => (s.path = "/clusters"),
    message: "path must be '.' or a relative path",
  },
  {
    kind: "GitTarget",
    what: "Reapply without an applier claim",
    breakIt: (s) => (s.onRefusal = "Reapply"),
    message: "onRefusal: Reapply requires applierClaimRef",
  },
  {
    kind: "GitTarget",
    what: "a requestTemplate that drops the message",
    breakIt: (s) => (s.commit = { message: { requestTemplate: "{{.Author}}" } }),
    message: "requestTemplate must render .RequestMessage",
  },
  {
    kind: "GitTarget",
    what: "an unknown prune mode",
    breakIt: (s) => (s.prune = { mode: "Sometimes" }),
    message: 'Unsupported value: "Sometimes"',
  },
  {
    kind: "GitTarget",
    what: "a duration in words",
    breakIt: (s) => (s.commit = { window: { idleTimeout: "5 seconds" } }),
    message: "spec.commit.window.idleTimeout in body should match",
  },
  {
    kind: "GitTarget",
    what: "a placement template with an unknown variable",
    breakIt: (s) => (s.placement = { default: "{namespace}/{owner}.yaml" }),
    message: "default must be a relative .yaml path",
  },
  {
    kind: "GitTarget",
    what: "a byType key that is not [group/]version/resource",
    breakIt: (s) => (s.placement = { byType: { Deployment: "x.yaml" } }),
    message: "byType keys must be [group/]version/resource",
  },
  {
    kind: "GitTarget",
    what: "an age recipient that is not an age key",
    breakIt: (s) => (s.encryption = { age: { recipients: ["ssh-ed25519 AAAA"] } }),
    message: "spec.encryption.age.recipients[0] in body should match",
  },
  {
    kind: "GitTarget",
    what: "an applier claim of an unknown kind",
    breakIt: (s) => (s.applierClaimRef = { kind: "JenkinsClaim", name: "ci" }),
    message: 'Unsupported value: "JenkinsClaim"',
  },
  // WatchRule
  {
    kind: "WatchRule",
    what: "no rules",
    breakIt: (s) => (s.rules = []),
    message: "should have at least 1 items",
  },
  {
    kind: "WatchRule",
    what: "a subresource",
    breakIt: (s) => (s.rules = [{ resources: ["deployments/scale"] }]),
    message: "subresources are not allowed in resources",
  },
  {
    kind: "WatchRule",
    what: "a malformed source namespace",
    breakIt: (s) => (s.rules = [{ resources: ["pods"], sourceNamespace: "Team_A" }]),
    message: "sourceNamespace in body should match",
  },
  {
    kind: "WatchRule",
    what: "an In selector with no values",
    breakIt: (s) =>
      (s.rules = [
        { resources: ["pods"], objectSelector: { matchExpressions: [{ key: "a", operator: "In" }] } },
      ]),
    message: "values must be non-empty for In and NotIn",
  },
  // ClusterWatchRule
  {
    kind: "ClusterWatchRule",
    what: "a target without a namespace",
    breakIt: (s) => delete s.gitTargetRef.namespace,
    message: "spec.gitTargetRef.namespace: Required value",
  },
  {
    kind: "ClusterWatchRule",
    what: "a subresource",
    breakIt: (s) => (s.rules = [{ resources: ["namespaces/status"] }]),
    message: "subresources are not allowed in resources",
  },
  {
    kind: "ClusterWatchRule",
    what: "no rules",
    breakIt: (s) => delete s.rules,
    message: "spec.rules: Required value",
  },
  // CommitRequest
  {
    kind: "CommitRequest",
    what: "an empty message",
    breakIt: (s) => (s.message = ""),
    message: "should be at least 1 chars long",
  },
  {
    kind: "CommitRequest",
    what: "a message over 1024 characters",
    breakIt: (s) => (s.message = tooLong),
    message: "Too long: may not be",
  },
  {
    kind: "CommitRequest",
    what: "a tab in the message",
    breakIt: (s) => (s.message = "a\tb"),
    message: "message may contain newlines but no other control characters",
  },
  {
    kind: "CommitRequest",
    what: "a whitespace-only message",
    breakIt: (s) => (s.message = " \n  "),
    message: "message must not be only whitespace",
  },
  {
    kind: "CommitRequest",
    what: "an unknown attach mode",
    breakIt: (s) => (s.window = { attach: "Later" }),
    message: 'Unsupported value: "Later"',
  },
  {
    kind: "CommitRequest",
    what: "an unknown whenNothingToCommit",
    breakIt: (s) => (s.whenNothingToCommit = "Skip"),
    message: 'Unsupported value: "Skip"',
  },
  // KubeProvider
  {
    kind: "KubeProvider",
    what: "no credential",
    breakIt: (s) => delete s.secretRef,
    message: "exactly one of secretRef and inCluster must be set",
  },
  {
    kind: "KubeProvider",
    what: "both credentials",
    breakIt: (s) => (s.inCluster = {}),
    message: "exactly one of secretRef and inCluster must be set",
  },
  {
    kind: "KubeProvider",
    what: "client beside inCluster",
    breakIt: (s) => {
      delete s.secretRef;
      s.inCluster = {};
      s.client = { qps: 5 };
    },
    message: "client cannot be set with inCluster",
  },
  {
    kind: "KubeProvider",
    what: "a Names grant without names",
    breakIt: (s) => (s.allowedGitTargets = [{ consumerNamespaces: { from: "Names" } }]),
    message: "names must be set, and non-empty, exactly when from is Names",
  },
  {
    kind: "KubeProvider",
    what: "an unknown commitRequests mode",
    breakIt: (s) => (s.commitRequests = "Always"),
    message: 'Unsupported value: "Always"',
  },
  // GitProvider
  { kind: "GitProvider", what: "no url", breakIt: (s) => delete s.url, message: "spec.url: Required value" },
  {
    kind: "GitProvider",
    what: "a url that is not one",
    breakIt: (s) => (s.url = "not a url"),
    message: "spec.url in body should match",
  },
  {
    kind: "GitProvider",
    what: "a branch grant without branches",
    breakIt: (s) => delete s.allowedGitBranches[0].branches,
    message: "branches: Required value",
  },
  {
    kind: "GitProvider",
    what: "a malformed committer email",
    breakIt: (s) => (s.commit = { committer: { email: "nobody" } }),
    message: "spec.commit.committer.email in body should match",
  },
  // GitBranch
  {
    kind: "GitBranch",
    what: "a branch with '..'",
    breakIt: (s) => (s.branch = "feature..x"),
    message: "must be a valid Git branch name",
  },
  {
    kind: "GitBranch",
    what: "a branch with a space",
    breakIt: (s) => (s.branch = "my branch"),
    message: "must be a valid Git branch name",
  },
  {
    kind: "GitBranch",
    what: "a parent branch with a leading slash",
    breakIt: (s) => (s.parentBranch = "/main"),
    message: "must be a valid Git branch name",
  },
  {
    kind: "GitBranch",
    what: "no provider",
    breakIt: (s) => delete s.gitProviderRef,
    message: "spec.gitProviderRef: Required value",
  },
  // GitReceiver
  {
    kind: "GitReceiver",
    what: "an unknown type",
    breakIt: (s) => (s.type = "sourcehut"),
    message: 'Unsupported value: "sourcehut"',
  },
  {
    kind: "GitReceiver",
    what: "no secret",
    breakIt: (s) => delete s.secretRef,
    message: "spec.secretRef: Required value",
  },
  {
    kind: "GitReceiver",
    what: "no type",
    breakIt: (s) => delete s.type,
    message: "spec.type: Required value",
  },
  // FluxClaim
  {
    kind: "FluxClaim",
    what: "no Kustomization",
    breakIt: (s) => delete s.kustomizationRef,
    message: "spec.kustomizationRef: Required value",
  },
  {
    kind: "FluxClaim",
    what: "a malformed Kustomization namespace",
    breakIt: (s) => (s.kustomizationRef.namespace = "Flux System"),
    message: "spec.kustomizationRef.namespace in body should match",
  },
  {
    kind: "FluxClaim",
    what: "an empty provider name",
    breakIt: (s) => (s.kubeProviderRef.name = ""),
    message: "should be at least 1 chars long",
  },
  // ArgoCDClaim
  {
    kind: "ArgoCDClaim",
    what: "no Application",
    breakIt: (s) => delete s.applicationRef,
    message: "spec.applicationRef: Required value",
  },
  {
    kind: "ArgoCDClaim",
    what: "a malformed Application namespace",
    breakIt: (s) => (s.applicationRef.namespace = "Argo_CD"),
    message: "spec.applicationRef.namespace in body should match",
  },
  {
    kind: "ArgoCDClaim",
    what: "no provider",
    breakIt: (s) => delete s.kubeProviderRef,
    message: "spec.kubeProviderRef: Required value",
  },
  // WebhookClaim
  {
    kind: "WebhookClaim",
    what: "a url that is neither https:// nor http://",
    breakIt: (s) => (s.url = "ftp://ci.example.com/hooks/apply"),
    message: "url must be an https:// URL",
  },
  {
    kind: "WebhookClaim",
    what: "a url without a scheme",
    breakIt: (s) => (s.url = "ci.example.com/hooks/apply"),
    message: "url must be an https:// URL",
  },
  {
    kind: "WebhookClaim",
    what: "completion mode Settle without settleAfter",
    breakIt: (s) => (s.completion = { mode: "Settle" }),
    message: "completion.settleAfter is required when completion.mode is Settle",
  },
  {
    kind: "WebhookClaim",
    what: "an unknown completion mode",
    breakIt: (s) => (s.completion = { mode: "Poll" }),
    message: 'Unsupported value: "Poll"',
  },
  {
    kind: "WebhookClaim",
    what: "no url",
    breakIt: (s) => delete s.url,
    message: "spec.url: Required value",
  },
  {
    kind: "WebhookClaim",
    what: "no secret",
    breakIt: (s) => delete s.secretRef,
    message: "spec.secretRef: Required value",
  },
  {
    kind: "WebhookClaim",
    what: "a timeout in words",
    breakIt: (s) => (s.timeout = "10 seconds"),
    message: "spec.timeout in body should match",
  },
  {
    kind: "WebhookClaim",
    what: "an empty field manager",
    breakIt: (s) => (s.fieldManagers = [""]),
    message: "should be at least 1 chars long",
  },
];

export interface ImmutabilityCase {
  kind: Kind;
  field: string;
  /** Prepares the object before it is created, when the rule needs a field set. */
  prepare?: (spec: Spec) => void;
  change: (spec: Spec) => void;
  message: string;
}

export const immutabilityCases: ImmutabilityCase[] = [
  {
    kind: "GitTarget",
    field: "gitBranchRef",
    change: (s) => (s.gitBranchRef = { name: "other" }),
    message: "gitBranchRef is immutable",
  },
  {
    kind: "GitTarget",
    field: "kubeProviderRef",
    change: (s) => (s.kubeProviderRef = { name: "k", namespace: "elsewhere" }),
    message: "kubeProviderRef is immutable",
  },
  {
    kind: "GitTarget",
    field: "path",
    change: (s) => (s.path = "clusters/prod"),
    message: "path is immutable",
  },
  {
    kind: "GitProvider",
    field: "url",
    change: (s) => (s.url = "https://git.example.com/org/other.git"),
    message: "url is immutable",
  },
  {
    kind: "GitBranch",
    field: "gitProviderRef",
    change: (s) => (s.gitProviderRef = { name: "q" }),
    message: "gitProviderRef is immutable",
  },
  {
    kind: "GitBranch",
    field: "branch",
    change: (s) => (s.branch = "develop"),
    message: "branch is immutable",
  },
  {
    kind: "GitBranch",
    field: "parentBranch (added)",
    change: (s) => (s.parentBranch = "develop"),
    message: "parentBranch is immutable",
  },
  {
    kind: "GitBranch",
    field: "parentBranch (changed)",
    prepare: (s) => (s.parentBranch = "develop"),
    change: (s) => (s.parentBranch = "release"),
    message: "parentBranch is immutable",
  },
  {
    kind: "KubeProvider",
    field: "secretRef",
    change: (s) => (s.secretRef = { name: "another" }),
    message: "secretRef is immutable",
  },
  {
    kind: "KubeProvider",
    field: "the credential arm",
    change: (s) => {
      delete s.secretRef;
      s.inCluster = {};
    },
    message: "inCluster is immutable",
  },
  {
    kind: "CommitRequest",
    field: "message",
    change: (s) => (s.message = "another"),
    message: "spec is immutable",
  },
  {
    kind: "CommitRequest",
    field: "window",
    change: (s) => (s.window = { maxDuration: "10s" }),
    message: "spec is immutable",
  },
  {
    kind: "FluxClaim",
    field: "kubeProviderRef",
    change: (s) => (s.kubeProviderRef = { name: "other" }),
    message: "kubeProviderRef is immutable",
  },
  {
    kind: "FluxClaim",
    field: "kustomizationRef",
    change: (s) => (s.kustomizationRef = { name: "infra", namespace: "flux-system" }),
    message: "kustomizationRef is immutable",
  },
  {
    kind: "ArgoCDClaim",
    field: "kubeProviderRef",
    change: (s) => (s.kubeProviderRef = { name: "other" }),
    message: "kubeProviderRef is immutable",
  },
  {
    kind: "ArgoCDClaim",
    field: "applicationRef",
    change: (s) => (s.applicationRef = { name: "infra", namespace: "argocd" }),
    message: "applicationRef is immutable",
  },
];
