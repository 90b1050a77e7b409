// The OLM bundle as pure functions of what the repository already says: the ClusterServiceVersion
// from config/ (the CRDs, the RBAC bound to the operator's ServiceAccount, the manager
// Deployment, the samples) and the chart's metadata and image, so the bundle is never written by
// hand and cannot drift from the other two installs. hack/olm/main.ts reads the inputs and writes
// what these return; the bundle test compares that with what is committed.

/** A Kubernetes object as read from a manifest. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [field: string]: unknown;
}

export interface Rule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}

interface Role extends KubeObject {
  rules?: Rule[];
  aggregationRule?: { clusterRoleSelectors: { matchLabels?: Record<string, string> }[] };
}

interface Binding extends KubeObject {
  roleRef: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
}

/** An OpenAPI v3 schema node, as the CRDs carry it. */
export interface Schema {
  type?: string;
  description?: string;
  enum?: unknown[];
  properties?: Record<string, Schema>;
}

export interface Crd extends KubeObject {
  spec: {
    group: string;
    names: { kind: string; plural: string };
    versions: { name: string; storage: boolean; schema: { openAPIV3Schema: Schema } }[];
  };
}

export interface Chart {
  name: string;
  description: string;
  version: string;
  appVersion: string;
  kubeVersion: string;
  keywords?: string[];
  home: string;
  maintainers?: { name: string; email?: string; url?: string }[];
}

/** Everything the bundle is made from. */
export interface Inputs {
  chart: Chart;
  /** The operator's image (the chart's values, or make's IMG). */
  image: string;
  crds: Crd[];
  /** config/rbac, every object. */
  rbac: KubeObject[];
  /** config/manager/manager.yaml. */
  deployment: KubeObject;
  /** config/manager's other objects OLM can install beside the CSV (the metrics Service). */
  extras: KubeObject[];
  /** config/samples, in their kustomization's order. */
  samples: KubeObject[];
  /** README's title. */
  displayName: string;
  /** README's opening paragraph and hack/olm/description.md. */
  description: string;
  /** hack/olm/icon.svg. */
  iconSvg: string;
}

export const channel = "alpha";

export interface Descriptor {
  path: string;
  displayName: string;
  description?: string;
  "x-descriptors"?: string[];
}

/** "ArgoCDClaim" → "Argo CD Claim", "gitBranchRef" → "Git Branch Ref". */
export function displayName(name: string): string {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(" ");
  return words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join(" ");
}

/** The console's widget for a spec field, by its schema: none for objects and lists. */
export function specXDescriptors(schema: Schema): string[] {
  if (schema.enum) return schema.enum.map((v) => `urn:alm:descriptor:com.tectonic.ui:select:${String(v)}`);
  switch (schema.type) {
    case "boolean":
      return ["urn:alm:descriptor:com.tectonic.ui:booleanSwitch"];
    case "integer":
    case "number":
      return ["urn:alm:descriptor:com.tectonic.ui:number"];
    case "string":
      return ["urn:alm:descriptor:com.tectonic.ui:text"];
    default:
      return [];
  }
}

/** The console's view of a status field: conditions as conditions, scalars as text. */
export function statusXDescriptors(path: string, schema: Schema): string[] {
  if (path === "conditions") return ["urn:alm:descriptor:io.kubernetes.conditions"];
  return schema.type === "object" || schema.type === "array" ? [] : ["urn:alm:descriptor:text"];
}

/** One descriptor per top-level field of spec or status, in the schema's order. */
export function descriptors(
  schema: Schema | undefined,
  xDescriptors: (path: string, schema: Schema) => string[],
): Descriptor[] {
  return Object.entries(schema?.properties ?? {}).map(([path, field]) => {
    const x = xDescriptors(path, field);
    return {
      path,
      displayName: displayName(path),
      ...(field.description ? { description: field.description } : {}),
      ...(x.length > 0 ? { "x-descriptors": x } : {}),
    };
  });
}

/** The CSV's customresourcedefinitions.owned entry for a CRD: its storage version. */
export function ownedCrd(crd: Crd) {
  const version = crd.spec.versions.find((v) => v.storage) ?? crd.spec.versions[0]!;
  const schema = version.schema.openAPIV3Schema;
  return {
    name: crd.metadata.name,
    version: version.name,
    kind: crd.spec.names.kind,
    displayName: displayName(crd.spec.names.kind),
    description: schema.description ?? "",
    specDescriptors: descriptors(schema.properties?.spec, (_path, field) => specXDescriptors(field)),
    statusDescriptors: descriptors(schema.properties?.status, statusXDescriptors),
  };
}

const matches = (labels: Record<string, string> | undefined, selector: Record<string, string>) =>
  Object.entries(selector).every(([key, value]) => labels?.[key] === value);

/**
 * A role's rules, an aggregated ClusterRole's being those of every ClusterRole in `objects`
 * its selectors match, as Kubernetes would fill it at install: a CSV has no aggregation.
 */
