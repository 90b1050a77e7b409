// The demo's Git host: a GitHub push event for the demo repository, signed as GitHub signs it,
// posted to the operator's push receiver.
import { createHmac } from "node:crypto";
import { request } from "node:http";

/** Posts the push; resolves with the answer's status line. */
export function deliverGithubPush(
  address: { host: string; port: number },
  path: string,
  token: string,
  cloneUrl: string,
): Promise<string> {
  const body = JSON.stringify({
    ref: "refs/heads/main",
    repository: { full_name: "demo/cluster-state", clone_url: cloneUrl },
    pusher: { name: "colleague" },
  });
  const signature = `sha256=${createHmac("sha256", token).update(body).digest("hex")}`;
  const headers = {
    "content-type": "application/json",
    "x-github-event": "push",
    "x-hub-signature-256": signature,
    "content-length": String(Buffer.byteLength(body)),
  };
  return new Promise((resolve, reject) => {
    const req = request({ ...address, path, method: "POST", headers }, (res) => {
      res.resume();
      res.on("end", () => resolve(`${res.statusCode} ${res.statusMessage}`));
    });
    req.on("error", reject);
    req.end(body);
  });
}
