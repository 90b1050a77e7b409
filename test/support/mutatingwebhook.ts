// A real mutating admission webhook on loopback, for tests of what the API server stores when
// admission changes an object: an HTTPS server, with a certificate from its own CA, that adds an
// annotation to every object it is asked about; and its MutatingWebhookConfiguration, which the
// API server calls it through for the objects carrying a label.
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { createCertificateAuthority, issueCertificate } from "./pki.ts";

export interface MutatingWebhook {
  /** The MutatingWebhookConfiguration to apply to the control plane. */
  configuration: object;
  close(): Promise<void>;
}

interface AdmissionReview {
  request: { uid: string; object?: { metadata?: { annotations?: Record<string, string> } } };
}

/**
 * Starts a webhook that sets `annotation` to `value` on CREATE and UPDATE of objects of
 * `resources` (core and apps v1) labelled `selector`. Its files go to `dir`.
 */
export async function startMutatingWebhook(
  dir: string,
  name: string,
  selector: Record<string, string>,
  annotation: { key: string; value: string },
  /** Audit annotations its answer adds; kube-apiserver records each as `<webhook name>/<key>`. */
  auditAnnotations?: Record<string, string>,
): Promise<MutatingWebhook> {
  const ca = await createCertificateAuthority(dir, `${name}-ca`);
  const serving = await issueCertificate(ca, dir, `${name}-serving`, {
    commonName: "127.0.0.1",
    usage: "server",
    ipAddresses: ["127.0.0.1"],
  });
  const server: Server = createServer({ cert: serving.certPem, key: serving.keyPem }, (request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const review = JSON.parse(Buffer.concat(chunks).toString("utf8")) as AdmissionReview;
      const annotations = {
        ...review.request.object?.metadata?.annotations,
        [annotation.key]: annotation.value,
      };
      const patch = [{ op: "add", path: "/metadata/annotations", value: annotations }];
      response.setHeader("content-type", "application/json");
      response.end(
        JSON.stringify({
          apiVersion: "admission.k8s.io/v1",
          kind: "AdmissionReview",
          response: {
            uid: review.request.uid,
            allowed: true,
            patchType: "JSONPatch",
            patch: Buffer.from(JSON.stringify(patch)).toString("base64"),
            ...(auditAnnotations ? { auditAnnotations } : {}),
          },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const configuration = {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "MutatingWebhookConfiguration",
    metadata: { name },
    webhooks: [
      {
        name: `${name}.example.com`,
        clientConfig: {
          url: `https://127.0.0.1:${port}/mutate`,
          caBundle: Buffer.from(ca.certPem).toString("base64"),
        },
        rules: [
          {
            operations: ["CREATE", "UPDATE"],
            apiGroups: ["", "apps"],
            apiVersions: ["v1"],
            resources: ["*"],
          },
        ],
        objectSelector: { matchLabels: selector },
        sideEffects: "None",
        admissionReviewVersions: ["v1"],
        failurePolicy: "Fail",
      },
    ],
  };
  return {
    configuration,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
