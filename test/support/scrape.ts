// A scrape of /metrics as Prometheus makes one: plain HTTP, or HTTPS with a bearer token and,
// as a ServiceMonitor's insecureSkipVerify, no check of the self-signed certificate. It says
// which certificate the server showed, for tests of its rotation.
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { TLSSocket } from "node:tls";
import assert from "node:assert/strict";
import { RbacAuthorizationV1Api } from "@kubernetes/client-node";
import type { ControlPlane } from "./controlplane.ts";
import { eventually } from "./wait.ts";

export interface Scrape {
  status: number;
  body: string;
  /** The SHA-256 fingerprint of the server's certificate; undefined over plain HTTP. */
  fingerprint?: string;
}

export function scrape(url: string, token?: string): Promise<Scrape> {
  const secure = url.startsWith("https:");
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  return new Promise((resolve, reject) => {
    const req = (secure ? httpsRequest : httpRequest)(
      url,
      // A fresh connection each time, so a rotated certificate is seen at once.
      { headers, agent: false, ...(secure ? { rejectUnauthorized: false } : {}) },
      (res) => {
        const fingerprint = secure
          ? (res.socket as TLSSocket).getPeerCertificate().fingerprint256
          : undefined;
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8"), fingerprint }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/**
 * /metrics over HTTPS as a scraper the API server reviews: refused without a token (401) and
 * for a ServiceAccount `account` (in default) not bound to `readerRole` (403, naming it); once
 * a ClusterRoleBinding binds it, read with a new token (a refusal is kept per token for a
 * while), and answered 200. That answer.
 */
export async function scrapeAsBoundReader(
  plane: ControlPlane,
  url: string,
  readerRole: string,
  account: string,
): Promise<Scrape> {
  const anonymous = await scrape(url);
  assert.equal(anonymous.status, 401, anonymous.body);
  assert.equal((await scrape(url, "not-a-token")).status, 401, "a token the API server rejects");
  const token = async () =>
    (await plane.serviceAccountToken("default", account)).kubeConfig.getCurrentUser()?.token;
  const unbound = await scrape(url, await token());
  assert.equal(unbound.status, 403, unbound.body);
  assert.match(unbound.body, new RegExp(`system:serviceaccount:default:${account} may not get /metrics`));
  await plane
    .kubeConfig()
    .makeApiClient(RbacAuthorizationV1Api)
    .createClusterRoleBinding({
      body: {
        metadata: { name: `${account}-${readerRole}` },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: readerRole },
        subjects: [{ kind: "ServiceAccount", namespace: "default", name: account }],
      },
    });
  const bound = await token();
  return eventually(
    async () => {
      const answer = await scrape(url, bound);
      return answer.status === 200 && answer;
    },
    { description: `a scrape by ${account}, bound to ${readerRole}, to answer 200` },
  );
}
