// Sensitive documents in a folder: SOPS documents, which the operator writes and can never read
// back, since it holds no private key. What it knows of one is what it put there: a salted HMAC
// of the plaintext and recipients it encrypted, kept with the folder's inventory beside the
// clone and never written to Git. A live object that proves the same is left alone, so an
// unchanged Secret is not re-encrypted (SOPS output is random) into a commit on every resync.
import type { KubernetesObject } from "@kubernetes/client-node";
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { canonicalJson } from "../../sanitize/digest.ts";

/** What the inventory knows of a SOPS document. Saved across restarts with the other facts. */
export interface SealedFacts {
  /** The age recipients its sops metadata names. */
  recipients: string[];
  /** What the operator encrypted into it, when it wrote it: a salted HMAC, never the plaintext. */
  proof?: { salt: string; digest: string };
}

/** The sops metadata of a parsed document, when it is a SOPS document. */
export function sealedFactsOf(value: unknown): SealedFacts | undefined {
  const sops = (value as { sops?: unknown } | null)?.sops;
  if (typeof sops !== "object" || sops === null || !("mac" in sops)) return undefined;
  const age = (sops as { age?: unknown }).age;
  const recipients = Array.isArray(age)
    ? age
        .map((stanza) => (stanza as { recipient?: unknown }).recipient)
        .filter((r): r is string => typeof r === "string" && r !== "")
    : [];
  return { recipients };
}

/** The proof that a document holds `object`, encrypted to `recipients`. */
export function proofOf(object: KubernetesObject, recipients: readonly string[]): SealedFacts["proof"] {
  const salt = randomBytes(16).toString("base64");
  return { salt, digest: keyedDigest(salt, object, recipients) };
}

/** Whether `proof` was made of `object` and `recipients`: then the document already holds it. */
export function proves(
  proof: SealedFacts["proof"] | undefined,
  object: KubernetesObject,
  recipients: readonly string[],
): boolean {
  if (!proof) return false;
  const expected = Buffer.from(proof.digest, "base64");
  const actual = Buffer.from(keyedDigest(proof.salt, object, recipients), "base64");
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

function keyedDigest(salt: string, object: KubernetesObject, recipients: readonly string[]): string {
  // The recipients count: a changed list re-encrypts, so every recipient can read every document.
  return createHmac("sha256", salt)
    .update(canonicalJson([object, [...recipients].sort()]))
    .digest("base64");
}
