// The manifest-aware writer: applies one object's upsert or delete to a GitTarget's folder the
// way a careful person would. An existing document is patched in place wherever it lives, a
// value a kustomize override produced is written back to that override, a token an applier
// substitutes is kept, and a new object is placed by the ladder. Only the files it touches are
// read; the inventory says where everything else is.
import { isDeepStrictEqual } from "node:util";
import type { KubernetesObject } from "@kubernetes/client-node";
import { keepWrittenDefaults, type Defaulted } from "../sanitize/owned.ts";
import { contentDigest } from "../sanitize/digest.ts";
import { toStableYaml } from "../sanitize/stableyaml.ts";
import { codePointName, uncarriedField } from "../sanitize/yamlstrings.ts";
import { type ResourceIdentity, identityKeyOf } from "../types/identity.ts";
import {
  appendDocument,
  parseManifestFile,
  removeDocument,
  replaceDocumentChecked,
} from "./yamledit/edit.ts";
import { editThrough } from "./overrides/editthrough.ts";
import { fileFacts, renderedFacts, type FileFacts } from "./inventory/facts.ts";
import { type DocumentLocation, type FileTree } from "./document/tree.ts";
import { keepWrittenNamespace, nothingFollowed, type FollowedObjects } from "./document/identity.ts";
import type { FolderInventory } from "./inventory/inventory.ts";
import { placeNew, type PlacementPolicy, type PlacementSource } from "./placement/ladder.ts";
import { isSensitive } from "./placement/builtin.ts";
import { keepTokens, measureRender, type Divergence } from "./document/rendermeasure.ts";
import { addResourceEntry, removeResourceEntry } from "./resources.ts";
import { readContext, rendersLive, type ContextDocument } from "./context.ts";
import { findDocument } from "./lookup.ts";
import { newDocument } from "./newdocument.ts";
import { proofOf, proves } from "./document/sealed.ts";
import { EncryptionError, encryptManifest } from "../sops/encrypt.ts";

export interface WriterSettings {
  targetPath: string;
  placement?: PlacementPolicy;
  /** resource.group names treated as sensitive besides core Secrets. */
  additionalSensitive: readonly string[];
  /** spec.encryption: the age recipients sensitive documents are encrypted to; none, they are refused. */
  encryption?: { recipients: readonly string[] };
  /** What the target follows, which says which object a namespace-less document describes. */
  followed?: FollowedObjects;
  /**
   * The folder as `kustomize build` renders it, by identity key, built when first asked; undefined
   * when the folder is not rendered. A context document is judged against it.
   */
  rendered?: () => Promise<ReadonlyMap<string, unknown> | undefined>;
  /**
   * An applier builds the folder with kustomize whether or not it holds a kustomization (Flux
   * makes one when there is none): its values are judged against what kustomize can carry.
   */
  kustomizeBuilt?: boolean;
}

/** What one upsert did: where, whether it created the document, and which rung placed it. */
export type UpsertOutcome =
  | {
      path: string;
      created: boolean;
      changed: boolean;
      placedBy?: PlacementSource;
      /** Part of the change had nowhere to land: why, as a refusal does. */
      unwritten?: { refused: string; reason: string };
      /** A sensitive document: encrypted again, or proved unchanged with no encryption at all. */
      encryption?: "encrypted" | "unchanged";
      /** Its file held a character Go's YAML readers refuse raw, and was rewritten whole: which. */
      healed?: string;
    }
  | { refused: string; reason: string; placedBy?: PlacementSource };

/** One file the writer puts: its text, its facts when known, and what a heal of it rewrote. */
interface FileEdit {
  path: string;
  text: string;
  facts?: FileFacts;
  healed?: string;
}

/**
 * A file that holds a character Go's YAML readers refuse raw, rendered again whole: `desired`
 * at `index`, every other document as the yaml library read it, each escaped as this writer
 * writes (yamlstrings.ts), so kubectl, kustomize and Flux read it again. Its comments go with
 * the heal; empty documents are dropped.
 */
