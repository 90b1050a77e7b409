// Reading a webhook's body, bounded: the audit ingress and the push receiver take a body only up
// to their limit, and a larger one is refused without being held in memory.
import type { IncomingMessage } from "node:http";

/** Why a body was not read: it was larger than the limit. */
export class BodyTooLarge extends Error {}

/** The request's body, up to `limit` bytes; a larger one rejects with BodyTooLarge and is dropped. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > limit) {
      reject(new BodyTooLarge(`the body is larger than ${limit} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new BodyTooLarge(`the body is larger than ${limit} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}
