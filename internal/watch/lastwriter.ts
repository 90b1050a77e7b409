// Who made each write, known rather than guessed. managedFields times resolve to the second, so
// a write seen alone, where the applier's entry and another manager's share the newest second,
// could be either's: that is the seeds' tie rule (applier-claims.md, "Only proof withholds").
// But the watch delivers every write of an object in resourceVersion order, and the API server
// moves exactly one entry's time per write: the writing manager's, and only when its write
// changed the object (a manager that loses fields to the writer keeps its time). So comparing an
// event's managedFields with the previous event's of the same object names the writer. Where the
// times cannot tell (a manager writing twice in one second keeps its time string), the entry
// whose field set grew is the writer, since the fields a write takes join its manager's set and
// leave the losers' sets. Where neither tells, or no previous event is at hand (a snapshot's
// first write after it, a resumed watch), the judge falls back on the tie rule.
import { laterRevision } from "../types/revision.ts";
import type { KubernetesObject, V1ManagedFieldsEntry } from "@kubernetes/client-node";

/** What is kept of one managedFields entry: enough to see it move, nothing of its content. */
export interface WriteMark {
  /** The entry's identity: its manager, operation and subresource. */
  entry: string;
  manager: string;
  /** The entry's time in milliseconds (managedFields times resolve to the second); 0: none. */
  time: number;
  /** How many field paths the entry's set holds. */
  size: number;
}

/** The writer of a write, or why the managedFields could not name it. */
export type Writer =
  { known: string } | { unknown: "no previous event" | "several entries moved" | "no entry moved" };

/**
 * The few distinct managers and entry names a cluster has, kept once: every object's marks hold
 * the same strings, not copies of them (the marks of 10,000 objects are kept at once).
 */
const names = new Map<string, string>();
function once(name: string): string {
  const kept = names.get(name);
  if (kept !== undefined) return kept;
  names.set(name, name);
  return name;
}

/** The marks of an object's content entries (status writes say nothing of who wrote the content). */
export function marksOf(object: KubernetesObject): WriteMark[] {
  return (object.metadata?.managedFields ?? [])
    .filter((e) => e.subresource !== "status")
    .map((e) => ({
      entry: once(`${e.manager ?? ""}\u0000${e.operation ?? ""}\u0000${e.subresource ?? ""}`),
      manager: once(e.manager ?? ""),
      time: e.time ? new Date(e.time).getTime() : 0,
      size: sizeOf(e.fieldsV1),
    }));
}

/** The writer between two consecutive states of one object, from their marks. */
export function writerBetween(before: readonly WriteMark[] | undefined, after: readonly WriteMark[]): Writer {
  if (before === undefined) return { unknown: "no previous event" };
  const previous = new Map(before.map((m) => [m.entry, m]));
  const moved = after.filter((m) => previous.get(m.entry)?.time !== m.time);
  if (moved.length === 1) return { known: moved[0]!.manager };
  if (moved.length > 1) return { unknown: "several entries moved" };
  const grew = after.filter((m) => m.size > (previous.get(m.entry)?.size ?? 0));
  return grew.length === 1 ? { known: grew[0]!.manager } : { unknown: "no entry moved" };
}

/**
 * The last write seen of each object a watch follows, as marks. Every event passes here, no-ops
 * included, so the next event is always compared with the one just before it; a snapshot's
 * objects are recorded as the predecessors of the events that follow it.
 */
export class LastWrites {
  private readonly marks = new Map<string, { resourceVersion: string; marks: WriteMark[] }>();

  /**
   * The writer of this event's write of `object`, which becomes the predecessor of the next. An
   * event no later than the last one seen (a resume replaying what was seen) is compared with
   * nothing, and leaves the later one the predecessor.
   */
  observe(key: string, object: KubernetesObject): Writer {
    const last = this.marks.get(key);
    const rv = object.metadata?.resourceVersion ?? "";
    if (last && !laterRevision(rv, last.resourceVersion)) return { unknown: "no previous event" };
    const after = marksOf(object);
    this.marks.set(key, { resourceVersion: rv, marks: after });
    return writerBetween(last?.marks, after);
  }

  /** `object` as a snapshot holds it: no write of its own, the predecessor of the next event. */
  record(key: string, object: KubernetesObject): void {
    this.marks.set(key, { resourceVersion: object.metadata?.resourceVersion ?? "", marks: marksOf(object) });
  }

  /** Forgets `key`: its object is gone, or its next event does not follow the last one seen. */
  forget(key: string): void {
    this.marks.delete(key);
  }
}

/** The number of field paths in a FieldsV1 set: every key at every depth. */
function sizeOf(fields: V1ManagedFieldsEntry["fieldsV1"]): number {
  if (fields === null || typeof fields !== "object") return 0;
  let size = 0;
  for (const value of Object.values(fields as Record<string, unknown>)) size += 1 + sizeOf(value);
  return size;
}

/**
 * The leaf field paths of a FieldsV1 set, readable (`data.mode`, `metadata.labels.app`), at most
 * `limit`: what a Warning names when the tie rule mirrored a write that may have overwritten them.
 */
export function fieldPathsOf(fields: unknown, limit = 8): string[] {
  const paths: string[] = [];
  const walk = (node: unknown, prefix: string) => {
    if (paths.length >= limit || node === null || typeof node !== "object") return;
    const entries = Object.entries(node as Record<string, unknown>).filter(([k]) => k !== ".");
    if (entries.length === 0 && prefix) paths.push(prefix);
    for (const [key, value] of entries) walk(value, prefix ? `${prefix}.${readable(key)}` : readable(key));
  };
  walk(fields, "");
  return paths.slice(0, limit);
}

/** `f:data` → `data`; `k:{"name":"c"}` → `[name=c]`; `v:"x"` → `["x"]`. */
function readable(key: string): string {
  if (key.startsWith("f:")) return key.slice(2);
  if (key.startsWith("k:")) {
    try {
      const fields = JSON.parse(key.slice(2)) as Record<string, unknown>;
      return `[${Object.entries(fields)
        .map(([k, v]) => `${k}=${String(v)}`)
        .join(",")}]`;
    } catch {
      return key;
    }
  }
  if (key.startsWith("v:")) return `[${key.slice(2)}]`;
  return key;
}