export function effectiveRules(role: Role, objects: KubeObject[]): Rule[] {
  if (!role.aggregationRule) return role.rules ?? [];
  return (aggregatedFrom(role, objects) as Role[]).flatMap((o) => o.rules ?? []);
}

/**
 * What config/rbac binds to the ServiceAccount, as the CSV's clusterPermissions (ClusterRoles)
 * and permissions (Roles, in the namespace OLM installs into), or why it cannot be.
 */
export function permissionsFor(
  serviceAccount: string,
  rbac: KubeObject[],
): { clusterRules: Rule[]; namespacedRules: Rule[] } | string {
  const clusterRules: Rule[] = [];
  const namespacedRules: Rule[] = [];
  const bindings = (rbac as Binding[]).filter(
    (b) =>
      (b.kind === "ClusterRoleBinding" || b.kind === "RoleBinding") &&
      b.subjects?.some((s) => s.kind === "ServiceAccount" && s.name === serviceAccount),
  );
  for (const binding of bindings) {
    const role = rbac.find(
      (o) => o.kind === binding.roleRef.kind && o.metadata.name === binding.roleRef.name,
    );
    if (!role)
      return `${binding.kind} ${binding.metadata.name} binds ${binding.roleRef.kind} ${binding.roleRef.name}, which config/rbac lacks`;
    const rules = effectiveRules(role, rbac);
    if (binding.kind === "RoleBinding" && role.kind === "Role") namespacedRules.push(...rules);
    else if (binding.kind === "ClusterRoleBinding") clusterRules.push(...rules);
    else return `${binding.kind} ${binding.metadata.name} binds a ${role.kind}: a CSV cannot say that`;
  }
  if (clusterRules.length === 0 && namespacedRules.length === 0)
    return `config/rbac binds nothing to the ServiceAccount ${serviceAccount}`;
  return { clusterRules, namespacedRules };
}

/**
 * The ClusterRoles config/rbac offers for others to bind (the metrics reader, for Prometheus):
 * named by no binding of its own and selected by no aggregating role. A bundle ships them as
 * manifests, since a CSV's permissions are only what the operator's ServiceAccount holds.
 */
export function offeredRoles(rbac: KubeObject[]): KubeObject[] {
  const bound = new Set(
    (rbac as Binding[])
      .filter((b) => b.kind === "ClusterRoleBinding" || b.kind === "RoleBinding")
      .map((b) => `${b.roleRef.kind}/${b.roleRef.name}`),
  );
  const aggregated = (rbac as Role[]).flatMap((r) => (r.aggregationRule ? aggregatedFrom(r, rbac) : []));
  return rbac.filter(
    (o) =>
      o.kind === "ClusterRole" &&
      !bound.has(`ClusterRole/${o.metadata.name}`) &&
      !aggregated.includes(o) &&
      !(o as Role).aggregationRule,
  );
}

/** The ClusterRoles an aggregated role's selectors match. */
function aggregatedFrom(role: Role, objects: KubeObject[]): KubeObject[] {
  const selectors = role.aggregationRule!.clusterRoleSelectors.map((sel) => sel.matchLabels ?? {});
  return (objects as Role[]).filter(
    (o) => o.kind === "ClusterRole" && o !== role && selectors.some((sel) => matches(o.metadata.labels, sel)),
  );
}

/** ">=1.30.0-0" → "1.30.0": the chart's kubeVersion floor as the CSV's minKubeVersion. */
export function minKubeVersion(kubeVersion: string): string | undefined {
  return /^>=\s*v?(\d+\.\d+\.\d+)(?:-0)?$/.exec(kubeVersion.trim())?.[1];
}

/** An object without its namespace: OLM puts it in the namespace it installs into. */
function unnamespaced<T extends KubeObject>(object: T): T {
  const { namespace: _namespace, ...metadata } = object.metadata;
  return { ...object, metadata };
}

interface PodSpec {
  serviceAccountName?: string;
  containers: { name: string; image: string }[];
}

