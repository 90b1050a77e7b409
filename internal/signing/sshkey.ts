// OpenSSH signing keys, held in memory: read from the text of a Secret (OpenSSH's own
// openssh-key-v1 format, or PEM), or generated. The private key never reaches a file: Node's
// crypto signs with it, so no ssh-keygen reads it from disk.
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  sign,
  type KeyObject,
} from "node:crypto";
import type { SigningKey } from "./key.ts";
import { sshSignature } from "./sshsig.ts";
import { WireReader, armor, dearmor, mpint, sshString, uint32 } from "./wire.ts";

// The engine and the worker carry a key of either format under this name.
export type { SigningKey } from "./key.ts";

export interface SshSigningKey extends SigningKey {
  readonly format: "ssh";
  /** The public key as authorized_keys and allowed-signers lines write it: "ssh-ed25519 AAAA…". */
  publicKey: string;
  /** The public key's wire blob, which an SSH signature names. */
  publicBlob: Buffer;
  /** An SSH signature blob (algorithm name and signature) of `data`. */
  sign(data: Buffer): Buffer;
}

const curves: Record<string, { jwk: string; hash: string }> = {
  nistp256: { jwk: "P-256", hash: "sha256" },
  nistp384: { jwk: "P-384", hash: "sha384" },
  nistp521: { jwk: "P-521", hash: "sha512" },
};

/** A signing key from a Secret's text; throws, saying why, for one that cannot be used. */
export function readSigningKey(text: string): SshSigningKey {
  const openssh = dearmor("OPENSSH PRIVATE KEY", text);
  if (openssh) return keyOf(opensshPrivateKey(openssh));
  if (/-----BEGIN PGP (PRIVATE|PUBLIC) KEY BLOCK-----/.test(text))
    throw new Error(
      "the signing key is an OpenPGP key: set spec.commit.signing.format to openpgp, or store an OpenSSH private key",
    );
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) {
    if (/ENCRYPTED/.test(text))
      throw new Error("the signing key is encrypted with a passphrase; store it unencrypted");
    return keyOf(createPrivateKey({ key: text, format: "pem" }));
  }
  throw new Error("the signing key is not an OpenSSH or PEM private key");
}

/** A new ed25519 key, as OpenSSH writes it (openssh-key-v1), and its public key. */
export function generateSigningKey(comment = "gitops-reverser"): { privateKey: string; publicKey: string } {
  const { privateKey } = generateKeyPairSync("ed25519");
  const jwk = privateKey.export({ format: "jwk" });
  const [seed, pub] = [Buffer.from(jwk.d!, "base64url"), Buffer.from(jwk.x!, "base64url")];
  const publicBlob = Buffer.concat([sshString("ssh-ed25519"), sshString(pub)]);
  const check = randomBytes(4);
  let secret = Buffer.concat([
    check,
    check,
    sshString("ssh-ed25519"),
    sshString(pub),
    sshString(Buffer.concat([seed, pub])),
    sshString(comment),
  ]);
  // Padded to the cipher's block size ("none": 8) with 1, 2, 3, …
  const pad = (8 - (secret.length % 8)) % 8;
  secret = Buffer.concat([secret, Buffer.from(Array.from({ length: pad }, (_, i) => i + 1))]);
  const body = Buffer.concat([
    Buffer.from("openssh-key-v1\0", "latin1"),
    sshString("none"),
    sshString("none"),
    sshString(""),
    uint32(1),
    sshString(publicBlob),
    sshString(secret),
  ]);
  return {
    privateKey: armor("OPENSSH PRIVATE KEY", body),
    publicKey: `ssh-ed25519 ${publicBlob.toString("base64")} ${comment}`,
  };
}

