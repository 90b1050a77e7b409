// Where GitProvider.spec.commit.signing keeps its key: a Secret in the provider's namespace,
// under spec.commit.signing.secretRef.key, else signing-key; an OpenPGP key's passphrase, when
// it has one, under passphrase beside it.
import type { GitProvider } from "../../generated/v1alpha3/index.ts";
import type { SigningFormat } from "./key.ts";

export const defaultSigningKeyName = "signing-key";
/** The key of the signing Secret an OpenPGP key's passphrase is under. */
export const passphraseKeyName = "passphrase";

/** The signing Secret's name and the key its private key is under, when the provider signs. */
export function signingSecretOf(provider: GitProvider): { name: string; key: string } | undefined {
  const ref = provider.spec.commit?.signing?.secretRef;
  return ref ? { name: ref.name, key: ref.key ?? defaultSigningKeyName } : undefined;
}

/** spec.commit.signing.format: ssh unless it says openpgp. */
export function signingFormatOf(provider: GitProvider): SigningFormat {
  return provider.spec.commit?.signing?.format === "openpgp" ? "openpgp" : "ssh";
}

/** The private key's text from a Secret's data (base64, as the API returns it), if it holds one. */
export function signingKeyText(data: Record<string, string> | undefined, key: string): string | undefined {
  const value = data?.[key];
  if (!value) return undefined;
  const text = Buffer.from(value, "base64").toString("utf8");
  return text.trim() === "" ? undefined : text;
}

/**
 * The passphrase from a Secret's data, if it holds one: as written, but for the line break an
 * editor or `echo` leaves at its end, which gpg's own passphrase files leave off too.
 */
export function signingPassphrase(data: Record<string, string> | undefined): string | undefined {
  const value = data?.[passphraseKeyName];
  if (!value) return undefined;
  const text = Buffer.from(value, "base64")
    .toString("utf8")
    .replace(/\r?\n$/, "");
  return text === "" ? undefined : text;
}
