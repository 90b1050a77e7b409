import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { StreamReaders, type Destination } from "../../../internal/git/streamreaders.ts";
import type { TargetSettings } from "../../../internal/git/folder/writes.ts";
import { GitTargetEventStream, type StreamItem } from "../../../internal/stream/stream.ts";
import { eventually } from "../../support/wait.ts";

const settings = { key: "apps/t" } as TargetSettings;
const marker = (n: number) => ({ type: "replaying", collection: { key: `c${n}` } }) as unknown as StreamItem;
const keyOf = (item: StreamItem) => (item as { collection: { key: string } }).collection.key;

/** A worker that records what it takes. */
function recorder(): Destination["worker"] & { taken: string[] } {
  const taken: string[] = [];
  return {
    taken,
    accept: (_s, item) => Promise.resolve(void taken.push(keyOf(item))),
    replay: () => Promise.resolve(),
    intakeOpen: () => Promise.resolve(),
  };
}

describe("everything a branch's GitTargets stream is served in order, and nothing accepted is lost", () => {
  it("a target detached for a while, then attached again, gets every item in order", async () => {
    const stream = new GitTargetEventStream({ namespace: "apps", name: "t" });
    let destination: Destination | undefined;
    const readers = new StreamReaders(() => destination);
    const first = recorder();
    destination = { worker: first, settings };
    readers.attached(stream);
    stream.push(marker(1));
    await eventually(() => first.taken.length === 1);

    destination = undefined; // detached: the reader may already be waiting on the stream
    stream.push(marker(2));
    stream.push(marker(3));
    const second = recorder();
    destination = { worker: second, settings };
    readers.attached(stream);
    readers.attached(stream); // attached twice: still one reader
    stream.push(marker(4));
    await eventually(() => second.taken.length === 3, { description: "items 2, 3 and 4" });
    assert.deepEqual(first.taken, ["c1"]);
    assert.deepEqual(second.taken, ["c2", "c3", "c4"]);
  });
});
