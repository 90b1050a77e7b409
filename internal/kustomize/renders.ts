// The renders of a branch worker's folders, one per folder at the commit it was built at. A
// folder is rendered only to judge it (a snapshot's measurement, a read-only base document
// edited, a refused folder read again), and at most once per commit: a live write never pays
// for a second pass over the folder.
import type { KubernetesObject } from "@kubernetes/client-node";
import { join } from "node:path";
import { identityOfObject } from "../manifest/index.ts";
import { kustomizeBuild, type BuildResult, type KustomizeSettings } from "./build.ts";

/** A folder as kustomize renders it: its objects by identity key, or why it cannot be rendered. */
export type Render =
  { ok: true; objects: ReadonlyMap<string, unknown> } | { ok: false; message: string; missing?: true };

export type Builder = (dir: string) => Promise<BuildResult>;

export class FolderRenders {
  private readonly latest = new Map<string, { commit: string; render: Promise<Render> }>();
  private readonly build: Builder;

  constructor(settings: KustomizeSettings | Builder) {
    this.build = typeof settings === "function" ? settings : (dir) => kustomizeBuild(settings, dir);
  }

  /**
   * The render of `folder` in the worktree at `worktree`, at `commit`: built once per commit and
   * kept until the folder's next one. Without a commit (the worktree holds uncommitted edits),
   * it is built and not kept.
   */
  render(worktree: string, folder: string, commit: string | undefined): Promise<Render> {
    const known = commit === undefined ? undefined : this.known(folder, commit);
    if (known) return known;
    const render = this.build(join(worktree, folder)).then(byIdentity);
    if (commit !== undefined) this.latest.set(folder, { commit, render });
    return render;
  }

  /** The render already built for `folder` at `commit`, building nothing. */
  known(folder: string, commit: string): Promise<Render> | undefined {
    const latest = this.latest.get(folder);
    return latest?.commit === commit ? latest.render : undefined;
  }
}

function byIdentity(result: BuildResult): Render {
  if (!result.ok) return result;
  const objects = new Map<string, unknown>();
  for (const object of result.objects) objects.set(identityOfObject(object as KubernetesObject), object);
  return { ok: true, objects };
}
