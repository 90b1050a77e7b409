// Bundles the operator into one ES module (dist/operator.mjs, or the path given): what the image
// runs, with the Kargo observer beside it (kargo-observer.mjs). Tree-shaken, the generated
// Kubernetes client keeps only the APIs the operator calls; loaded whole, its sources alone held about 20 MiB of the process's heap. Measured by make
// bench, phase (p), 1,000 objects: the bundle's peak RSS is 127 / 148 / 123 MiB through a
// snapshot, an edit stream and a restart, against 142–147 / 159–167 / 141–147 MiB for the tsc
// output it replaces (docs/architecture.md). esbuild's JavaScript API, so it runs whether or not
// npm ran esbuild's install script (the image's build skips install scripts); Node 24 runs this
// file as it is, its types stripped.
import { build } from "esbuild";
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
    }),
  ),
);
