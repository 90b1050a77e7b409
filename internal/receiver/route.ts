// Which branch workers a push wakes: those of every GitBranch, in any namespace, whose
// GitProvider's spec.url is the repository the delivery names (normalized as the branch claim
// normalizes it, so the https and ssh spellings of one repository are one) and whose branch is
// the pushed one. Pure; each GitBranch at most once, however many URLs matched it.
import type { GitBranch, GitProvider } from "../../generated/v1alpha3/index.ts";
import { normalizeRepositoryUrl } from "../types/repourl.ts";
import { keyOf, objectKeyOf } from "../types/names.ts";

/** The GitBranches (namespace/name) a push of `branch` to the repository `urls` name wakes. */
export function branchesWoken(
  urls: readonly string[],
  branch: string,
  providers: readonly GitProvider[],
  branches: readonly GitBranch[],
): string[] {
  const named = new Set(urls.map(normalizeRepositoryUrl));
  const matching = new Set(
    providers.filter((p) => named.has(normalizeRepositoryUrl(p.spec.url))).map((p) => objectKeyOf(p)),
  );
  const woken = branches.filter((b) => {
    if (b.spec.branch !== branch) return false;
    const ref = {
      namespace: b.spec.gitProviderRef.namespace ?? b.metadata.namespace ?? "",
      name: b.spec.gitProviderRef.name,
    };
    return matching.has(keyOf(ref));
  });
  return [...new Set(woken.map((b) => objectKeyOf(b)))];
}