/** The one private key of an unencrypted openssh-key-v1 body, as a KeyObject. */
function opensshPrivateKey(body: Buffer): KeyObject {
  const magic = "openssh-key-v1\0";
  if (body.subarray(0, magic.length).toString("latin1") !== magic)
    throw new Error("not an openssh-key-v1 key");
  const reader = new WireReader(body.subarray(magic.length));
  const [cipher] = [reader.text(), reader.text(), reader.string()];
  if (cipher !== "none")
    throw new Error("the signing key is encrypted with a passphrase; store it unencrypted");
  if (reader.uint32() !== 1) throw new Error("the signing key file must hold exactly one key");
  reader.string();
  const secret = new WireReader(reader.string());
  if (secret.uint32() !== secret.uint32()) throw new Error("the signing key is corrupt");
  const type = secret.text();
  if (type === "ssh-ed25519") {
    const pub = secret.string();
    const priv = secret.string();
    return createPrivateKey({
      key: {
        kty: "OKP",
        crv: "Ed25519",
        d: priv.subarray(0, 32).toString("base64url"),
        x: pub.toString("base64url"),
      },
      format: "jwk",
    });
  }
  if (type === "ssh-rsa") return rsaKey(secret);
  if (type.startsWith("ecdsa-sha2-")) {
    const curve = curves[secret.text()];
    if (!curve) throw new Error(`the signing key's curve is not one OpenSSH signs with`);
    const point = secret.string();
    const d = secret.mpint();
    const size = (point.length - 1) / 2;
    return createPrivateKey({
      key: {
        kty: "EC",
        crv: curve.jwk,
        x: point.subarray(1, 1 + size).toString("base64url"),
        y: point.subarray(1 + size).toString("base64url"),
        d: Buffer.concat([Buffer.alloc(Math.max(0, size - d.length)), d]).toString("base64url"),
      },
      format: "jwk",
    });
  }
  throw new Error(`the signing key's type ${type} is not ed25519, RSA or ECDSA`);
}

function rsaKey(secret: WireReader): KeyObject {
  const [n, e, d, iqmp, p, q] = [
    secret.mpint(),
    secret.mpint(),
    secret.mpint(),
    secret.mpint(),
    secret.mpint(),
    secret.mpint(),
  ];
  const big = (b: Buffer) => BigInt(`0x${b.toString("hex") || "0"}`);
  const bytes = (v: bigint) => {
    const hex = v.toString(16);
    return Buffer.from(hex.length % 2 ? `0${hex}` : hex, "hex");
  };
  const b64 = (b: Buffer) => b.toString("base64url");
  return createPrivateKey({
    key: {
      kty: "RSA",
      n: b64(n),
      e: b64(e),
      d: b64(d),
      p: b64(p),
      q: b64(q),
      dp: b64(bytes(big(d) % (big(p) - 1n))),
      dq: b64(bytes(big(d) % (big(q) - 1n))),
      qi: b64(iqmp),
    },
    format: "jwk",
  });
}

/** What signs with `key`, and the public key it names, in SSH's encoding. */
function keyOf(key: KeyObject): SshSigningKey {
  const jwk = createPublicKey(key).export({ format: "jwk" });
  const raw = (value: string | undefined) => Buffer.from(value ?? "", "base64url");
  let name: string;
  let publicBlob: Buffer;
  let signRaw: (data: Buffer) => Buffer;
  if (jwk.kty === "OKP" && jwk.crv === "Ed25519") {
    name = "ssh-ed25519";
    publicBlob = Buffer.concat([sshString(name), sshString(raw(jwk.x))]);
    signRaw = (data) => Buffer.concat([sshString(name), sshString(sign(null, data, key))]);
  } else if (jwk.kty === "RSA") {
    name = "ssh-rsa";
    publicBlob = Buffer.concat([sshString(name), mpint(raw(jwk.e)), mpint(raw(jwk.n))]);
    // SHA-512, as ssh-keygen -Y sign uses for RSA keys.
    signRaw = (data) => Buffer.concat([sshString("rsa-sha2-512"), sshString(sign("sha512", data, key))]);
  } else if (jwk.kty === "EC") {
    const curve = Object.entries(curves).find(([, c]) => c.jwk === jwk.crv);
    if (!curve) throw new Error(`the signing key's curve ${jwk.crv} is not one OpenSSH signs with`);
    const [curveName, { hash }] = curve;
    name = `ecdsa-sha2-${curveName}`;
    const point = Buffer.concat([Buffer.from([4]), raw(jwk.x), raw(jwk.y)]);
    publicBlob = Buffer.concat([sshString(name), sshString(curveName), sshString(point)]);
    signRaw = (data) => {
      const rs = sign(hash, data, { key, dsaEncoding: "ieee-p1363" });
      const half = rs.length / 2;
      const inner = Buffer.concat([mpint(rs.subarray(0, half)), mpint(rs.subarray(half))]);
      return Buffer.concat([sshString(name), sshString(inner)]);
    };
  } else {
    throw new Error("the signing key is not ed25519, RSA or ECDSA");
  }
  const signing: SshSigningKey = {
    format: "ssh",
    publicKey: `${name} ${publicBlob.toString("base64")}`,
    publicBlob,
    sign: signRaw,
    signCommit: (payload) => Promise.resolve(sshSignature(signing, payload)),
  };
  return signing;
}