/** The ClusterServiceVersion, or why it cannot be made from the inputs. */
export function clusterServiceVersion(inputs: Inputs): KubeObject | string {
  const { chart, image } = inputs;
  const deploymentSpec = inputs.deployment.spec as { template: { spec: PodSpec } };
  const pod = deploymentSpec.template.spec;
  const serviceAccount = pod.serviceAccountName;
  if (!serviceAccount) return "config/manager's Deployment names no serviceAccountName";
  const permissions = permissionsFor(serviceAccount, inputs.rbac);
  if (typeof permissions === "string") return permissions;
  const minKube = minKubeVersion(chart.kubeVersion);
  if (!minKube) return `the chart's kubeVersion "${chart.kubeVersion}" is not of the form >=X.Y.Z`;
  const maintainers = (chart.maintainers ?? [])
    .filter((m) => m.email)
    .map((m) => ({ name: m.name, email: m.email }));
  const provider = chart.maintainers?.[0]?.name;
  if (!provider) return "the chart names no maintainer to be the provider";

  const spec = {
    ...deploymentSpec,
    template: {
      ...deploymentSpec.template,
      spec: { ...pod, containers: pod.containers.map((c, i) => (i === 0 ? { ...c, image } : c)) },
    },
  };
  const examples = inputs.samples.map((s) => unnamespaced(s));
  return {
    apiVersion: "operators.coreos.com/v1alpha1",
    kind: "ClusterServiceVersion",
    metadata: {
      name: `${chart.name}.v${chart.appVersion}`,
      annotations: {
        "alm-examples": JSON.stringify(examples, null, 2),
        capabilities: "Basic Install",
        categories: "Integration & Delivery",
        containerImage: image,
        description: chart.description.trim(),
        "operatorframework.io/suggested-namespace":
          inputs.deployment.metadata.namespace ?? `${chart.name}-system`,
        repository: chart.home,
        support: provider,
      },
    },
    spec: {
      displayName: inputs.displayName,
      description: inputs.description,
      version: chart.appVersion,
      maturity: channel,
      minKubeVersion: minKube,
      keywords: chart.keywords ?? [],
      links: [{ name: "Source", url: chart.home }],
      ...(maintainers.length > 0 ? { maintainers } : {}),
      provider: { name: provider },
      icon: [{ base64data: Buffer.from(inputs.iconSvg).toString("base64"), mediatype: "image/svg+xml" }],
      // The operator watches its kinds and what its rules select cluster-wide, and reads
      // ClusterWatchRules, which have no namespace: it cannot be narrowed to some namespaces.
      installModes: [
        { type: "OwnNamespace", supported: false },
        { type: "SingleNamespace", supported: false },
        { type: "MultiNamespace", supported: false },
        { type: "AllNamespaces", supported: true },
      ],
      customresourcedefinitions: {
        owned: [...inputs.crds]
          .sort((a, b) => a.spec.names.kind.localeCompare(b.spec.names.kind))
          .map(ownedCrd),
      },
      install: {
        strategy: "deployment",
        spec: {
          clusterPermissions: [{ serviceAccountName: serviceAccount, rules: permissions.clusterRules }],
          ...(permissions.namespacedRules.length > 0
            ? { permissions: [{ serviceAccountName: serviceAccount, rules: permissions.namespacedRules }] }
            : {}),
          deployments: [
            {
              name: inputs.deployment.metadata.name,
              ...(inputs.deployment.metadata.labels ? { label: inputs.deployment.metadata.labels } : {}),
              spec,
            },
          ],
        },
      },
      relatedImages: [{ name: chart.name, image }],
    },
  };
}

/** The bundle's metadata/annotations.yaml keys; bundle.Dockerfile labels the image with the same. */
export function bundleAnnotations(packageName: string): Record<string, string> {
  return {
    "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
    "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
    "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
    "operators.operatorframework.io.bundle.package.v1": packageName,
    "operators.operatorframework.io.bundle.channels.v1": channel,
    "operators.operatorframework.io.bundle.channel.default.v1": channel,
  };
}

/** bundle.Dockerfile: the bundle image, labelled as annotations.yaml says. */
export function bundleDockerfile(annotations: Record<string, string>, header: string): string {
  const labels = Object.entries(annotations).map(([key, value]) => `LABEL ${key}=${value}`);
  return [
    header.trimEnd(),
    "FROM scratch",
    ...labels,
    "COPY bundle/manifests /manifests/",
    "COPY bundle/metadata /metadata/",
    "",
  ].join("\n");
}

/** The file name operator-sdk gives an object in manifests/: name_group_version_kind.yaml. */
export function manifestFileName(object: KubeObject): string {
  if (object.kind === "ClusterServiceVersion")
    return `${object.metadata.name.split(".v")[0]}.clusterserviceversion.yaml`;
  if (object.kind === "CustomResourceDefinition") {
    const crd = object as Crd;
    return `${crd.spec.group}_${crd.spec.names.plural}.yaml`;
  }
  const [group, version] = object.apiVersion.includes("/")
    ? object.apiVersion.split("/")
    : ["", object.apiVersion];
  return (
    [object.metadata.name, group, version, object.kind.toLowerCase()].filter(Boolean).join("_") + ".yaml"
  );
}

/** The manifests/ objects: the CSV, the CRDs, config/manager's extras and the roles config/rbac offers, unnamespaced. */
export function bundleManifests(inputs: Inputs): KubeObject[] | string {
  const csv = clusterServiceVersion(inputs);
  if (typeof csv === "string") return csv;
  return [
    csv,
    ...inputs.crds,
    ...[...inputs.extras, ...offeredRoles(inputs.rbac)].map((o) => unnamespaced(o)),
  ];
}
