// Which tools (hack/tools/tools.sh's names) the test files given need: so `make test FILES=…`
// builds only those, and a newcomer running one unit test file waits for no Go build. It follows
// each file's relative imports and looks in every file reached for the call that finds a tool
// (test/support/binaries.ts, flux.ts, fluxnotification.ts, argocd.ts, hack/image/rootfs.ts); a
// file that calls none needs none.
//   node --import ./hack/register.ts hack/tools/needs.ts 'test/unit/**/*.test.ts' test/e2e/flux/apply.test.ts
import { existsSync, globSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** The function that finds a tool's binary, by the name tools.sh builds it by. */
const finders: [tool: string, finder: string][] = [
  ["testenv", "testenvBinaries"],
  ["kustomize", "kustomizeBinary"],
  ["sops", "sopsBinary"],
  ["helm", "helmBinary"],
  ["flux", "fluxBinary"],
  ["flux-notification", "notificationControllerBinary"],
  ["argocd", "argoCDCrdFile"],
  ["olm-validate", "olmValidateBinary"],
  ["image", "builtImage"],
];
/** A call of `finder`, not its definition. */
const callOf = (finder: string) => new RegExp(`(?<!function )\\b${finder}\\(`);
const relativeImport =
  /\bfrom\s+["'](\.{1,2}\/[^"']+\.ts)["']|\bimport\(\s*["'](\.{1,2}\/[^"']+\.ts)["']\s*\)/g;

/** Every file `roots` reach through relative imports, themselves included. */
export function reached(roots: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const queue = roots.map((r) => resolve(r));
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    // A match in a string (a code generator's template) names no file here.
    if (seen.has(file) || !existsSync(file)) continue;
    seen.add(file);
    for (const match of readFileSync(file, "utf8").matchAll(relativeImport))
      queue.push(resolve(dirname(file), (match[1] ?? match[2])!));
  }
  return seen;
}

/** The tools the files call a finder of, in tools.sh's order. */
export function needs(files: Iterable<string>): string[] {
  const texts = [...files].map((f) => readFileSync(f, "utf8"));
  return finders
    .filter(([, finder]) => texts.some((text) => callOf(finder).test(text)))
    .map(([tool]) => tool);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const roots = process.argv.slice(2).flatMap((pattern) => globSync(pattern));
  if (roots.length === 0) {
    console.error(`needs.ts: no file matches ${process.argv.slice(2).join(" ")}`);
    process.exit(2);
  }
  console.log(needs(reached(roots)).join(" "));
}
