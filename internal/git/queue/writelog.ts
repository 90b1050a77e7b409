// The store the durable write queue appends to: one append-only log per GitBranch, with ids
// that grow, read whole on a takeover and trimmed from the front. Redis Streams implement it
// (internal/redis/writelog.ts); the worker never names Redis, so a branch works the same on a log
// in memory, and the tests of the queue's rules need no server.

/** An entry read back: its id and value, and why it is refused, if it is. */
export type LogEntry = [id: string, value: string | undefined, refused?: string];

export interface WriteLog {
  /** Where the log lives, for messages: the store's address and the log's key. */
  readonly where: string;
  /** Appends one entry; resolves to its id, or rejects when the store cannot take it now. */
  append(value: string): Promise<string>;
  /**
   * Every entry, oldest first, as [id, value], with why the store refused one it holds (a forged
   * entry, already reported): it is never used, and trimmed with the rest.
   */
  read(): Promise<LogEntry[]>;
  /** Removes every entry whose id is before `minId`. */
  trim(minId: string): Promise<void>;
}
