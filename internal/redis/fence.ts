// The fence on a branch's shared state in Redis: its durable queue (writelog.ts) and its
// GitTargets' resume cursors (cursors.ts). Beside them one key holds the branch's epoch, a number
// raised on every takeover, and the holder token that raised it. A holding (types/fence.ts)
// claims an epoch at its first write, once per process: every worker of the holding, and its
// cursor saves, write under that one epoch, so a worker replaced within the process is never
// fenced by its successor. Every write is a script that refuses an epoch older than the
// branch's, so a replica that lost the branch and woke (from a freeze, a partition) changes
// nothing the new holder reads; and a holding claims only while its Lease is safely held, so
// one that froze before its first write never claims over the holder that took its Lease.
// The claim is ordered by Redis itself, not by clocks: the process after a restart, which claims
// after the one before it, always holds the newer epoch. A key gone (Redis lost its data, or a
// week passed with no write) is set again by the next write, as the Lease says it may.
import type { FenceToken } from "../types/fence.ts";
import type { RedisConnection } from "./connection.ts";

/** A branch's state is let go after this long with no write (its log's and cursors' refresh it). */
export const fenceExpiryMs = 7 * 24 * 60 * 60 * 1000;

/** The key naming a branch's epoch and its holder: `<epoch> <token>`. */
export const branchEpochKey = (branchKey: string) => `gitopsreverser:writes-holder:${branchKey}`;

/**
 * The start of every fenced script: KEYS[1] the epoch key; ARGV[1] the writer's epoch, ARGV[2]
 * its token. An older epoch than the branch's is answered `FENCED <epoch> <holder>`; a newer one
 * (the key was lost) sets it again.
 */
export const epochGuard = `
local current = redis.call('GET', KEYS[1])
local epoch = current and tonumber(string.match(current, '^(%d+)')) or 0
local mine = tonumber(ARGV[1])
if epoch > mine then
  return redis.error_reply('FENCED ' .. current)
end
if epoch < mine then
  redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[2], 'PX', ${fenceExpiryMs})
else
  redis.call('PEXPIRE', KEYS[1], ${fenceExpiryMs})
end
`;

/** A claim: the branch's epoch raised by one, named for ARGV[1] (the token); answers the new epoch. */
const claimScript = `
local current = redis.call('GET', KEYS[1])
local epoch = (current and tonumber(string.match(current, '^(%d+)')) or 0) + 1
redis.call('SET', KEYS[1], epoch .. ' ' .. ARGV[1], 'PX', ${fenceExpiryMs})
return epoch`;

interface ClaimClient {
  gitopsreverserClaimEpoch(key: string, token: string): Promise<number>;
}

/** A write's fence: the epoch key, and this holding's epoch and token. */
export interface Fence {
  key: string;
  epoch: number;
  token: string;
}

/** A write refused because the branch's epoch is newer than the writer's: another process took it. */
export class Fenced extends Error {
  override readonly name = "Fenced";
}

/**
 * The epochs this process holds, one per branch and holding, claimed at the holding's first
 * write. One per connection: everything a process writes to Redis shares it.
 */
export class BranchEpochs {
  /** Each branch's claim by this process's current holding of it (an older holding's is let go). */
  private readonly claims = new Map<string, { token: string; epoch: Promise<number> }>();
  private readonly client: ClaimClient;

  private constructor(private readonly redis: RedisConnection) {
    redis.client.defineCommand("gitopsreverserClaimEpoch", { numberOfKeys: 1, lua: claimScript });
    this.client = redis.client as unknown as ClaimClient;
  }

  private static readonly byConnection = new WeakMap<RedisConnection, BranchEpochs>();

  static of(redis: RedisConnection): BranchEpochs {
    let epochs = BranchEpochs.byConnection.get(redis);
    if (!epochs) BranchEpochs.byConnection.set(redis, (epochs = new BranchEpochs(redis)));
    return epochs;
  }

  /**
   * The fence a write of `branchKey` goes under now: this holding's epoch (claimed at its first
   * write; a claim that failed is made again at the next), or Fenced when the token is refused
   * (this process holds the branch no longer) or may not claim now (its Lease not safely held).
   */
  async fence(branchKey: string, token: FenceToken): Promise<Fence> {
    if ("refused" in token) throw new Fenced(token.refused);
    const key = branchEpochKey(branchKey);
    let claim = this.claims.get(branchKey);
    if (claim?.token !== token.token) {
      if (token.unclaimable !== undefined) throw new Fenced(token.unclaimable);
      const epoch = this.client.gitopsreverserClaimEpoch(key, token.token).then(Number);
      const made = { token: token.token, epoch };
      this.claims.set(branchKey, made);
      epoch.catch(() => {
        if (this.claims.get(branchKey) === made) this.claims.delete(branchKey);
      });
      claim = made;
    }
    return { key, epoch: await claim.epoch, token: token.token };
  }

  /** A fenced script's call: its FENCED answer as Fenced, saying who holds the branch now. */
  static async guarded<T>(where: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      const holder = /^FENCED \d+ (.*)$/.exec((err as Error).message)?.[1];
      if (holder === undefined) throw err;
      throw new Fenced(`${where} is held by ${holder} now: this process lost the branch`, { cause: err });
    }
  }
}
