// The render side of a folder's verdict: a folder whose root is a kustomization is judged as
// `kustomize build` renders it, and one that kustomize cannot build is refused with kustomize's
// own message, as the acceptance gate refuses content it cannot manage.
import { posix } from "node:path";
import { refusalOf as refusalOfProblems, type Refusal, type FolderInventory } from "../manifest/index.ts";
import type { FolderRenders } from "./renders.ts";

export interface RenderVerdict {
  /** The render failed: the folder is refused, and nothing is written. */
  refusal?: Refusal;
  /** The rendered objects by identity key; undefined when the folder was not rendered. */
  objects?: ReadonlyMap<string, unknown>;
}

/** The kustomization at the folder's root, which is what an applier builds; undefined when none. */
export function rootKustomization(inventory: FolderInventory): string | undefined {
  return inventory.kustomizations().find((path) => posix.dirname(path) === inventory.folder);
}

/**
 * The folder's render. `at` "commit" builds it at the inventory's commit when it is not known yet;
 * "known" takes only a render already built there, so a refused folder stays refused at the
 * commit it was refused at and an accepted one costs a live write nothing; "worktree" builds the
 * worktree as it is, with a write's edits in progress, and keeps nothing.
 */
export async function renderVerdict(
  renders: FolderRenders | undefined,
  worktree: string | undefined,
  inventory: FolderInventory,
  at: "commit" | "known" | "worktree",
): Promise<RenderVerdict> {
  const root = rootKustomization(inventory);
  const commit = inventory.readAt;
  if (!renders || worktree === undefined || !root || !commit) return {};
  const result = await (at === "known"
    ? renders.known(inventory.folder, commit)
    : renders.render(worktree, inventory.folder, at === "commit" ? commit : undefined));
  if (!result) return {};
  if (result.ok) return { objects: result.objects };
  return {
    refusal: result.missing
      ? kustomizeMissing(root, inventory.folder, result.message)
      : buildFailure(root, inventory.folder, result.message),
  };
}

/** The render's verdict alone, at the inventory's commit, with a worker's renders in its clone: a folder read again. */
export async function renderRefusal(
  worker: { materialize: { renders?: FolderRenders }; clone: { readonly dir?: string } },
  inventory: FolderInventory,
): Promise<Refusal | undefined> {
  return (await renderVerdict(worker.materialize.renders, worker.clone.dir, inventory, "commit")).refusal;
}

/**
 * The refusal of a kustomize folder while the operator's own kustomize cannot be run: nothing
 * in the folder is at fault, so it says what to install or set, and never to fix the folder.
 */
function kustomizeMissing(root: string, folder: string, said: string): Refusal {
  return refusalOfProblems([
    {
      path: root,
      feature: "a kustomize folder, with no kustomize to render it",
      message: `the operator cannot render ${folder} to judge it: ${said}`,
      summary: `no kustomize to render ${folder}: ${said}`,
    },
  ]);
}

/** The refusal of a folder kustomize cannot build, carrying kustomize's message. */
function buildFailure(root: string, folder: string, said: string): Refusal {
  const fix = "fix the folder until `kustomize build` succeeds";
  return refusalOfProblems([
    {
      path: root,
      feature: "a kustomize build that fails",
      message:
        `kustomize build ${folder} fails, so the operator cannot tell what the folder renders: ${said}; ` +
        `${fix} to let the operator write it`,
      summary: `kustomize build ${folder} fails: ${said}; ${fix}`,
    },
  ]);
}
