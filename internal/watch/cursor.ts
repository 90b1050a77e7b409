// Resume cursors: the last resourceVersion a collection processed, which a reconnect within
// the same watch loop resumes from instead of taking a fresh snapshot. The first connection
// after start or replacement never reads one: a new watch needs a fresh observation. A cursor
// is keyed by the GitTarget's uid (a recreated target of the same name starts over), the
// group/resource, the namespace and the label selector, and lives a TTL that every event and
// bookmark refreshes. With --redis-addr it lives in Redis (internal/redis/cursors.ts), where
// Redis losing it costs a snapshot and nothing else; without, in this process.

export interface CursorKey {
  targetUid: string;
  group: string;
  resource: string;
  namespace: string;
  labelSelector: string;
}

/** How long a cursor nothing refreshed stays usable; bookmarks come about once a minute. */
export const cursorTtlMs = 15 * 60_000;

export const cursorKeyText = (key: CursorKey) =>
  `${key.targetUid}|${key.group}/${key.resource}|${key.namespace}|${key.labelSelector}`;

export interface CursorStore {
  /** The stored resourceVersion, or undefined when there is none usable (expired, or unreachable). */
  load(key: CursorKey): Promise<string | undefined>;
  /** Records the last processed resourceVersion; never blocks the watch, never throws. */
  save(key: CursorKey, resourceVersion: string): void;
  /** Drops the cursor of a collection that stopped for good. */
  forget(key: CursorKey): void;
}

/** The cursor store without Redis: the same TTL, in this process. */
export class MemoryCursorStore implements CursorStore {
  private readonly cursors = new Map<string, { rv: string; expiresAt: number }>();

  constructor(
    private readonly ttlMs = cursorTtlMs,
    private readonly now: () => number = Date.now,
  ) {}

  load(key: CursorKey): Promise<string | undefined> {
    const cursor = this.cursors.get(cursorKeyText(key));
    return Promise.resolve(cursor && cursor.expiresAt > this.now() ? cursor.rv : undefined);
  }

  save(key: CursorKey, resourceVersion: string): void {
    this.cursors.set(cursorKeyText(key), { rv: resourceVersion, expiresAt: this.now() + this.ttlMs });
  }

  forget(key: CursorKey): void {
    this.cursors.delete(cursorKeyText(key));
  }
}

/** One collection's cursor in a store. */
export class Cursor {
  constructor(
    private readonly store: CursorStore,
    readonly key: CursorKey,
  ) {}

  load(): Promise<string | undefined> {
    return this.store.load(this.key);
  }

  save(resourceVersion: string): void {
    this.store.save(this.key, resourceVersion);
  }

  forget(): void {
    this.store.forget(this.key);
  }
}
