// The files the first write to a GitTarget's folder stages beside the manifests. Existing files
// are kept: a human may have written their own README, or their own .sops.yaml.
import { secretEncryptedRegex } from "../sops/encrypt.ts";

const readme = `# Managed by GitOps Reverser

The manifests in this folder are written by GitOps Reverser from the live state of a Kubernetes
cluster. Each commit's author names who made the change, when attribution is on.

Edits made here reach the cluster only through the GitOps tool that applies this folder; an
edit to the same object in the cluster wins over one made here.
`;

const gittargetignore = `# Paths in this folder that GitOps Reverser never reads or writes, one glob per line.
`;

const sopsConfigHeader = "# Written by GitOps Reverser";

/**
 * Whether a bootstrap file already there is replaced: only a .sops.yaml the operator wrote,
 * whose recipients changed since. Anything a person wrote is kept. Only that file is read.
 */
export async function replacesBootstrap(
  path: string,
  content: string,
  read: () => Promise<string | undefined>,
): Promise<boolean> {
  if (!(path.endsWith("/.sops.yaml") || path === ".sops.yaml")) return false;
  const existing = (await read()) ?? "";
  return existing.startsWith(sopsConfigHeader) && existing !== content;
}

/**
 * sops reads the .sops.yaml nearest the directory it runs in: run in this folder, `sops edit` of
 * a new file encrypts to the recipients the operator does, and keeps metadata readable.
 */
function sopsConfig(recipients: readonly string[]): string {
  return `${sopsConfigHeader}: its sensitive documents here are SOPS documents encrypted to these
# age recipients. Run sops in this folder and a file you encrypt gets the same recipients.
creation_rules:
  - path_regex: \\.sops\\.yaml$
    encrypted_regex: ${secretEncryptedRegex}
    age: ${recipients.join(",")}
`;
}

/** Repository path to content, for a target folder ("." is the repository root). */
export function bootstrapFiles(
  folder: string,
  encryption?: { recipients: readonly string[] },
): [string, string][] {
  const prefix = folder === "." ? "" : `${folder}/`;
  return [
    [`${prefix}README.md`, readme],
    [`${prefix}.gittargetignore`, gittargetignore],
    ...(encryption ? [[`${prefix}.sops.yaml`, sopsConfig(encryption.recipients)] as [string, string]] : []),
  ];
}
