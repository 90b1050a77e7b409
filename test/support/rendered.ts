// Install manifests as a test reads them: a kustomization rendered by the pinned kubectl, a
// server-side dry run that must accept every object, and the (group, resource, verb) grants of
// RBAC rules, so a test can pin a role exactly.
import assert from "node:assert/strict";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "./binaries.ts";
import type { ControlPlane } from "./controlplane.ts";
import { kubectl, type Kubectl } from "./kubectl.ts";

export interface Rule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
  verbs: string[];
}

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  rules?: Rule[];
  aggregationRule?: { clusterRoleSelectors: { matchLabels?: Record<string, string> }[] };
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
  spec?: Record<string, unknown>;
}

/** A kustomization rendered by the pinned kubectl, as text and as parsed objects. */
export async function render(
  plane: ControlPlane,
  dir: string,
): Promise<{ text: string; objects: Manifest[] }> {
  const result = await kubectl(plane, "kustomize", join(repoRoot, dir));
  assert.equal(result.code, 0, `kubectl kustomize ${dir}: ${result.stderr}`);
  const objects = parseAllDocuments(result.stdout).map((d) => d.toJS() as Manifest);
  return { text: result.stdout, objects };
}

/** How kubectl names an object in apply's output: kind.group/name, lower-cased. */
export function kubectlName(object: Manifest): string {
  const group = object.apiVersion.includes("/") ? `.${object.apiVersion.split("/")[0]}` : "";
  return `${object.kind.toLowerCase()}${group}/${object.metadata.name}`;
}

/** Server-side dry-runs a rendered file and asserts the server accepted every object in it. */
export async function assertDryRunAccepts(
  t: TestContext,
  plane: ControlPlane,
  file: string,
  objects: Manifest[],
): Promise<Kubectl> {
  const result = await kubectl(plane, "apply", "--server-side", "--dry-run=server", "-f", file);
  assert.equal(result.code, 0, `the dry run was refused:\n${result.stderr}`);
  const lines = result.stdout.trim().split("\n");
  for (const line of lines) t.diagnostic(line);
  assert.deepEqual(
    lines.map((l) => l.replace(/ serverside-applied \(server dry run\)$/, "")).sort(),
    objects.map(kubectlName).sort(),
    "every rendered object, and nothing else, passes the dry run",
  );
  return result;
}

export function find(objects: Manifest[], kind: string, name: string): Manifest {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  assert.ok(found, `${kind} ${name} is rendered`);
  return found;
}

/**
 * Every (group, resource, verb) a set of rules grants, as "group|resource|verb", and
 * "group|resource|verb|name" for a rule limited to named objects.
 */
export function grants(rules: Rule[]): string[] {
  const out = new Set<string>();
  for (const rule of rules) {
    assert.equal(rule.nonResourceURLs, undefined, "no rule grants non-resource URLs");
    const names = rule.resourceNames?.map((n) => `|${n}`) ?? [""];
    for (const group of rule.apiGroups ?? [])
      for (const resource of rule.resources ?? [])
        for (const verb of rule.verbs)
          for (const name of names) out.add(`${group}|${resource}|${verb}${name}`);
  }
  return [...out].sort();
}

export function product(groups: string[], resources: string[], verbs: string[]): string[] {
  return groups.flatMap((g) => resources.flatMap((r) => verbs.map((v) => `${g}|${r}|${v}`)));
}

export interface Container {
  name: string;
  image: string;
  args: string[];
  env?: { name: string; value?: string; valueFrom?: { configMapKeyRef?: { name: string; key: string } } }[];
  ports?: { name: string; containerPort: number; protocol: string }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
}

export interface PodSpec {
  containers: Container[];
  volumes?: { name: string; secret?: { secretName: string } }[];
  topologySpreadConstraints?: {
    maxSkew: number;
    topologyKey: string;
    whenUnsatisfiable: string;
    labelSelector: { matchLabels: Record<string, string> };
  }[];
}

/** A rendered Deployment's pod template. */
export function podOf(deployment: Manifest): { labels: Record<string, string>; spec: PodSpec } {
  const template = (
    deployment.spec as { template: { metadata: { labels: Record<string, string> }; spec: PodSpec } }
  ).template;
  return { labels: template.metadata.labels, spec: template.spec };
}

/**
 * A container's args as the kubelet passes them: each $(NAME) replaced by the container's env
 * var of that name, its value or the key of the rendered ConfigMap it refers to.
 */
export function expandedArgs(container: Container, objects: Manifest[]): string[] {
  const values = new Map<string, string>();
  for (const variable of container.env ?? []) {
    const ref = variable.valueFrom?.configMapKeyRef;
    if (variable.value !== undefined) values.set(variable.name, variable.value);
    else if (ref) {
      const data = (find(objects, "ConfigMap", ref.name) as { data?: Record<string, string> }).data;
      const value = data?.[ref.key];
      assert.ok(value !== undefined, `ConfigMap ${ref.name} holds ${ref.key}`);
      values.set(variable.name, value);
    }
  }
  return container.args.map((arg) =>
    arg.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (reference, name: string) => {
      const value = values.get(name);
      assert.ok(value !== undefined, `${reference} in ${arg} names an env var the container has`);
      return value;
    }),
  );
}
