// GitProvider.spec.commit.signing, decided from what its Secret holds: the key commits are
// signed with, one to generate, or why there is none. Without a usable key the provider is not
// Ready and no worker is made for its branches, so nothing is committed unsigned. An SSH key is
// read here; an OpenPGP key is read by OpenPGP.js, which answers asynchronously, so the
// controller reads it first (examineSigningKey) and hands the outcome to decideSigning.
import { GitProviderCondition, GitProviderReason } from "../../generated/v1alpha3/index.ts";
import type { ConditionUpdate } from "../operator/conditions.ts";
import type { SigningFormat } from "../signing/key.ts";
import { readOpenPgpKey } from "../signing/openpgpkey.ts";
import { readSigningKey } from "../signing/sshkey.ts";
import { errorText } from "../telemetry/errortext.ts";

/** What the signing Secret held, as read. */
export type SigningRead =
  | { kind: "secretNotFound"; secret: string }
  /** The install may not read it: `message` says how to grant it. Never generated over. */
  | { kind: "forbidden"; secret: string; message: string }
  | { kind: "keyMissing"; secret: string; key: string }
  /**
   * `passphrase`: the Secret's passphrase, for an OpenPGP key that has one. `version`, when read
   * from the API: changes whenever the Secret does.
   */
  | { kind: "key"; secret: string; key: string; text: string; passphrase?: string; version?: string };

/** What reading the key found: what it signs as, or why it cannot sign and what to do. */
export type ExaminedKey =
  /** `publicKey` goes to status.signingPublicKey; `description` names the key in the condition. */
  { kind: "usable"; publicKey: string; description: string } | { kind: "unusable"; why: string };

/** The key a "key" read holds, read in `format`; undefined for any other read. */
export async function examineSigningKey(
  read: SigningRead,
  format: SigningFormat,
): Promise<ExaminedKey | undefined> {
  if (read.kind !== "key") return undefined;
  if (format === "ssh") return examineSshKey(read.text);
  try {
    const key = await readOpenPgpKey(read.text, read.passphrase);
    const who = key.userIds.length > 0 ? `, ${key.userIds.join(", ")}` : "";
    return {
      kind: "usable",
      publicKey: key.publicKey,
      description: `OpenPGP key ${key.fingerprint} (${key.algorithm}${who})`,
    };
  } catch (err) {
    return { kind: "unusable", why: errorText(err) };
  }
}

function examineSshKey(text: string): ExaminedKey {
  try {
    const { publicKey } = readSigningKey(text);
    return { kind: "usable", publicKey, description: `${publicKey.split(" ")[0]} key` };
  } catch (err) {
    return { kind: "unusable", why: errorText(err) };
  }
}

/** What the Secret should hold, for a message that asks for it. */
const keyWanted: Record<SigningFormat, string> = {
  ssh: "an OpenSSH private key",
  openpgp: "an ASCII-armored OpenPGP private key (gpg --armor --export-secret-keys KEYID)",
};

export type SigningDecision =
  /** The key signs: its public half goes to status.signingPublicKey. */
  | { kind: "ready"; publicKey: string; condition: ConditionUpdate }
  /** No key, and generateWhenMissing: generate one into the Secret, then read it again. */
  | { kind: "generate"; create: boolean }
  /** No usable key: the condition says why and what to do. */
  | { kind: "refused"; condition: ConditionUpdate };

/**
 * `examined` is what examineSigningKey found in a "key" read; an SSH key is read here when it is
 * not given. generateWhenMissing is for SSH keys only, and ignored for OpenPGP.
 */
export function decideSigning(
  read: SigningRead,
  generateWhenMissing: boolean,
  generation: number | undefined,
  { format = "ssh", examined }: { format?: SigningFormat; examined?: ExaminedKey } = {},
): SigningDecision {
  const condition = (status: "True" | "False", reason: string, message: string): ConditionUpdate => ({
    type: GitProviderCondition.SigningConfigured,
    status,
    reason,
    message,
    observedGeneration: generation,
  });
  if (read.kind === "forbidden")
    return {
      kind: "refused",
      condition: condition(
        "False",
        GitProviderReason.SecretNotFound,
        `${read.message} Nothing is committed until it can be read.`,
      ),
    };
  if (read.kind !== "key") {
    if (generateWhenMissing && format === "ssh")
      return { kind: "generate", create: read.kind === "secretNotFound" };
    return read.kind === "secretNotFound"
      ? {
          kind: "refused",
          condition: condition(
            "False",
            GitProviderReason.SecretNotFound,
            `The signing Secret ${read.secret} does not exist: create it with ${keyWanted[format]} under signing-key${orGenerate(format)}. Nothing is committed until it can be read.`,
          ),
        }
      : {
          kind: "refused",
          condition: condition(
            "False",
            GitProviderReason.SigningKeyMissing,
            `The signing Secret ${read.secret} has no key ${read.key}: add ${keyWanted[format]} there${orGenerate(format)}. Nothing is committed until it can be read.`,
          ),
        };
  }
  if (format === "openpgp" && !examined)
    throw new Error("an OpenPGP key is decided on once examineSigningKey has read it");
  const found = examined ?? examineSshKey(read.text);
  if (found.kind === "unusable")
    return {
      kind: "refused",
      condition: condition(
        "False",
        GitProviderReason.CredentialsInvalid,
        `The signing key ${read.key} in ${read.secret} cannot be used: ${found.why}. Nothing is committed until it can be read.`,
      ),
    };
  return {
    kind: "ready",
    publicKey: found.publicKey,
    condition: condition(
      "True",
      GitProviderReason.Succeeded,
      `Every commit is signed with the ${found.description} in ${read.secret}; register status.signingPublicKey with the Git host`,
    ),
  };
}

/** The rest of what to do: generate an SSH key instead, or add an OpenPGP key's passphrase. */
function orGenerate(format: SigningFormat): string {
  return format === "ssh"
    ? ", or set generateWhenMissing: true"
    : ", and its passphrase, if it has one, under passphrase";
}
