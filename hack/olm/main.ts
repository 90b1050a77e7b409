// make bundle: writes the OLM bundle (bundle/manifests, bundle/metadata/annotations.yaml and
// bundle.Dockerfile) from config/ and the Helm chart (hack/olm/files.ts), replacing what was
// there. Its output is committed; make verify-generated runs it again and fails on any difference.
//   node --import ./hack/register.ts hack/olm/main.ts [--image=<ref>]   write the bundle (the image defaults to the chart's)
//   node --import ./hack/register.ts hack/olm/main.ts --print-image     print the chart's image, write nothing
//   node --import ./hack/register.ts hack/olm/main.ts --print-version   print the bundle's version (the chart's appVersion)
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { readInputs, renderBundle } from "./files.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));
const args = process.argv.slice(2);
const image = args.find((a) => a.startsWith("--image="))?.slice("--image=".length) || undefined;

const inputs = await readInputs(root, image);
if (typeof inputs === "string") fail(inputs);
else if (args.includes("--print-image")) process.stdout.write(`${inputs.image}\n`);
else if (args.includes("--print-version")) process.stdout.write(`${inputs.chart.appVersion}\n`);
else {
  const files = renderBundle(inputs);
  if (typeof files === "string") fail(files);
  else {
    await rm(join(root, "bundle"), { recursive: true, force: true });
    for (const [path, text] of files) {
      await mkdir(dirname(join(root, path)), { recursive: true });
      await writeFile(join(root, path), text);
    }
    process.stdout.write(`wrote the bundle (${files.size} files) for ${inputs.image}\n`);
  }
}

function fail(reason: string): void {
  process.stderr.write(`make bundle: ${reason}\n`);
  process.exitCode = 1;
}
