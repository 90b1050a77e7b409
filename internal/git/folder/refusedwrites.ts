// The changes a folder had nowhere to land (a read-only base document, a path taken, a placement
// refused), by object, so the target says so in a condition and not only in a log line and a
// metric. An object stays refused until a later write of it lands.
import { identityKeyOf } from "../../types/identity.ts";
import type { Change } from "./writes.ts";

/** One object's change refused: its identity key, why (for the condition) and the refusal's reason. */
export interface RefusedWrite {
  key: string;
  message: string;
  /** As the placement refusals count it: value_not_representable, ambiguous_namespace, … */
  reason: string;
}

export class RefusedWrites {
  private readonly byKey = new Map<string, RefusedWrite>();

  /** A write made: every object it carried is judged again, and the ones refused now stay. */
  took(changes: readonly Change[], refused: readonly RefusedWrite[]): void {
    for (const change of changes) this.byKey.delete(identityKeyOf(change.identity));
    for (const write of refused) this.byKey.set(write.key, write);
  }

  /** Every refused object's refusal, in identity order, so the message is stable. */
  list(): RefusedWrite[] {
    return [...this.byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, w]) => w);
  }
}

// Enough to act on without burying the first one.
const shownRefusals = 3;

/** GitPathAccepted's message while changes stay unwritten; undefined when none do. */
export function unwrittenMessage(messages: readonly string[]): string | undefined {
  if (messages.length === 0) return undefined;
  const shown = messages.slice(0, shownRefusals).join("; ");
  const more = messages.length > shownRefusals ? `; and ${messages.length - shownRefusals} more` : "";
  const count = messages.length === 1 ? "A change was" : `${messages.length} changes were`;
  return `${count} not written, so Git does not hold what runs: ${shown}${more}`;
}