function healedFile(parsed: ReturnType<typeof parseManifestFile>, index: number, desired: unknown): string {
  return parsed
    .map((doc, i) => (i === index ? desired : (doc.toJS() as unknown)))
    .filter((value) => value !== null && value !== undefined)
    .map((value) => toStableYaml(value as KubernetesObject))
    .join("---\n");
}

const encryptionUnavailable =
  "a sensitive resource is written only encrypted, and the GitTarget sets no spec.encryption: " +
  "add spec.encryption.age.recipients to write it as a SOPS document";

export class FolderWriter {
  /** Every path this writer wrote or removed, for the commit. */
  readonly touched = new Set<string>();
  /** What the folder's kustomizations read from outside it; read once, when first needed. */
  private context: Promise<Map<string, ContextDocument>> | undefined;

  constructor(
    private readonly tree: FileTree,
    private readonly inventory: FolderInventory,
    private readonly settings: WriterSettings,
  ) {}

  /**
   * `object` holds what clients set; `defaulted`, what the API server filled in besides. A
   * defaulted field is written only into a document that already sets it, so a folder that
   * agrees with the cluster stays as it is, and a new document carries no defaults. `digest`,
   * when given, is the content digest of `object`, which the watch took already.
   */
  async upsert(
    identity: ResourceIdentity,
    object: KubernetesObject,
    defaulted?: Defaulted,
    digest?: string,
  ): Promise<UpsertOutcome> {
    const sensitive = isSensitive(identity, this.settings.additionalSensitive);
    if (sensitive && !this.settings.encryption) {
      return { refused: encryptionUnavailable, reason: "encryption_unavailable" };
    }
    const lookup = this.find(identity);
    if (lookup && "ambiguous" in lookup) {
      const { path, index } = lookup.ambiguous;
      return {
        refused: `${path} document ${index} has no namespace and could describe ${identity.kind} ${identity.name} in more than one namespace`,
        reason: "ambiguous_namespace",
      };
    }
    const location = lookup?.found;
    if (sensitive) return this.sealOrRefuse(identity, object, location, defaulted, digest);
    const uncarried = this.uncarried(identity, object);
    if (uncarried) return uncarried;
    if (!location) {
      this.context ??= readContext(this.tree, this.inventory);
      const outside = (await this.context).get(identityKeyOf(identity));
      return outside
        ? this.throughOverrides(identity, object, defaulted, outside)
        : this.create(identity, object);
    }

    const edits = await this.editsOf(location, object, defaulted, digest);
    for (const edit of edits) await this.put(edit.path, edit.text, edit.facts);
    const healed = edits.find((e) => e.healed)?.healed;
    return {
      path: location.path,
      created: false,
      changed: edits.length > 0,
      ...(healed ? { healed: `${location.path} held ${healed}` } : {}),
    };
  }

  /**
   * A refusal of an object holding a value kustomize would not build as it is, in a folder
   * kustomize builds (an applier's, or one holding a kustomization): written, the value would
   * fail the whole folder's build or be applied as another value. Skipped fail-safe, the rest of
   * the folder flows, and the object is written once its value is one kustomize carries. A
   * Secret is never judged: it is written as a SOPS document, which is decrypted, not re-emitted.
   */
  private uncarried(identity: ResourceIdentity, object: KubernetesObject): UpsertOutcome | undefined {
    if (!this.settings.kustomizeBuilt && this.inventory.kustomizations().length === 0) return undefined;
    const found = uncarriedField(object);
    if (!found) return undefined;
    const effect =
      found.effect === "refused"
        ? "fails the folder's kustomize build (it prints the character raw, and refuses to read it back)"
        : "is applied as another value (kustomize prints it raw, and it is read back as a space)";
    return {
      refused: `${describe(identity)}: ${found.field} holds ${codePointName(found.codePoint)}, which ${effect}; the object is not written until the value holds no such character`,
      reason: "value_not_representable",
    };
  }

