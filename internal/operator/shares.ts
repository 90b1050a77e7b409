// How live replicas share out shards (repository branches, for the operator): each shard is a
// Lease, and each replica decides on its own, every round, which free shards to take and which
// of its own to give back, from what it sees of the Leases. No replica assigns another's work:
// a replica takes only free or expired Leases and gives back only its own, so two replicas that
// see the world differently for a round disagree about who should hold a shard, never about who
// does. The rules:
//
// 1. A replica's fair share is ceil(shards / live replicas); the floor is floor(shards / live).
// 2. Under its share, it takes free shards (unheld, released, or expired), up to its share.
// 3. Over its share, while another live replica is under it, it gives back what the others
//    can take: never more than its surplus, never more than their deficit beyond the free
//    shards they can take instead. The same over the floor, while another is under the floor,
//    so shares settle within one of each other (7 over 3 as 3/2/2, never 3/3/1).
// 4. A shard that is no longer wanted (its last GitBranch went) is given back at once.
// 5. A shard taken within the last lease duration is not given back for balance (`settling`):
//    two replicas that briefly count the live set differently would otherwise pass shards
//    back and forth, each move a handover.
// 6. A shard a replica gave back while it still wanted the shard is not taken back by that
//    replica within a lease duration (`cooling`): the giver, now under its share, would take it
//    again on its very next round, and the replica it was given up for, whose rounds run at the
//    same pace, would never see it free. Past that, nobody took it, so the giver may.
// 7. A shard released within the last lease duration is left, by a replica at or over the floor,
//    to the replicas under the floor while there are any: two replicas that each gave one back
//    for a newcomer would otherwise take each other's (each is under its share again), round
//    after round, while the newcomer waited. Past that, nobody under the floor took it, so anyone may.
//
// Which shards a replica takes or gives first follows rendezvous hashing (the highest
// hash(replica, shard) first), so replicas prefer different shards and a shard tends to go back
// to the replica it left.
import { createHash } from "node:crypto";

/** What a replica sees of one shard's Lease this round. */
export interface ShardView {
  /** The replica holding it; "" when nobody does. */
  holder: string;
  /** Its holder stopped renewing it for the lease duration, by the viewer's clock. */
  expired: boolean;
  /** Released (holder "") within the last lease duration, by the viewer's clock (rule 7). */
  released?: boolean;
}

export interface ShareFacts {
  self: string;
  /** The replicas alive this round (their heartbeats unexpired), this one among them. */
  live: readonly string[];
  /** Every shard there is work for. */
  wanted: readonly string[];
  /** The Leases seen, by shard; a wanted shard without one is free. */
  leases: ReadonlyMap<string, ShardView>;
  /** The shards this replica holds (renewed in time), wanted or not. */
  held: ReadonlySet<string>;
  /** The shards among them taken too recently to give back for balance (rule 5). */
  settling?: ReadonlySet<string>;
  /** The shards this replica gave back within the last lease duration, still wanted (rule 6). */
  cooling?: ReadonlySet<string>;
}

export interface ShareDecision {
  take: string[];
  giveBack: string[];
}

/** Rule 1. */
export function fairShare(shards: number, replicas: number): number {
  return replicas === 0 ? shards : Math.ceil(shards / replicas);
}

/** The rendezvous score of a shard for a replica: higher is preferred. */
export function preference(replica: string, shard: string): string {
  return createHash("sha256").update(`${replica}\n${shard}`).digest("hex");
}

const free = (view: ShardView | undefined) => !view || view.holder === "" || view.expired;

/** Which shards this replica takes and gives back this round (rules 1–7). */
export function decideShares(facts: ShareFacts): ShareDecision {
  const { self, wanted, leases, held } = facts;
  const wantedSet = new Set(wanted);
  const live = facts.live.includes(self) ? facts.live : [...facts.live, self];
  const share = fairShare(wanted.length, live.length);
  const byPreference = (a: string, b: string) => (preference(self, b) < preference(self, a) ? -1 : 1);

  const floor = Math.floor(wanted.length / live.length);
  const unwanted = [...held].filter((s) => !wantedSet.has(s));
  const mine = wanted.filter((s) => held.has(s));
  const counts = new Map<string, number>(live.map((r) => [r, 0]));
  for (const shard of wanted) {
    const view = leases.get(shard);
    if (!free(view) && counts.has(view!.holder)) counts.set(view!.holder, counts.get(view!.holder)! + 1);
  }
  const others = live.filter((r) => r !== self);
  // Rule 7: at or over the floor, a shard just released is left to those under it.
  const leaveReleased = mine.length >= floor && others.some((r) => counts.get(r)! < floor);
  const freeShards = wanted
    .filter((s) => !held.has(s) && !facts.cooling?.has(s) && free(leases.get(s)))
    .filter((s) => !(leaveReleased && leases.get(s)?.released === true))
    .sort(byPreference);
  if (mine.length < share) {
    return { take: freeShards.slice(0, share - mine.length), giveBack: unwanted };
  }
  /** What this replica gives back so that none of the others stays under `level`. */
  const givingAbove = (level: number) => {
    const deficit = others.reduce((sum, r) => sum + Math.max(0, level - counts.get(r)!), 0);
    return Math.max(0, Math.min(mine.length - level, deficit - freeShards.length));
  };
  const giving = Math.max(givingAbove(share), givingAbove(floor));
  // The least preferred go first: the shards this replica would be the last to choose.
  const givable = mine.filter((s) => !facts.settling?.has(s)).sort(byPreference);
  const giveBack = givable.slice(Math.max(0, givable.length - giving));
  return { take: [], giveBack: [...unwanted, ...giveBack] };
}
