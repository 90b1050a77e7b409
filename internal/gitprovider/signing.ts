// GitProvider.spec.commit.signing, decided from what its Secret holds: the key commits are
// signed with, one to generate, or why there is none. Without a usable key the provider is not
// Ready and no worker is made for its branches, so nothing is committed unsigned.
import { GitProviderCondition, GitProviderReason } from "../../generated/v1alpha3/index.ts";
import type { ConditionUpdate } from "../operator/conditions.ts";
import { readSigningKey } from "../signing/sshkey.ts";
import { errorText } from "../telemetry/errortext.ts";

/** What the signing Secret held, as read. */
export type SigningRead =
  | { kind: "secretNotFound"; secret: string }
  /** The install may not read it: `message` says how to grant it. Never generated over. */
  | { kind: "forbidden"; secret: string; message: string }
  | { kind: "keyMissing"; secret: string; key: string }
  /** `version`, when read from the API: changes whenever the Secret does. */
  | { kind: "key"; secret: string; key: string; text: string; version?: string };

export type SigningDecision =
  /** The key signs: its public half goes to status.signingPublicKey. */
  | { kind: "ready"; publicKey: string; condition: ConditionUpdate }
  /** No key, and generateWhenMissing: generate one into the Secret, then read it again. */
  | { kind: "generate"; create: boolean }
  /** No usable key: the condition says why and what to do. */
  | { kind: "refused"; condition: ConditionUpdate };

export function decideSigning(
  read: SigningRead,
  generateWhenMissing: boolean,
  generation: number | undefined,
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
    if (generateWhenMissing) return { kind: "generate", create: read.kind === "secretNotFound" };
    return read.kind === "secretNotFound"
      ? {
          kind: "refused",
          condition: condition(
            "False",
            GitProviderReason.SecretNotFound,
            `The signing Secret ${read.secret} does not exist: create it with an OpenSSH private key under signing-key, or set generateWhenMissing: true. Nothing is committed until it can be read.`,
          ),
        }
      : {
          kind: "refused",
          condition: condition(
            "False",
            GitProviderReason.SigningKeyMissing,
            `The signing Secret ${read.secret} has no key ${read.key}: add an OpenSSH private key there, or set generateWhenMissing: true. Nothing is committed until it can be read.`,
          ),
        };
  }
  try {
    const { publicKey } = readSigningKey(read.text);
    const type = publicKey.split(" ")[0];
    return {
      kind: "ready",
      publicKey,
      condition: condition(
        "True",
        GitProviderReason.Succeeded,
        `Every commit is signed with the ${type} key in ${read.secret}; register status.signingPublicKey with the Git host`,
      ),
    };
  } catch (err) {
    return {
      kind: "refused",
      condition: condition(
        "False",
        GitProviderReason.CredentialsInvalid,
        `The signing key ${read.key} in ${read.secret} cannot be used: ${errorText(err)}. Nothing is committed until it can be read.`,
      ),
    };
  }
}
