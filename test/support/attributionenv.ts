// What attribution needs of a test control plane: an audit CA, the operator's audit ingress
// certificate and kube-apiserver's client certificate, a port for the ingress, and the audit
// webhook that posts to it over mTLS. Shared by the attribution tests and make demo.
import {
  CoreV1Api,
  RbacAuthorizationV1Api,
  type KubeConfig,
  type RbacV1Subject,
} from "@kubernetes/client-node";
import type { AttributionSettings, Transport } from "../../internal/attribution/attribution.ts";
import type { AuditWebhookOptions } from "./audit.ts";
import { createCertificateAuthority, issueCertificate, type CertFiles } from "./pki.ts";
import { freePort } from "./ports.ts";

export interface AttributionEnv {
  auditCa: CertFiles;
  /** kube-apiserver's client certificate for the audit webhook, which the audit CA signed. */
  client: CertFiles;
  port: number;
  /** ControlPlane.start's audit option, posting to `route`. */
  /** kube-apiserver's audit webhook to the route's path; an empty route: the shared /audit-webhook. */
  webhook(route: string, policy?: Record<string, unknown>): AuditWebhookOptions;
  /** The operator's attribution settings: its ingress on the port, on a transport, with the grace given. */
  settings(options?: { graceMs?: number; transport?: Transport }): AttributionSettings;
}

export async function attributionEnv(dir: string): Promise<AttributionEnv> {
  const auditCa = await createCertificateAuthority(dir, "audit-ca");
  const serving = await issueCertificate(auditCa, dir, "audit-ingress", {
    commonName: "gitops-reverser-audit",
    usage: "server",
    ipAddresses: ["127.0.0.1"],
  });
  const client = await issueCertificate(auditCa, dir, "apiserver-audit", {
    commonName: "kube-apiserver-audit",
    usage: "client",
  });
  const port = await freePort();
  return {
    auditCa,
    client,
    port,
    webhook: (route, policy) => ({
      url: `https://127.0.0.1:${port}/audit-webhook${route ? `/${route}` : ""}`,
      tls: { caPem: auditCa.certPem, certPem: client.certPem, keyPem: client.keyPem },
      ...(policy ? { policy } : {}),
    }),
    settings: ({ graceMs = 3_000, transport = "memory" } = {}) => ({
      graceMs,
      transport,
      ingress: {
        host: "127.0.0.1",
        port,
        tls: { cert: serving.certPem, key: serving.keyPem, ca: auditCa.certPem },
      },
    }),
  };
}

/**
 * Lets `subjects` edit ConfigMaps and Deployments in `namespace`. No controller-manager runs
 * here to aggregate the built-in edit role, so the Role is our own.
 */
export async function grantEditing(
  kc: KubeConfig,
  namespace: string,
  subjects: RbacV1Subject[],
): Promise<void> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const verbs = ["get", "list", "watch", "create", "update", "patch", "delete"];
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name: "editor" },
      rules: [
        { apiGroups: [""], resources: ["configmaps"], verbs },
        { apiGroups: ["apps"], resources: ["deployments", "deployments/scale"], verbs },
        // Saving their own window with a message.
        { apiGroups: ["configbutler.ai"], resources: ["commitrequests"], verbs },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: "editors" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "editor" },
      subjects,
    },
  });
}

/** Writes `value` into key k of the ConfigMap `name` as the identity `kc` is: created, or patched. */
export async function writeValue(
  kc: KubeConfig,
  namespace: string,
  name: string,
  value: string,
): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  await core
    .createNamespacedConfigMap({ namespace, body: { metadata: { name }, data: { k: value } } })
    .catch(() =>
      core.patchNamespacedConfigMap({ namespace, name, body: [{ op: "replace", path: "/data/k", value }] }),
    );
}
