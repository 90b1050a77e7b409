// The store the durable write queue appends to: one append-only log per GitBranch, with ids
// that grow, read whole on a takeover and trimmed from the front. Redis Streams implement it
// (internal/redis/writelog.ts); the worker never names Redis, so a branch works the same on a log
// in memory, and the tests of the queue's rules need no server.

/**
 * A write the log refused because another worker holds the branch's log now: this process lost
 * the branch (a freeze or a partition past its Lease) and the new holder has read the log. It is
 * no outage of the store, and the write is not retried: the worker is about to be let go.
 */
export class LogFenced extends Error {
  override readonly name = "LogFenced";
}

/** An entry read back: its id and value, and why it is refused, if it is. */
export type LogEntry = [id: string, value: string | undefined, refused?: string];

export interface WriteLog {
  /** Where the log lives, for messages: the store's address and the log's key. */
  readonly where: string;
  /**
   * Appends one entry; resolves to its id, or rejects when the store cannot take it now (with
   * LogFenced when another worker holds the log).
   */
  append(value: string): Promise<string>;
  /**
   * Every entry, oldest first, as [id, value], with why the store refused one it holds (a forged
   * entry, already reported): it is never used, and trimmed with the rest. The read makes this
   * worker the log's holder: from then on, a worker that held it before writes nothing to it.
   */
  read(): Promise<LogEntry[]>;
  /** Removes every entry whose id is before `minId` (LogFenced as append). */
  trim(minId: string): Promise<void>;
}
