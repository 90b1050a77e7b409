// A manifest encrypted as a SOPS document, in memory, before any byte of it reaches a file.
// Its values under data and stringData are encrypted with a fresh data key, which each age
// recipient gets its own copy of; apiVersion, kind and metadata stay readable, and a MAC over
// every value, in the order the file holds them, lets sops (and Flux) detect tampering.
import type { KubernetesObject } from "@kubernetes/client-node";
import { Encrypter, armor } from "age-encryption";
import { createHash, randomBytes } from "node:crypto";
import { Scalar, isMap, isScalar, isSeq } from "yaml";
import { renderStable, stableDocument } from "../sanitize/stableyaml.ts";
import { encryptValue, macBytes, type Leaf } from "./value.ts";
import { errorText } from "../telemetry/errortext.ts";

/** The keys a Secret's values are encrypted under: what Flux's documentation recommends. */
export const secretEncryptedRegex = "^(data|stringData)$";

/** The sops release whose file format this writer follows, and the tests read back with. */
export const sopsFormatVersion = "3.13.3";

export interface EncryptOptions {
  /** age public keys ("age1…"): each can decrypt the document. */
  recipients: readonly string[];
  /** The document's lastmodified stamp: now, unless a test pins it. */
  now?: Date;
}

/** Encryption could not be done: a recipient age refuses, or a value sops cannot hold. */
export class EncryptionError extends Error {}

/**
 * `object` as a SOPS document's YAML text: its keys in toStableYaml's order, values encrypted.
 * Throws EncryptionError, whose message holds no value of the object.
 */
export async function encryptManifest(object: KubernetesObject, options: EncryptOptions): Promise<string> {
  try {
    return await encrypt(object, options);
  } catch (err) {
    throw err instanceof EncryptionError ? err : new EncryptionError(errorText(err));
  }
}

async function encrypt(object: KubernetesObject, options: EncryptOptions): Promise<string> {
  if (options.recipients.length === 0) throw new EncryptionError("no age recipients to encrypt to");
  const document = stableDocument(object);
  const dataKey = randomBytes(32);
  const mac = createHash("sha512");
  const regex = encryptedRegexFor(object);
  const encrypted = new RegExp(regex);
  eachLeaf(document.contents, [], (scalar, path) => {
    const value = scalar.value as Leaf;
    mac.update(macBytes(value));
    if (path.some((key) => encrypted.test(key)))
      scalar.value = encryptValue(value, dataKey, `${path.join(":")}:`);
  });
  const lastmodified = rfc3339(options.now ?? new Date());
  document.set("sops", {
    age: await Promise.all(
      options.recipients.map(async (recipient) => ({
        recipient,
        enc: literal(await wrapDataKey(dataKey, recipient)),
      })),
    ),
    lastmodified,
    mac: encryptValue(mac.digest("hex").toUpperCase(), dataKey, lastmodified),
    encrypted_regex: regex,
    version: sopsFormatVersion,
  });
  dataKey.fill(0);
  return renderStable(document);
}

/**
 * Which keys are encrypted. A Secret keeps its values under data and stringData; another
 * sensitive kind may keep them anywhere, so everything beside apiVersion, kind and metadata is
 * encrypted. sops matches the regex against every key on a value's path, so naming a
 * top-level key encrypts all of it.
 */
export function encryptedRegexFor(object: KubernetesObject): string {
  if (object.kind === "Secret" && (object.apiVersion ?? "v1") === "v1") return secretEncryptedRegex;
  const readable = new Set(["apiVersion", "kind", "metadata"]);
  const keys = Object.keys(object)
    .filter((key) => !readable.has(key))
    .sort();
  return keys.length === 0 ? secretEncryptedRegex : `^(${keys.map(escapeRegex).join("|")})$`;
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Throws, naming it, for a recipient age cannot encrypt to. */
export function checkRecipients(recipients: readonly string[]): void {
  for (const recipient of recipients) new Encrypter().addRecipient(recipient);
}

// sops walks every scalar of the tree in document order, with the path of map keys above it
// (a list adds nothing to the path), and skips nulls.
function eachLeaf(node: unknown, path: string[], visit: (scalar: Scalar, path: string[]) => void): void {
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      eachLeaf(pair.value, [...path, key], visit);
    }
  } else if (isSeq(node)) {
    for (const item of node.items) eachLeaf(item, path, visit);
  } else if (isScalar(node) && node.value !== null && node.value !== undefined) {
    if (!["string", "number", "boolean"].includes(typeof node.value))
      throw new EncryptionError(`sops cannot encrypt a ${typeof node.value} at ${path.join(".")}`);
    visit(node, path);
  }
}

/** The data key, age-encrypted to one recipient and armored, as sops stores it. */
async function wrapDataKey(dataKey: Uint8Array, recipient: string): Promise<string> {
  const encrypter = new Encrypter();
  encrypter.addRecipient(recipient);
  return armor.encode(await encrypter.encrypt(dataKey));
}

function literal(text: string): Scalar {
  const scalar = new Scalar(text);
  scalar.type = Scalar.BLOCK_LITERAL;
  return scalar;
}

/** Go's time.RFC3339 of a UTC time: whole seconds and a Z. */
function rfc3339(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}
