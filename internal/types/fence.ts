// The fencing token of a branch's holding: what a process claims the branch's shared state in
// Redis under (its durable queue's log and its GitTargets' resume cursors: internal/redis/fence.ts),
// so that a process that lost the branch, frozen or cut off past its Lease, finds its writes
// refused once the new holder has taken over. The Lease fences pushes (the shard Leases'
// safelyHeld); this fences what the Lease cannot reach. Made by the runtime that holds the
// Leases, read by the store that checks it.

/**
 * This process's token for a branch it holds now, or why it holds none. `unclaimable` says why
 * the holding may not claim the branch now (its Lease not safely held: it may have been taken):
 * a holding that claimed before writes on under its claim, which the store still checks.
 */
export type FenceToken = { token: string; unclaimable?: string } | { refused: string };
