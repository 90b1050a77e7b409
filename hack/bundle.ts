// Bundles the operator into one ES module (dist/operator.mjs, or the path given): what the image
// runs, with the Kargo observer beside it (kargo-observer.mjs). Tree-shaken, the generated
// Kubernetes client keeps only the APIs the operator calls; loaded whole, its sources alone held about 20 MiB of the process's heap. Measured by make
// bench, phase (p), 1,000 objects: the bundle's peak RSS is 127 / 148 / 123 MiB through a
// snapshot, an edit stream and a restart, against 142–147 / 159–167 / 141–147 MiB for the tsc
// output it replaces (docs/architecture.md). esbuild's JavaScript API, so it runs whether or not
// npm ran esbuild's install script (the image's build skips install scripts); Node 24 runs this
// file as it is, its types stripped.
import { build } from "esbuild";
import { readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const operator = process.argv[2] ?? `${root}dist/operator.mjs`;
// The Kargo observer is its own process in the same image (config/kargo-observer).
const bundles = [
  { entry: "cmd/operator.ts", outfile: operator },
  { entry: "cmd/kargo-observer.ts", outfile: join(dirname(operator), "kargo-observer.mjs") },
];
await Promise.all(
  bundles.map(({ entry, outfile }) =>
    build({
      entryPoints: [`${root}${entry}`],
      outfile,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node24",
      legalComments: "none",
      logLevel: "warning",
      // Bundled CommonJS dependencies require Node's built-ins: an ES module has no `require`.
      // The banner is raw text esbuild does not rename around, so its import takes a name no
      // bundled module uses (openpgp's ES build imports createRequire itself).
      banner: {
        js: "import { createRequire as __bundleCreateRequire } from 'node:module'; const require = __bundleCreateRequire(import.meta.url);",
      },
    }).then(() => asciiOnly(outfile)),
  ),
);

/**
 * Escapes what non-ASCII the bundle still holds. V8 keeps a script's source for as long as its
 * functions live, one byte a character only when every character fits in one: the operator's
 * 10 MB bundle held 73 characters past Latin-1, all in comments (esbuild escapes strings,
 * identifiers and regular expressions, never comments), so its source took 20 MiB of a
 * 51 MiB heap (make bench's (p) heap at 1,000 objects, BENCH_HEAP_SNAPSHOT_DIR). An escape of a
 * UTF-16 unit is the same character in a string, a regular expression or a template's value,
 * and plain text in a comment.
 */
async function asciiOnly(file: string): Promise<void> {
  const text = await readFile(file, "utf8");
  const escaped = text.replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  if (escaped !== text) await writeFile(file, escaped);
}
