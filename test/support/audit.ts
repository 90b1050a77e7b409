import { writeFile } from "node:fs/promises";
import { join } from "node:path";

/** How kube-apiserver sends audit events to the webhook. */
export interface AuditWebhookOptions {
  /** Where kube-apiserver posts `audit.k8s.io/v1` EventLists, such as `http://127.0.0.1:9443/audit-webhook/team-a.prod`. */
  url: string;
  /**
   * `batch` (the default) buffers events for at most one second, like a production setup;
   * `blocking` sends each event before the request returns.
   */
  mode?: "batch" | "blocking";
  /** A whole audit.k8s.io/v1 Policy; the default records every write at RequestResponse. */
  policy?: Record<string, unknown>;
  /** For an https URL: the CA that signed the receiver's certificate, and kube-apiserver's client certificate. */
  tls?: { caPem: string; certPem: string; keyPem: string };
}

/**
 * Records writes at RequestResponse, with only the ResponseComplete stage: the stage that
 * carries the persisted object's resourceVersion. Reads are left out, as they would be in
 * any real policy that feeds attribution.
 */
export const defaultAuditPolicy = {
  apiVersion: "audit.k8s.io/v1",
  kind: "Policy",
  omitStages: ["RequestReceived", "ResponseStarted", "Panic"],
  rules: [
    { level: "RequestResponse", verbs: ["create", "update", "patch", "delete", "deletecollection"] },
    { level: "None" },
  ],
};

/** Writes the policy and the webhook kubeconfig, and returns the kube-apiserver flags that use them. */
export async function auditWebhookFlags(dir: string, options: AuditWebhookOptions): Promise<string[]> {
  const policyFile = join(dir, "audit-policy.json");
  const kubeconfigFile = join(dir, "audit-webhook.kubeconfig");
  const kubeconfig = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: "audit-sink",
        cluster: {
          server: options.url,
          ...(options.tls ? { "certificate-authority-data": base64(options.tls.caPem) } : {}),
        },
      },
    ],
    users: [
      {
        name: "kube-apiserver",
        user: options.tls
          ? {
              "client-certificate-data": base64(options.tls.certPem),
              "client-key-data": base64(options.tls.keyPem),
            }
          : {},
      },
    ],
    contexts: [{ name: "audit", context: { cluster: "audit-sink", user: "kube-apiserver" } }],
    "current-context": "audit",
  };
  await writeFile(policyFile, JSON.stringify(options.policy ?? defaultAuditPolicy, null, 2));
  await writeFile(kubeconfigFile, JSON.stringify(kubeconfig, null, 2));
  const mode = options.mode ?? "batch";
  return [
    `--audit-policy-file=${policyFile}`,
    `--audit-webhook-config-file=${kubeconfigFile}`,
    `--audit-webhook-mode=${mode}`,
    ...(mode === "batch" ? ["--audit-webhook-batch-max-wait=1s"] : []),
  ];
}

const base64 = (text: string) => Buffer.from(text).toString("base64");
