// The key every commit is signed with, of either format GitProvider.spec.commit.signing.format
// names: an SSH key (sshkey.ts) or an OpenPGP key (openpgpkey.ts). The Git engine asks it for
// one thing, the armored signature of a commit's payload, which it writes as the commit's gpgsig
// header. git tells the two apart by the armor (SSH SIGNATURE or PGP SIGNATURE) and verifies
// each with its own program, ssh-keygen or gpg.

export type SigningFormat = "ssh" | "openpgp";

export interface SigningKey {
  readonly format: SigningFormat;
  /** The armored signature of a commit object without its gpgsig header, as git signs it. */
  signCommit(payload: string): Promise<string>;
}
