// The files the first write to a GitTarget's folder stages beside the manifests. Existing files
// are kept: a human may have written their own README.

const readme = `# Managed by GitOps Reverser

The manifests in this folder are written by GitOps Reverser from the live state of a Kubernetes
cluster. Each commit's author names who made the change, when attribution is on.

Edits made here reach the cluster only through the GitOps tool that applies this folder; an
edit to the same object in the cluster wins over one made here.
`;

const gittargetignore = `# Paths in this folder that GitOps Reverser never reads or writes, one glob per line.
`;

/** Repository path to content, for a target folder ("." is the repository root). */
export function bootstrapFiles(folder: string): [string, string][] {
  const prefix = folder === "." ? "" : `${folder}/`;
  return [
    [`${prefix}README.md`, readme],
    [`${prefix}.gittargetignore`, gittargetignore],
  ];
}
