// The fencing token of a branch's holding: what a process writes the branch's shared state in
// Redis under (its durable queue's log), so that a process that lost the branch, frozen or cut
// off past its Lease, finds its writes refused once the new holder has taken over. The Lease
// fences pushes (the shard Leases' safelyHeld); this fences what the Lease cannot reach. Made by
// the runtime that holds the Leases, read by the store that checks it.

/** This process's token for a branch it holds now, or why it holds none. */
export type FenceToken = { token: string } | { refused: string };
