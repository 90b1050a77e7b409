// Kustomize override edit-through. A live value that an images: or replicas: entry of the
// document's kustomization chain produced is written back to that entry, so the overlay that set
// the value keeps owning it and the base manifest keeps its bytes. What no entry can express is
// left in the live object, for the plain in-place patch.
import {
  imageFields,
  parseImage,
  renderImage,
  traceImage,
  type ImageEntry,
  type ImageField,
} from "./imageref.ts";
import {
  isCount,
  overridesOf,
  spliceAll,
  splicable,
  type ImageOverride,
  type ReplicaOverride,
  type Splice,
} from "./overrideentries.ts";

export { renderImage, type ImageEntry } from "./imageref.ts";

/** One kustomization of a document's chain, innermost (the one listing the document's file) first, then the overlays that include it. */
export interface ChainLink {
  path: string; // repository-relative path of the kustomization file
  source: string; // its current text
}

/** How a live change splits between the document and the kustomizations of its chain. */
export interface EditThrough {
  /** The object the document itself should now hold: the live object with every value an override produces put back to the document's own value, so a document whose only changes came through overrides keeps its bytes. */
  desired: unknown;
  /** New text for each kustomization whose entry changed (only those). */
  kustomizations: { path: string; source: string }[];
}

interface Link extends ChainLink {
  images: ImageOverride[];
  replicas: ReplicaOverride[];
}

/** An image field of the live object (in the desired copy), with the document's own value. */
interface ImageSite {
  container: Record<string, unknown>;
  own: string;
  live: string;
}

interface ImageEdit {
  entry: ImageOverride;
  link: number;
  next: ImageEntry;
}

const containerLists = new Set(["containers", "initContainers"]);
const scalableKinds = new Set(["Deployment", "StatefulSet", "ReplicaSet"]);

/** Splits a live change between the document and the overrides of its chain. Pure. */
export function editThrough(documentObject: unknown, live: unknown, chain: ChainLink[]): EditThrough {
  const links: Link[] = chain.map((link) => ({ ...link, ...overridesOf(link.source) }));
  const desired = structuredClone(live);
  const splices = links.map((): Splice[] => []);
  throughImages(documentObject, desired, links, splices);
  throughReplicas(documentObject, desired, links, splices);
  const kustomizations = links.flatMap((link, index) => {
    const source = spliceAll(link.source, splices[index] ?? []);
    return source === link.source ? [] : [{ path: link.path, source }];
  });
  return { desired, kustomizations };
}

function throughImages(own: unknown, desired: unknown, links: Link[], splices: Splice[][]): void {
  const sites: ImageSite[] = [];
  collectImageSites(desired, own, sites);
  const edits = acceptedEdits(sites, links);
  const edited = withEdits(links, edits);
  for (const site of sites) {
    if (renderImage(site.own, edited) === site.live) site.container.image = site.own;
  }
  for (const { entry, link, next } of edits) {
    for (const field of imageFields) {
      const spot = entry.spots[field];
      const value = next[field];
      if (spot && value !== undefined && value !== entry[field]) splices[link]?.push({ spot, value });
    }
  }
}

function collectImageSites(live: unknown, own: unknown, sites: ImageSite[]): void {
  if (Array.isArray(live)) {
    live.forEach((item: unknown, index) => collectImageSites(item, counterpart(item, index, own), sites));
    return;
  }
  if (!isRecord(live)) return;
  for (const [key, value] of Object.entries(live)) {
    const ownValue = isRecord(own) ? own[key] : undefined;
    if (containerLists.has(key) && Array.isArray(value)) {
      value.forEach((container: unknown, index) => {
        const ownContainer = counterpart(container, index, ownValue);
        if (!isRecord(container) || !isRecord(ownContainer)) return;
        if (typeof container.image !== "string" || typeof ownContainer.image !== "string") return;
        sites.push({ container, own: ownContainer.image, live: container.image });
      });
    }
    collectImageSites(value, ownValue, sites);
  }
}

