// Keyed signatures on what the operator keeps in Redis Streams. A durable-queue entry is replayed
// into Git, and an audit fact names a commit's author: whoever can write to Redis could otherwise
// have the next holder of a branch commit any manifest under any name into a folder an applier
// applies. With --redis-hmac-key (the same key on every replica), each entry carries an
// HMAC-SHA256 over its stream's key and its value; an entry read back without a valid one is
// dropped, logged and counted, never replayed or believed. The stream's key is signed too, so an
// entry copied from one branch's stream into another's does not pass.
import { createHmac, timingSafeEqual } from "node:crypto";

/** The field beside an entry's value that holds its signature (hex). */
export const sealField = "sig";

export class EntrySeal {
  private readonly key: Buffer | undefined;

  constructor(key: string | undefined) {
    this.key = key ? Buffer.from(key, "utf8") : undefined;
  }

  /** The fields to write beside `value` in `stream`: the signature, or none without a key. */
  fields(stream: string, value: string): string[] {
    return this.key ? [sealField, this.mac(stream, value)] : [];
  }

  /**
   * Why an entry read from `stream` is not one the operator wrote, or undefined when it is. With
   * no key every entry is taken, as before signatures existed.
   */
  refusal(stream: string, value: string | undefined, fields: readonly string[]): string | undefined {
    if (!this.key) return undefined;
    const at = fields.findIndex((f, i) => i % 2 === 0 && f === sealField);
    if (at < 0) return "it carries no signature";
    const given = Buffer.from(fields[at + 1] ?? "", "hex");
    const expected = Buffer.from(this.mac(stream, value ?? ""), "hex");
    return given.length === expected.length && timingSafeEqual(given, expected)
      ? undefined
      : "its signature is not one of the operator's key (--redis-hmac-key)";
  }

  private mac(stream: string, value: string): string {
    return createHmac("sha256", this.key!).update(stream).update("\0").update(value).digest("hex");
  }
}
