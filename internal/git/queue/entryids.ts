// Redis Stream entry ids ("<milliseconds>-<sequence>"), as the durable write queue compares and
// trims them. Redis hands out ids that only grow within a stream, so the order of two ids is the
// order their appends landed in, and a trim by MINID keeps an id and everything after it.

/** An id's two parts; undefined for anything that is not one. */
function partsOf(id: string): [bigint, bigint] | undefined {
  const match = /^(\d+)-(\d+)$/.exec(id);
  return match ? [BigInt(match[1]!), BigInt(match[2]!)] : undefined;
}

/** Negative when `a` was appended before `b`, zero when equal, positive after. */
export function compareIds(a: string, b: string): number {
  const [am, as] = partsOf(a) ?? [0n, 0n];
  const [bm, bs] = partsOf(b) ?? [0n, 0n];
  if (am !== bm) return am < bm ? -1 : 1;
  return as === bs ? 0 : as < bs ? -1 : 1;
}

/** The smallest id after `id`: a MINID trim at it removes `id` and everything before. */
export function idAfter(id: string): string {
  const [ms, seq] = partsOf(id) ?? [0n, 0n];
  return `${ms}-${seq + 1n}`;
}

/** The oldest of some ids, undefined for none. */
export function oldestId(ids: Iterable<string | undefined>): string | undefined {
  let oldest: string | undefined;
  for (const id of ids)
    if (id !== undefined && (oldest === undefined || compareIds(id, oldest) < 0)) oldest = id;
  return oldest;
}

/** The newest of some ids, undefined for none. */
export function newestId(ids: Iterable<string | undefined>): string | undefined {
  let newest: string | undefined;
  for (const id of ids)
    if (id !== undefined && (newest === undefined || compareIds(id, newest) > 0)) newest = id;
  return newest;
}