// Kubernetes keys containers by name, so a named item pairs with the document's item of the
// same name wherever it sits; unnamed items pair by position.
function counterpart(item: unknown, index: number, ownList: unknown): unknown {
  if (!Array.isArray(ownList)) return undefined;
  const name = isRecord(item) ? item.name : undefined;
  if (typeof name !== "string") return ownList[index];
  return ownList.find((candidate: unknown) => isRecord(candidate) && candidate.name === name);
}

// An edit is kept only when it makes more sites render as live and stops none from doing so: an
// entry shared by a container that kept its image cannot be rewritten for another that changed.
function acceptedEdits(sites: ImageSite[], links: Link[]): ImageEdit[] {
  let accepted: ImageEdit[] = [];
  let matched = matching(sites, withEdits(links, accepted));
  for (const candidate of candidateEdits(sites, links)) {
    const trial = [...accepted, candidate];
    const trialMatched = matching(sites, withEdits(links, trial));
    const keepsAll = matched.every((ok, index) => !ok || trialMatched[index]);
    if (keepsAll && count(trialMatched) > count(matched)) [accepted, matched] = [trial, trialMatched];
  }
  return accepted;
}

// One proposal per entry, for the outermost entry that matched each changed site; sites of one
// entry that ask for different values leave it without a proposal.
function candidateEdits(sites: ImageSite[], links: Link[]): ImageEdit[] {
  const proposals = new Map<ImageOverride, ImageEdit | null>();
  for (const site of sites) {
    const { rendered, last } = traceImage(site.own, links);
    if (rendered === site.live || !last) continue;
    const next = propose(last.entry, site.live);
    const earlier = proposals.get(last.entry);
    const agrees =
      earlier === undefined || (earlier !== null && next !== undefined && sameEntry(earlier.next, next));
    proposals.set(last.entry, next && agrees ? { entry: last.entry, link: last.link, next } : null);
  }
  return [...proposals.values()].filter((edit) => edit !== null);
}

// Only fields the entry already declares change; a part the live image lacks cannot be set.
// Whether the result renders the live image is checked by rendering it.
function propose(entry: ImageOverride, live: string): ImageEntry | undefined {
  const target = parseImage(live);
  const wanted: Record<ImageField, string | undefined> = {
    newName: target.name,
    newTag: target.tag,
    digest: target.digest,
  };
  const next: ImageEntry = { name: entry.name };
  for (const field of imageFields) {
    if (entry[field] === undefined) continue;
    const value = wanted[field];
    if (!value || (value !== entry[field] && !splicable(entry.spots[field]))) return undefined;
    next[field] = value;
  }
  return next;
}

function sameEntry(a: ImageEntry, b: ImageEntry): boolean {
  return imageFields.every((field) => a[field] === b[field]);
}

function withEdits(links: Link[], edits: ImageEdit[]): { images: ImageEntry[] }[] {
  return links.map((link) => ({
    images: link.images.map((entry) => edits.find((edit) => edit.entry === entry)?.next ?? entry),
  }));
}

function matching(sites: ImageSite[], chain: { images: ImageEntry[] }[]): boolean[] {
  return sites.map((site) => renderImage(site.own, chain) === site.live);
}

const count = (flags: boolean[]) => flags.filter(Boolean).length;

function throughReplicas(own: unknown, desired: unknown, links: Link[], splices: Splice[][]): void {
  if (!isRecord(own) || !isRecord(desired) || !isRecord(desired.spec)) return;
  if (typeof own.kind !== "string" || !scalableKinds.has(own.kind)) return;
  const name = isRecord(own.metadata) ? own.metadata.name : undefined;
  // Overlays apply after their bases, so the outermost matching entry sets the count.
  const last = links
    .flatMap((link, index) => link.replicas.filter((r) => r.name === name).map((entry) => ({ index, entry })))
    .at(-1);
  if (!last) return;
  const liveCount = desired.spec.replicas;
  if (liveCount !== last.entry.count) {
    if (!isCount(liveCount)) return;
    splices[last.index]?.push({ spot: last.entry.spot, value: liveCount });
  }
  const ownSpec = isRecord(own.spec) ? own.spec : {};
  if ("replicas" in ownSpec) desired.spec.replicas = ownSpec.replicas;
  else delete desired.spec.replicas;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
