// Push notices between replicas: a Service may send a Git host's delivery to any replica, but
// only the one whose worker holds the branch can act on it. The replica that received it and
// holds no worker for a branch it names publishes the GitBranch on a Redis channel, and every
// replica hears it and wakes its worker, if it has one. Pub/sub keeps nothing: a notice published
// while Redis is away, or while no replica holds the branch, is lost, and the worker's periodic
// refresh finds the push instead, as it would without a receiver.
import type { Redis } from "ioredis";
import type { Runnable } from "../operator/manager.ts";
import type { Logger } from "../telemetry/logger.ts";
import { untilAborted } from "../timing/sleep.ts";
import type { RedisConnection } from "./connection.ts";

const channel = "gitopsreverser:push-notices";

export class RedisNotices implements Runnable {
  readonly name = "push-notice-relay";
  readonly needLeaderElection = false;

  constructor(
    private readonly redis: RedisConnection,
    /** Wakes this replica's worker of a GitBranch (namespace/name), when it has one. */
    private readonly deliver: (branchKey: string) => void,
    private readonly logger: Logger,
  ) {}

  /** Tells every replica a delivery named the GitBranch; Redis away, the notice is logged and lost. */
  async publish(branchKey: string): Promise<void> {
    await this.redis.client.publish(channel, branchKey).catch((err: unknown) =>
      this.logger.error("a push notice could not be relayed to the replica holding its branch", {
        gitBranch: branchKey,
        error: (err as Error).message,
      }),
    );
  }

  async start(signal: AbortSignal): Promise<void> {
    // A subscribed connection serves nothing else. ioredis subscribes again after a reconnect,
    // once a subscription has been made: until then, each time the connection is ready.
    const subscriber: Redis = this.redis.duplicate("push-notices");
    let subscribed = false;
    subscriber.on("message", (from: string, branchKey: string) => {
      if (from === channel) this.deliver(branchKey);
    });
    subscriber.on("ready", () => {
      if (subscribed) return;
      subscriber.subscribe(channel).then(
        () => (subscribed = true),
        (err: unknown) =>
          this.logger.error("cannot subscribe to push notices; trying again when Redis answers", {
            error: (err as Error).message,
          }),
      );
    });
    await subscriber.connect().catch(() => undefined);
    await untilAborted(signal);
    subscriber.disconnect();
  }
}
