// Which branches a GitProvider's grants let a namespace claim. Pure: the caller passes the
// consumer namespace's labels, as for every other grant.
import type { GitProviderSpec } from "../../generated/v1alpha3/index.ts";
import { grantsAdmit } from "./namespaces.ts";

export type BranchGrant = NonNullable<GitProviderSpec["allowedGitBranches"]>[number];

/**
 * Whether `branch` matches a grant's pattern: "*" matches within one path segment, "**" across
 * segments, and a "**" segment ("env/**", "**\/prod", "a/**\/b") also matches no segment at all,
 * so "env/**" admits "env" itself. Git branch names cannot hold "*", "?" or "[", so a pattern
 * needs no escape syntax and every other character matches itself.
 */
export function branchMatches(pattern: string, branch: string): boolean {
  return globToRegExp(pattern).test(branch);
}

function globToRegExp(pattern: string): RegExp {
  let source = "";
  for (let i = 0; i < pattern.length;) {
    if (pattern.startsWith("**", i)) {
      const segmentStart = i === 0 || pattern[i - 1] === "/";
      const segmentEnd = i + 2 === pattern.length || pattern[i + 2] === "/";
      if (segmentStart && segmentEnd && pattern[i + 2] === "/") {
        source += "(?:.*/)?"; // "**/": any number of whole segments, or none
        i += 3;
      } else if (segmentStart && segmentEnd && i > 0) {
        source = source.slice(0, -1) + "(?:/.*)?"; // "/**" at the end: the "/" goes with it
        i += 2;
      } else {
        source += ".*";
        i += 2;
      }
    } else if (pattern[i] === "*") {
      source += "[^/]*";
      i += 1;
    } else {
      source += pattern[i]!.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
      i += 1;
    }
  }
  return new RegExp(`^${source}$`);
}

/**
 * What a GitProvider's spec.allowedGitBranches says about a GitBranch in `namespace` claiming
 * `branch`: `none` when no grant admits the namespace, `branch` when grants admit it but none of
 * their patterns matches, else `allowed`. The list has no default: omitted, it admits nobody,
 * not even the provider's own namespace, because a branch policy must be written down.
 */
export function branchGrantVerdict(
  grants: BranchGrant[] | undefined,
  providerNamespace: string,
  namespace: string,
  labels: Record<string, string>,
  branch: string,
): { verdict: "allowed" } | { verdict: "namespace" } | { verdict: "branch"; patterns: string[] } {
  const admitting = grantsAdmit(grants ?? [], providerNamespace, namespace, labels);
  if (admitting.length === 0) return { verdict: "namespace" };
  const patterns = [...new Set(admitting.flatMap((g) => g.branches))];
  return patterns.some((p) => branchMatches(p, branch))
    ? { verdict: "allowed" }
    : { verdict: "branch", patterns };
}
