// What the durable write queue keeps of an accepted live write, and what a replay reads back:
// the GitTarget it came for and the stream item itself, its author and the live object's writers
// included, so a replica that replays it commits it as the first one would have. Pure.
//
// A sensitive object's upsert is never kept: its values would sit in Redis in plaintext, and a
// Secret never leaves the operator unencrypted except to the API server it came from. An edit of
// one pending at a crash reaches Git with the snapshot that follows the replay, as the operator.
import { isSensitive } from "../../manifest/index.ts";
import { contentDigest } from "../../sanitize/digest.ts";
import type { StreamItem } from "../../stream/stream.ts";
import { identityKeyOf } from "../../types/identity.ts";
import { absentDocument, type Replayed } from "../folder/writes.ts";

/** A live write the queue can keep: an upsert or a delete. */
export type LiveItem = Extract<StreamItem, { type: "upsert" | "delete" }>;

/** One entry read back: its id, the GitTarget (namespace/name) and the item. */
export interface QueueEntry {
  id: string;
  target: string;
  item: LiveItem;
}

/**
 * For each entry, the values of its object's entries, oldest first, and which one it is: a
 * replay skips an entry whose object's document already holds its value or a later one, since
 * a push landed them before the process that made them could trim its queue (a crash between
 * the two, or a git push that outlived its process). An object whose value came back to an
 * earlier one loses only that intermediate commit, never its last value.
 */
export function replayedValues(entries: readonly QueueEntry[]): Map<string, Replayed> {
  const byObject = new Map<string, string[]>();
  const replayed = new Map<string, Replayed>();
  for (const { id, item } of entries) {
    const key = identityKeyOf(item.identity);
    const values = byObject.get(key) ?? [];
    byObject.set(key, values);
    replayed.set(id, { values, at: values.length });
    values.push(item.type === "delete" ? absentDocument : (item.digest ?? contentDigest(item.object)));
  }
  return replayed;
}

/**
 * The event a live item came from, as the queue's entries and a resumed watch both name it: its
 * object within its GitTarget, and the event's resourceVersion. Undefined for an item that names
 * no event.
 */
export function eventOf(target: string, item: StreamItem): { object: string; version: string } | undefined {
  if ((item.type !== "upsert" && item.type !== "delete") || !item.resourceVersion) return undefined;
  return { object: `${target} ${identityKeyOf(item.identity)}`, version: item.resourceVersion };
}

/** The version of an entry's encoding: an entry of another version is skipped, never guessed at. */
const version = 1;

/** The live item, when the queue keeps it; undefined for a marker, a snapshot, or a sensitive upsert. */
export function durableItem(item: StreamItem, additionalSensitive: readonly string[]): LiveItem | undefined {
  if (item.type === "delete") return item;
  if (item.type !== "upsert") return undefined;
  return isSensitive(item.identity, additionalSensitive) ? undefined : item;
}

/** The entry's one field's value. */
export function encodeEntry(target: string, item: LiveItem): string {
  return JSON.stringify({ v: version, target, item });
}

/** An entry read back; the reason it cannot be read otherwise. */
export function decodeEntry(id: string, value: string | undefined): QueueEntry | { unreadable: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value ?? "");
  } catch {
    return { unreadable: `entry ${id} is not JSON` };
  }
  const { v, target, item } = (parsed ?? {}) as { v?: unknown; target?: unknown; item?: Partial<LiveItem> };
  if (v !== version) return { unreadable: `entry ${id} has encoding version ${String(v)}, not ${version}` };
  if (typeof target !== "string" || !target.includes("/"))
    return { unreadable: `entry ${id} names no GitTarget` };
  if (!item || (item.type !== "upsert" && item.type !== "delete"))
    return { unreadable: `entry ${id} holds no upsert or delete` };
  if (typeof item.collection?.key !== "string" || typeof item.identity?.name !== "string")
    return { unreadable: `entry ${id} names no collection or object` };
  if (item.type === "upsert" && typeof item.object !== "object")
    return { unreadable: `entry ${id} is an upsert without its object` };
  return { id, target, item: item as LiveItem };
}
