// The inventory of a GitTarget's folder: what every file in it holds, by identity, without
// keeping any file's bytes. A worker keeps one per folder across commits and refreshes it from
// what changed between the commit it was read at and the one the worktree is at now, so a commit
// to a folder of 10,000 documents re-reads only the files that commit or a fetch changed.
import { posix } from "node:path";
import ignore, { type Ignore } from "ignore";
import { acceptFolder, unreadablePatchesOf, type Refusal } from "./acceptance.ts";
import { fileFacts, isYamlPath, type DocumentFacts, type FileFacts } from "./facts.ts";
import { groupOf, type DocumentLocation, type FileTree } from "../document/tree.ts";
import { chainNamespace } from "../document/identity.ts";
import { chainOf, includersOf } from "./kustomizechain.ts";

/** A worktree the inventory can follow from commit to commit. */
export interface VersionedTree extends Pick<FileTree, "list" | "read"> {
  /** The commit the worktree is at; undefined on an empty branch. */
  readonly headCommit: string | undefined;
  /**
   * Repository paths under `folder` that differ between two commits. A tree that cannot tell
   * leaves this out, and the inventory reads the whole folder again instead.
   */
  changedPaths?(from: string, to: string, folder: string): Promise<string[]>;
}

const ignoreFile = ".gittargetignore";

/** A document of the folder, with the file it is in. */
export type LocatedDocument = DocumentFacts & { path: string };

/**
 * What an inventory knows, as plain data: kept across a restart, so a folder is not read again.
 * Its version changes whenever FileFacts changes shape, so no facts of another shape are taken.
 */
export interface SavedInventory {
  /** 2: documents say whether they are SOPS documents (DocumentFacts.sealed); 3: files, whether Go refuses a raw character in them (FileFacts.unreadable). */
  version: 3;
  folder: string;
  commit: string;
  ignore: string;
  files: FileFacts[];
}

// Documents are found by group, kind and name first: the namespace they render in may come from
// a kustomization or an applier rather than from the document.
const nameKey = (group: string, kind: string, name: string) => `${group}/${kind}/${name}`;

export class FolderInventory {
  private readonly files = new Map<string, FileFacts>();
  /** Where each identity's documents are: more than one only in a folder the gate refuses, or in a patch. */
  private readonly byKey = new Map<string, DocumentLocation[]>();
  /**
   * Each group, kind and name's documents, located once when their file is recorded: a lookup
   * visits one per namespace the name is in (a hundred namespaces' ConfigMaps of one name, say),
   * and must not build each again.
   */
  private readonly byName = new Map<string, LocatedDocument[]>();
  private patches: Set<string> | null = null;
  private kustomizationPaths: string[] | null = null;
  private includers: Map<string, string[]> | null = null;
  /** Each file's kustomization namespace, as its chain sets it; kept until a kustomization changes. */
  private readonly overrides = new Map<string, string | undefined>();
  /** Files holding a document that writes no namespace: where an applier may have to fill one in. */
  private readonly unnamespaced = new Set<string>();
  /** Files whose own facts name a problem, and keys more than one document has: the gate's leads. */
  private readonly flagged = new Set<string>();
  private readonly crowded = new Set<string>();
  /** Files holding a SOPS document. */
  private readonly sealed = new Set<string>();
  private ignored: Ignore = ignore();
  private ignoreSource = "";
  /** The commit the inventory was read at; null until the first read. */
  private commit: string | undefined | null = null;
  private verdict: Refusal | undefined | null = null;
  /** When the inventory was brought to its commit. */
  observedAt: Date | undefined;
  /** Files parsed by the last refresh: what a benchmark or a test counts. */
  lastRefreshParsed = 0;

  constructor(readonly folder: string) {}

  private get prefix(): string {
    return this.folder === "." ? "" : `${this.folder}/`;
  }

