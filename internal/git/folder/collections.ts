// What the write side knows of one GitTarget's collections, followed from its stream: which are
// active, which have completed a snapshot, and which objects each holds (names only, no
// bytes). A sweep and a selector exit ask it whether another collection holds a document.
import type { StreamItem } from "../../stream/stream.ts";
import type { Collection } from "../../stream/collection.ts";
import type { CollectionView } from "./prune.ts";
import { keyOf } from "../../types/names.ts";

interface Followed {
  collection: Collection;
  complete: boolean;
  members: Set<string>;
}

const memberKey = keyOf;

export class TargetCollections {
  private readonly followed = new Map<string, Followed>();

  /** Takes one item of the target's stream, once, in stream order. */
  observe(item: StreamItem): void {
    if (item.type === "removed") {
      this.followed.delete(item.collection.key);
      return;
    }
    const view = this.view(item.collection);
    if (item.type === "replaying") {
      view.complete = false;
      view.members.clear();
    } else if (item.type === "snapshot") {
      view.complete = true;
      view.members = new Set(item.objects.map((o) => memberKey(o.identity)));
    } else if (item.type === "upsert") {
      view.members.add(memberKey(item.identity));
    } else {
      view.members.delete(memberKey(item.identity));
    }
  }

  /** The target's active collections as far as its stream has told. */
  views(): CollectionView[] {
    return [...this.followed.values()];
  }

  // A collection first seen by a live item was followed before this worker: incomplete, so it
  // protects everything it covers until its next snapshot.
  private view(collection: Collection): Followed {
    let view = this.followed.get(collection.key);
    if (!view) {
      view = { collection, complete: false, members: new Set() };
      this.followed.set(collection.key, view);
    }
    view.collection = collection;
    return view;
  }
}
