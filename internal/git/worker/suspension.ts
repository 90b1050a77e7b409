// What a branch worker keeps of a suspended GitTarget (spec.suspend): its watches keep running
// and the worker keeps taking their items, so nothing backs up behind the target, but it writes
// none of them. On resume every collection replays a fresh snapshot, which brings back what an
// upsert changed and, under prune Always, sweeps what was deleted. A snapshot sweeps nothing
// under OnEvent, so the deletes a watch reported meanwhile are the one thing kept: identities
// only, each forgotten once its object is seen again. Pure state; the worker owns the queue.
import type { StreamItem } from "../../stream/stream.ts";
import type { Intake } from "../folder/targetfolders.ts";
import type { TargetSettings } from "../folder/writes.ts";
import { memberKey } from "../../types/identity.ts";

type DeleteItem = Extract<StreamItem, { type: "delete" }>;
/** A delete kept, with its durable queue entry. */
type KeptDelete = { item: DeleteItem; entry?: string };

export class Suspensions {
  /** Per suspended target: the deletes its watches reported, by collection and object. */
  private readonly deletes = new Map<string, Map<string, KeptDelete>>();

  /** `replay` asks for a fresh snapshot of every collection of a target. */
  constructor(private readonly replay: (targetKey: string) => void) {}

  /**
   * Takes an item of a suspended target and writes nothing: true when the worker is done with
   * it. The replay markers still go to the render gate, so it knows which collections replay.
   */
  take(intake: Intake): boolean {
    const { target, item } = intake;
    if (!target.suspend || item.type === "replaying") return false;
    const seen = this.deletes.get(target.key) ?? new Map<string, KeptDelete>();
    this.deletes.set(target.key, seen);
    const collection = item.collection.key;
    if (item.type === "delete")
      seen.set(memberKey(collection, item.identity), {
        item,
        ...(intake.entry ? { entry: intake.entry } : {}),
      });
    else if (item.type === "upsert") seen.delete(memberKey(collection, item.identity));
    else if (item.type === "snapshot")
      for (const o of item.objects) seen.delete(memberKey(collection, o.identity));
    else {
      // A collection no longer followed writes nothing more, its deletes included.
      for (const [key, d] of seen) if (d.item.collection.key === collection) seen.delete(key);
      return false;
    }
    return true;
  }

  /**
   * The target resumed: every collection replays, and the deletes it saw while suspended are
   * returned, to be written before anything that came after. They pass the render gate as
   * already admitted: a delete writes no rendered value, and the replay's snapshot would
   * otherwise supersede them.
   */
  resumed(target: TargetSettings): Intake[] {
    const seen = this.deletes.get(target.key);
    this.deletes.delete(target.key);
    this.replay(target.key);
    return [...(seen?.values() ?? [])].map((kept) => ({ target, ...kept, admitted: true }));
  }

  /** The durable queue entries of the deletes it keeps. */
  *entries(): Generator<string | undefined> {
    for (const seen of this.deletes.values()) for (const kept of seen.values()) yield kept.entry;
  }
}
