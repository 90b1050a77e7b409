// Who reads a GitTarget's stream: exactly one reader per stream, for as long as the stream
// runs. Each item goes to the worker the target is attached to when the item arrives, so a
// target detached for a while (its signing key could not be read) loses nothing, and a target
// attached again never has two readers taking its items out of order. Before the first item,
// the worker replays what its durable queue kept of the target from before (a crash, a
// takeover), and each item is taken only once that queue keeps it.
import type { GitTargetEventStream } from "../stream/stream.ts";
import type { ResourceIdentity } from "../types/identity.ts";
import { coordinated } from "./folder/coordinated.ts";
import type { BranchWorker } from "./worker/branchworker.ts";
import type { TargetSettings } from "./folder/writes.ts";

/** Where a stream's items go now: the worker its target is attached to, with its settings. */
export interface Destination {
  worker: Pick<BranchWorker, "accept" | "replay" | "intakeOpen">;
  settings: TargetSettings;
}

export class StreamReaders {
  private readonly reading = new WeakSet<GitTargetEventStream>();
  /** A reader waiting for its stream's target to be attached again. */
  private readonly waiting = new WeakMap<GitTargetEventStream, () => void>();

  constructor(
    private readonly destinationOf: (stream: GitTargetEventStream) => Destination | undefined,
    /** Another applier's objects kept out of a coordinated folder (coordinated.ts). */
    private readonly onExcluded?: (settings: TargetSettings, excluded: ResourceIdentity[]) => void,
  ) {}

  /** A stream was attached, or attached again: its reader starts, or goes on. */
  attached(stream: GitTargetEventStream): void {
    this.waiting.get(stream)?.();
    this.waiting.delete(stream);
    if (this.reading.has(stream)) return;
    this.reading.add(stream);
    void this.read(stream);
  }

  private async read(stream: GitTargetEventStream): Promise<void> {
    const first = await this.destination(stream, false);
    stream.readerMovedTo("replay");
    await first.worker.replay(first.settings);
    for (;;) {
      // A branch whose budget is spent while it waits out an outage takes nothing more.
      const open = (await this.destination(stream, false)).worker.intakeOpen();
      stream.readerMovedTo("intake");
      await open;
      stream.readerMovedTo("next");
      const next = await stream.next();
      if (next.done) {
        stream.readerMovedTo("done");
        this.reading.delete(stream);
        return;
      }
      const { worker, settings } = await this.destination(stream, true);
      const { item, excluded } = coordinated(settings, next.value);
      if (excluded.length > 0) this.onExcluded?.(settings, excluded);
      stream.readerMovedTo("accept");
      if (item) await worker.accept(settings, item);
      stream.taken(next.value);
    }
  }

  /**
   * The worker the stream's target is attached to, waiting while it is detached. A reader that
   * waits holding no item tells the stream so: a release need not wait for it to read out.
   */
  private async destination(stream: GitTargetEventStream, holding: boolean): Promise<Destination> {
    for (;;) {
      const destination = this.destinationOf(stream);
      if (destination) return destination;
      stream.readerMovedTo(holding ? "holding" : "parked");
      await new Promise<void>((resolve) => this.waiting.set(stream, resolve));
    }
  }
}