  /**
   * The file writes that make an existing document the live object: an edit through the
   * kustomizations above it, then the document itself. None when the folder already agrees.
   */
  private async editsOf(
    location: DocumentLocation,
    object: KubernetesObject,
    defaulted: Defaulted | undefined,
    digest: string | undefined,
  ): Promise<FileEdit[]> {
    const chain = this.inventory.chainOf(location.path);
    // A document that already is the live object, with nothing above it to edit through, is
    // not read at all: what a restart's snapshot of a folder that agrees costs.
    const unreadable = this.inventory.fileAt(location.path)?.unreadable;
    if (
      !unreadable &&
      chain.length === 0 &&
      this.inventory.digestAt(location) === (digest ?? contentDigest(object))
    ) {
      return [];
    }
    const source = (await this.tree.read(location.path)) ?? "";
    const parsed = parseManifestFile(source);
    const current = parsed[location.index]?.toJS() as unknown;
    let desired = keepWrittenNamespace(
      current,
      keepTokens(current, keepWrittenDefaults(current, object, defaulted)),
    );
    const edits: FileEdit[] = [];
    if (chain.length > 0) {
      const links = await Promise.all(
        chain.map(async (path) => ({ path, source: (await this.tree.read(path)) ?? "" })),
      );
      const split = editThrough(current, desired, links);
      desired = split.desired;
      for (const edit of split.kustomizations) edits.push({ path: edit.path, text: edit.source });
    }
    if (unreadable) {
      const text = healedFile(parsed, location.index, desired);
      edits.push({ path: location.path, text, facts: fileFacts(location.path, text), healed: unreadable });
      return edits;
    }
    const next = replaceDocumentChecked(source, location.index, desired, parsed);
    if (next.text !== source)
      edits.push({
        path: location.path,
        text: next.text,
        facts: fileFacts(location.path, next.text, next.documents),
      });
    return edits;
  }

  /** The document that describes a live object, by its effective identity. */
  find(identity: ResourceIdentity) {
    return findDocument(this.inventory, identity, this.settings.followed ?? nothingFollowed);
  }

  /** Removes a document, its file once empty, and a kustomization's entry for that file. */
  async remove(location: DocumentLocation | undefined): Promise<string | undefined> {
    if (!location) return undefined;
    const next = removeDocument((await this.tree.read(location.path)) ?? "", location.index);
    await this.put(location.path, next);
    if (next === undefined) {
      for (const kustomization of this.inventory.chainOf(location.path).slice(0, 1)) {
        const source = (await this.tree.read(kustomization)) ?? "";
        const edited = removeResourceEntry(source, relativeEntry(kustomization, location.path));
        if (edited !== source) await this.put(kustomization, edited);
      }
    }
    return location.path;
  }

  /**
   * Where the folder's rendered token values disagree with the live object: only documents the
   * inventory knows to hold a token are read.
   */
  async measure(identity: ResourceIdentity, live: KubernetesObject): Promise<Divergence[]> {
    const lookup = this.find(identity);
    const location = lookup && "found" in lookup ? lookup.found : undefined;
    const facts = location && this.inventory.fileAt(location.path);
    if (!location || !facts?.documents.some((d) => d.index === location.index && d.hasTokens)) return [];
    const source = (await this.tree.read(location.path)) ?? "";
    return measureRender(parseManifestFile(source)[location.index]?.toJS(), live);
  }

  private async sealOrRefuse(
    identity: ResourceIdentity,
    object: KubernetesObject,
    location: DocumentLocation | undefined,
    defaulted: Defaulted | undefined,
    digest: string | undefined,
  ): Promise<UpsertOutcome> {
    try {
      return await this.seal(identity, object, location, defaulted, digest);
    } catch (err) {
      if (!(err instanceof EncryptionError)) throw err;
      // Nothing was written: the file is put only once its encrypted text exists.
      return {
        refused: `encrypting ${describe(identity)} failed: ${err.message}`,
        reason: "encryption_failed",
      };
    }
  }