  /**
   * Brings the inventory to the tree's current commit: nothing to do when it is already there,
   * only the changed files when the tree can name them, and the whole folder otherwise.
   */
  async refresh(tree: VersionedTree): Promise<void> {
    const head = tree.headCommit;
    if (this.commit !== null && this.commit === head) {
      this.lastRefreshParsed = 0;
      return;
    }
    const from = this.commit;
    // A commit the clone no longer has (a saved inventory, a clone made afresh) cannot be
    // compared with: the folder is read whole instead.
    const changed = from && head ? await changedBetween(tree, from, head, this.folder) : undefined;
    if (changed && !changed.includes(`${this.prefix}${ignoreFile}`)) {
      for (const path of changed) this.update(path, await tree.read(path));
      this.lastRefreshParsed = changed.length;
    } else {
      await this.readAll(tree);
    }
    this.commit = head;
    this.observedAt = new Date();
  }

  /** What the inventory knows, at the commit it was read at; undefined before it has read one. */
  save(): SavedInventory | undefined {
    if (!this.commit) return undefined;
    const files = [...this.files.values()];
    return { version: 3, folder: this.folder, commit: this.commit, ignore: this.ignoreSource, files };
  }

  /**
   * Takes what a saved inventory knew, at its commit, as if it had read that commit: the next
   * refresh reads only what changed since. Returns false, taking nothing, for another folder.
   */
  restore(saved: SavedInventory): boolean {
    if (saved.version !== 3 || saved.folder !== this.folder || !saved.commit) return false;
    try {
      this.clear(saved.ignore);
      for (const facts of saved.files) this.record(facts);
    } catch {
      // A file in a shape this version does not know: read the folder instead.
      this.clear("");
      return false;
    }
    this.commit = saved.commit;
    this.observedAt = new Date();
    return true;
  }

  /** Forgets what was read, so the next refresh reads the whole folder: after a reset or a failed write. */
  invalidate(): void {
    this.commit = null;
  }

  /** Records that the worktree is now at `commit`, which the inventory's own updates describe. */
  committed(commit: string | undefined): void {
    if (!commit) return;
    this.commit = commit;
    this.observedAt = new Date();
  }

  /**
   * Takes a file's new content (undefined when it was removed), as the writer just wrote it;
   * `facts` when the writer already knows them, so a new file is not parsed again.
   */
  update(path: string, content: string | undefined, facts?: FileFacts): void {
    const wasKustomization = this.files.get(path)?.role === "kustomization";
    this.forget(path);
    this.verdict = null;
    if (content !== undefined && this.tracks(path)) this.record(facts ?? fileFacts(path, content));
    // Only a kustomization changes which files are patches and which kustomizations exist; a
    // snapshot of 10,000 new files must not rebuild either 10,000 times.
    if (wasKustomization || this.files.get(path)?.role === "kustomization") this.kustomizationsChanged();
  }

  /**
   * Where the document with this identity key lives. A strategic-merge patch repeats the
   * identity of what it patches, and is build context, never the object's document.
   */
  locate(key: string): DocumentLocation | undefined {
    const patches = this.patchFiles();
    return this.byKey.get(key)?.find((l) => !patches.has(l.path));
  }

  /** Every managed document, for a sweep: patches are not among them. */
  documents(): LocatedDocument[] {
    const patches = this.patchFiles();
    return [...this.files.values()]
      .filter((f) => !patches.has(f.path))
      .flatMap((f) => f.documents.map((d) => ({ ...d, path: f.path })));
  }

  /** The documents of this group, kind and name, whatever namespace they write: patches are not among them. */
  named(group: string, kind: string, name: string): readonly LocatedDocument[] {
    const patches = this.patchFiles();
    const documents = this.byName.get(nameKey(group, kind, name)) ?? [];
    return patches.size === 0 ? documents : documents.filter((d) => !patches.has(d.path));
  }

