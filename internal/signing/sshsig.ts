// SSH signatures (OpenSSH's PROTOCOL.sshsig), as `ssh-keygen -Y sign` writes them and git's
// gpg.format=ssh reads them: the key signs a blob naming the namespace and a SHA-512 digest of
// the message, and the armored signature carries the public key beside it.
import { createHash } from "node:crypto";
import { armor, sshString, uint32 } from "./wire.ts";

/** What an SSH signature needs of its key (sshkey.ts's SshSigningKey). */
export interface SshSigner {
  /** The public key's wire blob, which the signature names. */
  publicBlob: Buffer;
  /** An SSH signature blob (algorithm name and signature) of `data`. */
  sign(data: Buffer): Buffer;
}

const magic = Buffer.from("SSHSIG", "latin1");

/** The armored SSH signature of `message` in `namespace` ("git" for commits). */
export function sshSignature(key: SshSigner, message: Buffer | string, namespace = "git"): string {
  const digest = createHash("sha512").update(message).digest();
  const signed = Buffer.concat([
    magic,
    sshString(namespace),
    sshString(""),
    sshString("sha512"),
    sshString(digest),
  ]);
  const signature = Buffer.concat([
    magic,
    uint32(1),
    sshString(key.publicBlob),
    sshString(namespace),
    sshString(""),
    sshString("sha512"),
    sshString(key.sign(signed)),
  ]);
  return armor("SSH SIGNATURE", signature);
}
