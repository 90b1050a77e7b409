// Runs this repository's TypeScript in Node (`node --import ./hack/register.ts file.ts`): what
// `make test`, the tools under hack/ and the operator processes the tests start use. Node 24 strips
// types itself but cannot run parameter properties, so a file of erasable syntax is stripped where
// it stands and any other is transformed by esbuild with tsconfig.json's options, as hack/bundle.ts
// builds the image; the output is kept on disk by the content's hash, so a process that imports
// the operator reads every file back instead of transforming it again. V8 keeps what it compiled
// beside it (Node's compile cache), and source maps are read for our files only: the ones
// node_modules ships (the Kubernetes client's among them) were parsed at every start for stack
// traces nobody reads. Importing test/support/operator.ts and controlplane.ts costs 0.76 CPU-s a
// process (median of 8), against 1.23 with every source map and no compile cache, and 1.7–2.2
// with tsx; `make test` starts some 250 such processes. Stack traces point at the .ts lines
// (stripped files keep them; transformed ones carry inline source maps). Node runs this file as it
// is, its types stripped.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import {
  createRequire,
  enableCompileCache,
  registerHooks,
  setSourceMapsSupport,
  stripTypeScriptTypes,
} from "node:module";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type * as Esbuild from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
// esbuild is loaded only when a file is not kept yet: most processes never need it.
const esbuild = () => createRequire(import.meta.url)("esbuild") as typeof Esbuild;
const esbuildVersion = JSON.parse(
  readFileSync(join(root, "node_modules", "esbuild", "package.json"), "utf8"),
) as { version: string };
const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "gitops-reverser", "ts");
mkdirSync(cache, { recursive: true });
const tsconfigRaw = readFileSync(join(root, "tsconfig.json"), "utf8");
/** What changes every output: the transformer and the options it is given. */
const salt = createHash("sha256")
  .update(esbuildVersion.version)
  .update(tsconfigRaw)
  .update("node24 esm inline")
  .digest();

setSourceMapsSupport(true, { nodeModules: false, generatedCode: false });
// Keyed by each module's source, so a changed file is compiled afresh; safe for processes side by side.
enableCompileCache(join(cache, "..", "v8"));

/** The JavaScript of one TypeScript file, from the cache or transformed now and kept. */
function javascriptOf(path: string): string {
  const source = readFileSync(path, "utf8");
  const key = createHash("sha256").update(salt).update(path).update("\0").update(source).digest("hex");
  const kept = join(cache, `${key}.js`);
  try {
    return readFileSync(kept, "utf8");
  } catch {
    // Not kept yet: transformed below.
  }
  const code = transformed(path, source);
  // Written whole, then renamed: a process beside this one reads it whole or not at all.
  const partial = `${kept}.${process.pid}.partial`;
  writeFileSync(partial, code);
  renameSync(partial, kept);
  return code;
}

/**
 * A file of erasable syntax only has its types blanked where they stand, so its lines and columns
 * are the source's and it needs no source map; any other (a parameter property) is transformed by
 * esbuild with tsconfig.json's options, as the bundle is, with an inline source map.
 */
function transformed(path: string, source: string): string {
  try {
    return withoutWarnings(() => stripTypeScriptTypes(source, { mode: "strip" }));
  } catch {
    return esbuild().transformSync(source, {
      loader: "ts",
      format: "esm",
      target: "node24",
      sourcefile: path,
      sourcemap: "inline",
      sourcesContent: false,
      tsconfigRaw,
    }).code;
  }
}

/**
 * Node calls stripTypeScriptTypes experimental on its first use in a process; that warning would
 * reach the stderr of whichever test process transformed a file first, which tests read.
 */
function withoutWarnings<T>(call: () => T): T {
  const emit = Object.getOwnPropertyDescriptor(process, "emitWarning");
  process.emitWarning = () => undefined;
  try {
    return call();
  } finally {
    if (emit) Object.defineProperty(process, "emitWarning", emit);
  }
}

registerHooks({
  load(url, context, next) {
    if (!url.startsWith("file:") || !url.endsWith(".ts") || url.includes("/node_modules/"))
      return next(url, context);
    return { format: "module", source: javascriptOf(fileURLToPath(url)), shortCircuit: true };
  },
});