  /**
   * The documents that write no namespace and get none from a kustomization: an applier fills it
   * in, or the kind is cluster-scoped. Only the files holding such a document are visited.
   */
  namespaceless(): LocatedDocument[] {
    const patches = this.patchFiles();
    return [...this.unnamespaced]
      .filter((path) => !patches.has(path) && this.namespaceOverride(path) === undefined)
      .flatMap((path) =>
        (this.files.get(path)?.documents ?? [])
          .filter((d) => d.namespace === "")
          .map((d) => ({ ...d, path })),
      );
  }

  /**
   * The `namespace:` the kustomizations building the file at `path` set on it, if any; with
   * `listedBy`, for a new file that kustomization is about to list.
   */
  namespaceOverride(path: string, listedBy?: string): string | undefined {
    if (this.kustomizations().length === 0) return undefined;
    const namespaceOf = (k: string) => this.files.get(k)?.kustomization?.namespace;
    if (listedBy !== undefined) return chainNamespace([listedBy, ...this.chainOf(listedBy)], namespaceOf);
    if (!this.overrides.has(path)) this.overrides.set(path, chainNamespace(this.chainOf(path), namespaceOf));
    return this.overrides.get(path);
  }

  /** The facts of one file, if the folder holds it. */
  fileAt(path: string): FileFacts | undefined {
    return this.files.get(path);
  }

  /** The content digest of the document at `location`, as last read or written. */
  digestAt(location: DocumentLocation): string | undefined {
    return this.documentAt(location)?.digest;
  }

  /** The facts of the document at `location`. */
  documentAt(location: DocumentLocation): DocumentFacts | undefined {
    return this.files.get(location.path)?.documents.find((d) => d.index === location.index);
  }

  /** Whether a file exists in the folder, as far as the inventory knows. */
  has(path: string): boolean {
    return this.files.has(path);
  }

  /** The files the inventory tracks, for placement to see which paths are taken: a view, not a copy. */
  paths(): Pick<ReadonlySet<string>, "has"> {
    return { has: (path) => this.files.has(path) };
  }

  /** The folder's kustomization files; kept until one of them changes, as every new object asks. */
  kustomizations(): string[] {
    this.kustomizationPaths ??= [...this.files.values()]
      .filter((f) => f.role === "kustomization")
      .map((f) => f.path);
    return this.kustomizationPaths;
  }

  /** The kustomizations that build the file at `path`, innermost first. */
  chainOf(path: string): string[] {
    this.includers ??= includersOf(this.files);
    return chainOf(path, this.includers);
  }

  /**
   * The acceptance gate's verdict on the folder as it is now; cached until a file changes. The
   * whole folder is judged only when the indexes show a problem: a write to an accepted folder
   * of 1,000 files re-judged all of them, 2.5 ms a commit.
   */
  accept(): Refusal | undefined {
    if (this.verdict === null)
      this.verdict = this.mayRefuse() ? acceptFolder(this.files.values()) : undefined;
    return this.verdict;
  }

  // The gate refuses a folder for a file's own findings, a targeted patch it cannot read, or
  // one identity in two documents that are not patches: each of them leaves a lead here.
  private mayRefuse(): boolean {
    if (this.flagged.size > 0) return true;
    const patches = this.patchFiles();
    for (const key of this.crowded) {
      if ((this.byKey.get(key) ?? []).filter((l) => !patches.has(l.path)).length > 1) return true;
    }
    const read = (path: string) => this.files.has(path);
    return this.kustomizations().some((path) => unreadablePatchesOf(this.files.get(path)!, read).length > 0);
  }

  get documentCount(): number {
    return this.byKey.size;
  }

  /** How many SOPS documents the folder holds. */
  get sealedCount(): number {
    let count = 0;
    for (const path of this.sealed) count += this.files.get(path)!.documents.filter((d) => d.sealed).length;
    return count;
  }