  /**
   * A sensitive object, written only as a SOPS document of a file of its own: encrypted again
   * whole when live differs from what the operator last encrypted into it, left alone when it
   * proves the same. A plaintext document of it is a person's to fix, never rewritten: a live
   * object that differs from it is refused (an edit with nowhere to land), one that agrees is
   * unchanged, so a refusal always names an edit, whether a watch event or a snapshot found it.
   */
  private async seal(
    identity: ResourceIdentity,
    object: KubernetesObject,
    location: DocumentLocation | undefined,
    defaulted: Defaulted | undefined,
    digest: string | undefined,
  ): Promise<UpsertOutcome> {
    const { recipients } = this.settings.encryption!;
    if (!location) {
      this.context ??= readContext(this.tree, this.inventory);
      const outside = (await this.context).get(identityKeyOf(identity));
      if (outside)
        return sealedRefusal(
          `${describe(identity)} lives in ${outside.path}, outside ${this.settings.targetPath}, which the operator never writes`,
        );
      return this.create(identity, object, true);
    }
    const { path } = location;
    const facts = this.inventory.documentAt(location);
    const sealed = facts?.sealed;
    if (!sealed) {
      if ((await this.editsOf(location, object, defaulted, digest)).length === 0)
        return { path, created: false, changed: false };
      return {
        refused: `${path} holds ${describe(identity)} in plaintext; the operator writes a sensitive resource only encrypted and never rewrites this one: encrypt the file with sops, or remove it`,
        reason: "plaintext_sensitive",
      };
    }
    if ((this.inventory.fileAt(path)?.documents.length ?? 0) > 1)
      return sealedRefusal(`${path} holds ${describe(identity)} beside other documents`);
    // The namespace as the document writes it, which the inventory knows: nothing is read to prove it unchanged.
    const written = { metadata: facts.namespace ? { namespace: facts.namespace } : {} };
    const desired = keepWrittenNamespace(written, structuredClone(object)) as KubernetesObject;
    if (proves(sealed.proof, desired, recipients))
      return { path, created: false, changed: false, encryption: "unchanged" };
    const text = await encryptManifest(desired, { recipients });
    await this.put(path, text, sealedFacts(path, text, desired, recipients));
    return { path, created: false, changed: true, encryption: "encrypted" };
  }

  /**
   * A live change to a document the folder only reads (an overlay's base): written back through
   * the folder's images:/replicas: overrides when they can express all of it, refused otherwise.
   */
  private async throughOverrides(
    identity: ResourceIdentity,
    object: KubernetesObject,
    defaulted: Defaulted | undefined,
    outside: ContextDocument,
  ): Promise<UpsertOutcome> {
    const current = parseManifestFile((await this.tree.read(outside.path)) ?? "")[
      outside.index
    ]?.toJS() as unknown;
    const links = await Promise.all(
      outside.including.map(async (path) => ({ path, source: (await this.tree.read(path)) ?? "" })),
    );
    const live = keepTokens(current, keepWrittenDefaults(current, object, defaulted));
    const split = outside.including.length === 1 ? editThrough(current, live, links) : undefined;
    const refusal = {
      refused:
        `${describe(identity)} lives in ${outside.path}, outside ${this.settings.targetPath}, ` +
        "which the operator reads and never writes; only an images: or replicas: override in this folder can change it",
      reason: "read_only_context",
    };
    // Judged before the overrides are edited, so the render is the commit's, built once.
    const agrees =
      (split !== undefined && isDeepStrictEqual(split.desired, current)) ||
      (await this.rendersLive(identity, object, defaulted, split?.desired ?? live));
    if (!split || split.kustomizations.length === 0) {
      return agrees ? { path: outside.path, created: false, changed: false } : refusal;
    }
    for (const edit of split.kustomizations) await this.put(edit.path, edit.source);
    return {
      path: outside.including[0]!,
      created: false,
      changed: true,
      ...(agrees ? {} : { unwritten: refusal }),
    };
  }

