// OpenPGP signing keys: an ASCII-armored private key from a Secret (what `gpg --armor
// --export-secret-keys` writes), with its passphrase when it has one, read and used by OpenPGP.js
// in memory. The key never reaches a file and no gpg runs: a commit's signature is a detached,
// armored signature over the commit's payload as binary data, what `git commit -S` has gpg write
// (`gpg --detach-sign --armor`) and what `git verify-commit` hands gpg to check.
//
// OpenPGP.js answers only asynchronously, and a worker's key is made by a synchronous function
// (internal/gitbranch/workerspec.ts), so the key is made in two steps: openPgpSigningKey looks
// at the armor and the first packet at once, which catches a public key, text that is no
// OpenPGP key, and a protected key without a passphrase; the library reads, decrypts and proves
// the key at its first signature. The GitProvider's SigningConfigured condition reads the key
// whole beforehand (readOpenPgpKey), so a wrong passphrase or an expired key is reported there.
import type { Message, PrivateKey, SecretKeyPacket } from "openpgp";
import { errorText } from "../telemetry/errortext.ts";
import type { SigningKey } from "./key.ts";

/** What a readable OpenPGP key signs as. */
export interface OpenPgpKeyInfo {
  /** The armored public key: status.signingPublicKey, to register with the Git host. */
  publicKey: string;
  /** The primary key's fingerprint, upper-case hex: the key the Git host names. */
  fingerprint: string;
  /** The (sub)key that signs: its algorithm, such as "Ed25519" or "RSA 3072". */
  algorithm: string;
  /** The key's user IDs, such as "GitOps Reverser <noreply@configbutler.ai>". */
  userIds: string[];
}

export interface OpenPgpSigningKey extends SigningKey {
  readonly format: "openpgp";
}

const privateLabel = "PGP PRIVATE KEY BLOCK";
const exportHint = "export one with gpg --armor --export-secret-keys KEYID";

/**
 * sign() as called here: its declared result goes through stream types from an optional peer
 * package that is not installed, so it is said plainly.
 */
type ArmoredSign = (options: {
  message: Message<Uint8Array>;
  signingKeys: PrivateKey;
  detached: true;
  format: "armored";
}) => Promise<string>;

// Loaded on first use: an install that signs with SSH never evaluates the library.
const library = () => import("openpgp");

/**
 * A key that signs with the armored OpenPGP private key `text`. Throws at once, saying why, for
 * what is plainly no usable key; what only the library can tell fails the first signature.
 */
export function openPgpSigningKey(text: string, passphrase?: string): OpenPgpSigningKey {
  checkOpenPgpKey(text, passphrase);
  let read: Promise<PrivateKey> | undefined;
  return {
    format: "openpgp",
    async signCommit(payload: string): Promise<string> {
      read ??= readKey(text, passphrase);
      const key = await read;
      const { createMessage, sign } = await library();
      const message = await createMessage({ binary: new Uint8Array(Buffer.from(payload, "utf8")) });
      return (sign as ArmoredSign)({ message, signingKeys: key, detached: true, format: "armored" });
    },
  };
}

/** Reads, decrypts and proves the key; throws, saying why and what to do, when it cannot sign. */
export async function readOpenPgpKey(text: string, passphrase?: string): Promise<OpenPgpKeyInfo> {
  checkOpenPgpKey(text, passphrase);
  const key = await readKey(text, passphrase);
  const signing = await key.getSigningKey();
  return {
    publicKey: key.toPublic().armor(),
    fingerprint: key.getFingerprint().toUpperCase(),
    algorithm: algorithmName(signing.getAlgorithmInfo()),
    userIds: key.getUserIDs(),
  };
}

async function readKey(text: string, passphrase: string | undefined): Promise<PrivateKey> {
  const { readPrivateKey, decryptKey } = await library();
  let key: PrivateKey;
  try {
    key = await readPrivateKey({ armoredKey: text });
  } catch (err) {
    throw new Error(`the OpenPGP private key cannot be read (${errorText(err)}); ${exportHint}`, {
      cause: err,
    });
  }
  let signing: Awaited<ReturnType<PrivateKey["getSigningKey"]>>;
  try {
    signing = await key.getSigningKey();
  } catch (err) {
    throw new Error(
      `the OpenPGP key has no key that may sign now, one not expired or revoked (${errorText(err)})`,
      { cause: err },
    );
  }
  // The packet that signs, not the key: a key is "decrypted" when any of its packets is.
  if ((signing.keyPacket as SecretKeyPacket).isDecrypted()) return key;
  if (!passphrase) throw new Error(missingPassphrase);
  try {
    return await decryptKey({ privateKey: key, passphrase });
  } catch (err) {
    if (/incorrect key passphrase/i.test(errorText(err)))
      throw new Error(
        "the passphrase under passphrase does not unlock the OpenPGP key: put the right one there",
        { cause: err },
      );
    throw new Error(`the OpenPGP key cannot be decrypted (${errorText(err)})`, { cause: err });
  }
}