  private patchFiles(): Set<string> {
    this.patches ??= new Set(
      [...this.files.values()].flatMap((f) =>
        (f.kustomization?.patchPaths ?? []).map((p) => posix.normalize(posix.join(posix.dirname(f.path), p))),
      ),
    );
    return this.patches;
  }

  get readAt(): string | undefined {
    return this.commit ?? undefined;
  }

  private clear(ignoreSource: string): void {
    this.files.clear();
    this.byKey.clear();
    this.byName.clear();
    this.unnamespaced.clear();
    this.flagged.clear();
    this.crowded.clear();
    this.sealed.clear();
    this.verdict = null;
    this.kustomizationsChanged();
    this.ignoreSource = ignoreSource;
    this.ignored = ignore().add(ignoreSource);
  }

  private async readAll(tree: VersionedTree): Promise<void> {
    this.clear((await tree.read(`${this.prefix}${ignoreFile}`)) ?? "");
    const paths = (await tree.list(this.folder === "." ? "" : this.folder)).sort();
    let parsed = 0;
    for (const path of paths) {
      if (!this.tracks(path)) continue;
      this.record(fileFacts(path, (await tree.read(path)) ?? ""));
      parsed++;
    }
    this.lastRefreshParsed = parsed;
  }

  private tracks(path: string): boolean {
    if (!path.startsWith(this.prefix) || !isYamlPath(path)) return false;
    return !this.ignored.ignores(path.slice(this.prefix.length));
  }

  private kustomizationsChanged(): void {
    this.kustomizationPaths = null;
    this.patches = null;
    this.includers = null;
    this.overrides.clear();
  }

  private record(facts: FileFacts): void {
    this.files.set(facts.path, facts);
    if (facts.documents.some((d) => d.namespace === "")) this.unnamespaced.add(facts.path);
    if (facts.findings.length > 0) this.flagged.add(facts.path);
    if (facts.documents.some((d) => d.sealed)) this.sealed.add(facts.path);
    for (const doc of facts.documents) {
      if (add(this.byKey, doc.key, { path: facts.path, index: doc.index }) > 1) this.crowded.add(doc.key);
      add(this.byName, nameKey(groupOf(doc.apiVersion), doc.kind, doc.name), { ...doc, path: facts.path });
    }
  }

  private forget(path: string): void {
    const facts = this.files.get(path);
    if (!facts) return;
    this.files.delete(path);
    this.unnamespaced.delete(path);
    this.flagged.delete(path);
    this.sealed.delete(path);
    for (const doc of facts.documents) {
      if (drop(this.byKey, doc.key, path) <= 1) this.crowded.delete(doc.key);
      drop(this.byName, nameKey(groupOf(doc.apiVersion), doc.kind, doc.name), path);
    }
  }
}

/** Adds a location to a key's; returns how many the key has now. */
function add<T extends DocumentLocation>(index: Map<string, T[]>, key: string, location: T): number {
  const locations = index.get(key) ?? [];
  // Path order, so the document edited is the same whichever file was read first: placed where
  // it goes, rather than all of a name's entries sorted again (a hundred, in a hundred namespaces).
  const before = (l: DocumentLocation) =>
    l.path > location.path || (l.path === location.path && l.index > location.index);
  let at = locations.length;
  while (at > 0 && before(locations[at - 1]!)) at--;
  locations.splice(at, 0, location);
  index.set(key, locations);
  return locations.length;
}

/** Drops a file's locations from a key's; returns how many the key has left. */
function drop<T extends DocumentLocation>(index: Map<string, T[]>, key: string, path: string): number {
  const locations = index.get(key)?.filter((l) => l.path !== path) ?? [];
  if (locations.length > 0) index.set(key, locations);
  else index.delete(key);
  return locations.length;
}

async function changedBetween(tree: VersionedTree, from: string, to: string, folder: string) {
  try {
    return await tree.changedPaths?.(from, to, folder);
  } catch {
    return undefined;
  }
}
