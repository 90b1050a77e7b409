// Where GitProvider.spec.commit.signing keeps its key: a Secret in the provider's namespace,
// under spec.commit.signing.secretRef.key, else signing-key.
import type { GitProvider } from "../../generated/v1alpha3/index.ts";

export const defaultSigningKeyName = "signing-key";

/** The signing Secret's name and the key its private key is under, when the provider signs. */
export function signingSecretOf(provider: GitProvider): { name: string; key: string } | undefined {
  const ref = provider.spec.commit?.signing?.secretRef;
  return ref ? { name: ref.name, key: ref.key ?? defaultSigningKeyName } : undefined;
}

/** The private key's text from a Secret's data (base64, as the API returns it), if it holds one. */
export function signingKeyText(data: Record<string, string> | undefined, key: string): string | undefined {
  const value = data?.[key];
  if (!value) return undefined;
  const text = Buffer.from(value, "base64").toString("utf8");
  return text.trim() === "" ? undefined : text;
}