const missingPassphrase =
  "the OpenPGP key is protected by a passphrase and the Secret has none: put it under passphrase";

/**
 * What the armor and the first packet tell without the library: a public key, text that is no
 * OpenPGP private key (an SSH key among them), or a protected key and no passphrase. Anything it
 * does not know is left to the library.
 */
export function checkOpenPgpKey(text: string, passphrase?: string): void {
  if (!text.includes(`-----BEGIN ${privateLabel}-----`)) {
    if (text.includes("-----BEGIN PGP PUBLIC KEY BLOCK-----"))
      throw new Error(
        `the signing key is an OpenPGP public key, which cannot sign: store the private key instead (${exportHint})`,
      );
    if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text))
      throw new Error(
        "the signing key is an SSH or PEM key: set spec.commit.signing.format to ssh, or store an ASCII-armored OpenPGP private key",
      );
    throw new Error(`the signing key is not an ASCII-armored OpenPGP private key; ${exportHint}`);
  }
  if (!passphrase && primaryKeyProtected(dearmorOpenPgp(text)) === true) throw new Error(missingPassphrase);
}

/** The bytes of the first armored private key block (RFC 4880 § 6.2), or undefined. */
function dearmorOpenPgp(text: string): Buffer | undefined {
  const match = new RegExp(
    `-----BEGIN ${privateLabel}-----\\r?\\n([\\s\\S]*?)-----END ${privateLabel}-----`,
  ).exec(text);
  if (!match) return undefined;
  const lines = match[1]!.split(/\r?\n/);
  const blank = lines.findIndex((line) => line.trim() === "");
  // Armor headers ("Comment: …") end at the first blank line; the checksum line starts with "=".
  const body = lines.slice(blank + 1).filter((line) => !line.startsWith("="));
  return Buffer.from(body.join(""), "base64");
}

/**
 * Whether the first packet, a v4 secret key (RFC 4880 § 5.5.3), is protected: its S2K usage
 * octet, after the public fields, is not 0. Undefined where this cannot tell (another packet or
 * version, an algorithm it does not know, gpg's secret-less stub): the library decides then.
 */
function primaryKeyProtected(bytes: Buffer | undefined): boolean | undefined {
  if (!bytes || bytes.length < 2 || !(bytes[0]! & 0x80)) return undefined;
  let at = 1;
  let tag: number;
  if (bytes[0]! & 0x40) {
    tag = bytes[0]! & 0x3f;
    const first = bytes[at]!;
    if (first >= 224 && first < 255) return undefined; // a partial length: no key packet has one
    at += first < 192 ? 1 : first < 224 ? 2 : 5;
  } else {
    tag = (bytes[0]! >> 2) & 0x0f;
    at += [1, 2, 4][bytes[0]! & 0x03] ?? 0;
  }
  if (tag !== 5 || bytes[at] !== 4) return undefined;
  at += 1 + 4; // version, creation time
  const algorithm = bytes[at++];
  const mpi = () => {
    if (at + 2 > bytes.length) return false;
    at += 2 + Math.ceil(bytes.readUInt16BE(at) / 8);
    return true;
  };
  const oid = () => {
    if (at >= bytes.length) return false;
    at += 1 + bytes[at]!;
    return true;
  };
  const publicFields: Record<number, () => boolean> = {
    1: () => mpi() && mpi(), // RSA: n, e
    17: () => mpi() && mpi() && mpi() && mpi(), // DSA: p, q, g, y
    19: () => oid() && mpi(), // ECDSA: curve, point
    22: () => oid() && mpi(), // EdDSA (legacy): curve, point
    27: () => ((at += 32), true), // Ed25519
    28: () => ((at += 57), true), // Ed448
  };
  const skip = algorithm === undefined ? undefined : publicFields[algorithm];
  if (!skip?.() || at >= bytes.length) return undefined;
  const usage = bytes[at]!;
  if (usage === 0) return false;
  // 254 and 255 name a cipher, then an S2K specifier: type 101 is gpg's stub of a key whose
  // secret is elsewhere (a signing subkey exported without its primary key).
  if ((usage === 254 || usage === 255) && bytes[at + 2] === 101) return undefined;
  return true;
}

function algorithmName(info: { algorithm: string; bits?: number; curve?: string }): string {
  if (info.algorithm.startsWith("rsa")) return `RSA ${info.bits ?? ""}`.trim();
  if (info.algorithm === "eddsaLegacy" || info.algorithm === "ed25519") return "Ed25519";
  if (info.algorithm === "ed448") return "Ed448";
  if (info.algorithm === "ecdsa") return `ECDSA ${info.curve ?? ""}`.trim();
  return info.algorithm;
}