  /** Whether live equals the folder as kustomize renders it, but for what `desired` writes through overrides. */
  private async rendersLive(
    identity: ResourceIdentity,
    object: KubernetesObject,
    defaulted: Defaulted | undefined,
    desired: unknown,
  ): Promise<boolean> {
    const rendered = (await this.settings.rendered?.())?.get(identityKeyOf(identity));
    if (rendered === undefined) return false;
    return rendersLive(
      keepTokens(rendered, keepWrittenDefaults(rendered, object, defaulted)),
      rendered,
      desired,
    );
  }

  private async create(
    identity: ResourceIdentity,
    object: KubernetesObject,
    sensitive = false,
  ): Promise<UpsertOutcome> {
    const placement = placeNew({ ...identity, sensitive }, this.settings.placement, {
      targetPath: this.settings.targetPath,
      kustomizations: this.inventory.kustomizations(),
      existingFiles: this.inventory.paths(),
    });
    if ("refused" in placement) {
      return { refused: placement.message, reason: placement.reason, placedBy: placement.source };
    }
    const existing = await this.tree.read(placement.path);
    if (existing !== undefined && !placement.append) {
      // A file the inventory does not track (ignored, or not YAML) is a person's: never overwritten.
      return {
        refused: `${placement.path} exists and is not a manifest the operator manages`,
        reason: "path_taken",
        placedBy: placement.source,
      };
    }
    const override = this.inventory.namespaceOverride(placement.path, placement.kustomization?.path);
    const doc = newDocument(object, placement.path, override);
    if ("refused" in doc) return { ...doc, placedBy: placement.source };
    if (sensitive) {
      const { recipients } = this.settings.encryption!;
      const text = await encryptManifest(doc.object, { recipients });
      await this.put(placement.path, text, sealedFacts(placement.path, text, doc.object, recipients));
    } else if (placement.append) await this.put(placement.path, appendDocument(existing ?? "", doc.object));
    else
      await this.put(placement.path, toStableYaml(doc.object), renderedFacts(placement.path, [doc.object]));
    if (placement.kustomization) {
      const { path, entry } = placement.kustomization;
      const source = (await this.tree.read(path)) ?? "";
      const edited = addResourceEntry(source, entry);
      if (edited !== source) await this.put(path, edited);
    }
    return {
      path: placement.path,
      created: true,
      changed: true,
      placedBy: placement.source,
      ...(sensitive ? { encryption: "encrypted" as const } : {}),
    };
  }

  private async put(path: string, content: string | undefined, facts?: FileFacts): Promise<void> {
    if (content === undefined) await this.tree.remove(path);
    else await this.tree.write(path, content);
    this.inventory.update(path, content, facts);
    this.touched.add(path);
  }
}

/** The facts of a SOPS document the operator just wrote: what it read, and the proof of what it holds. */
function sealedFacts(
  path: string,
  text: string,
  object: KubernetesObject,
  recipients: readonly string[],
): FileFacts {
  const facts = fileFacts(path, text);
  const [doc] = facts.documents;
  if (doc?.sealed) doc.sealed.proof = proofOf(object, recipients);
  return facts;
}

function sealedRefusal(where: string): { refused: string; reason: string } {
  return {
    refused: `${where}; a sensitive resource is written only encrypted, in a file of its own in the target's folder`,
    reason: "sensitive_placement",
  };
}

/** An object as messages name it: "Kind namespace/name", or "Kind name" when cluster-scoped. */
export function describe(identity: Pick<ResourceIdentity, "kind" | "namespace" | "name">): string {
  return `${identity.kind} ${identity.namespace ? `${identity.namespace}/` : ""}${identity.name}`;
}

/** A resources: entry naming `file`, relative to the kustomization's directory. */
function relativeEntry(kustomization: string, file: string): string {
  const dir = kustomization.slice(0, kustomization.lastIndexOf("/") + 1);
  return file.startsWith(dir) ? file.slice(dir.length) : file;
}
