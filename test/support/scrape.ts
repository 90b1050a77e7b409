// A scrape of /metrics as Prometheus makes one: plain HTTP, or HTTPS with a bearer token and,
// as a ServiceMonitor's insecureSkipVerify, no check of the self-signed certificate. It says
// which certificate the server showed, for tests of its rotation.
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { TLSSocket } from "node:tls";

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
