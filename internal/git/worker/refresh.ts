// How a branch worker re-proves where its branch is without a write, and reads its folders
// again: one advertisement, and a fetch only when the branch moved, so an idle branch costs one
// round trip per refresh interval, and a push delivery one per burst. A moved branch has its folders read again, so a folder
// somebody broke (or fixed) in Git is reported. Both run on the worker's loop, only while it
// holds no write that would do the same anyway.
import { renderRefusal } from "../../kustomize/verdict.ts";
import type { FolderRenders } from "../../kustomize/renders.ts";
import type { Logger } from "../../telemetry/logger.ts";
import type { WorkTree } from "../folder/materialize.ts";
import type { Publication } from "./publication.ts";
import type { TargetFolders } from "../folder/targetfolders.ts";
import type { TargetSettings } from "../folder/writes.ts";
import { errorText } from "../../telemetry/errortext.ts";

export interface Refreshing {
  publication: Publication;
  folders: TargetFolders;
  clone: WorkTree;
  materialize: { renders?: FolderRenders };
  logger: Logger;
  onProved?: (commit: string | undefined, by: "Fetch" | "Advertisement") => void;
}

/** Proves where the remote branch is; a moved branch has every folder read again. */
export async function proveBranch(worker: Refreshing): Promise<void> {
  try {
    const by = await worker.publication.refresh();
    worker.onProved?.(worker.publication.tip, by);
    if (by === "Fetch") await readFolders(worker, worker.folders.targets(), false);
  } catch (err) {
    worker.logger.error("proving where the remote branch is failed", { error: errorText(err) });
  }
}

/** Reads folders again and reports their verdicts; `fetch` first when somebody may have pushed a fix. */
export async function readFolders(
  worker: Refreshing,
  targets: TargetSettings[],
  fetch = true,
): Promise<void> {
  const { publication, folders, clone } = worker;
  try {
    if (fetch) {
      publication.distrust();
      await publication.refresh();
    }
    for (const target of targets) {
      const inventory = folders.inventory(target);
      await inventory.refresh(clone);
      folders.checked(target, folders.verdict(target) ?? (await renderRefusal(worker, inventory)));
    }
  } catch (err) {
    worker.logger.error("reading the folders again failed", { error: errorText(err) });
  }
}

/**
 * A push delivery's look at the remote. At most one waits, and it waits a moment (1 s) for the
 * rest of its burst, so a hundred deliveries in a second cost one ref advertisement, and a
 * second only for deliveries that came in after the first look started (it may have read the
 * remote before their push). The queue holds one wake-up at most, so deliveries never crowd
 * writes out of it.
 */
export class DeliveryLooks {
  private queued = false;
  private dueAt: number | undefined;

  constructor(private readonly settleMs = 1_000) {}

  /** When the waiting look is due, if one waits. */
  get due(): number | undefined {
    return this.dueAt;
  }

  /** A delivery arrived: whether the worker is to be woken for it (no wake-up is queued yet). */
  noticed(): boolean {
    if (this.queued) return false;
    this.queued = true;
    return true;
  }

  /** The worker took the wake-up: the look is due a moment from now. */
  taken(now: number): void {
    this.dueAt ??= now + this.settleMs;
  }

  /** Whether the look is due at `now`: it starts, and deliveries from here on wait for the next. */
  start(now: number): boolean {
    if (this.dueAt === undefined || this.dueAt > now) return false;
    this.dueAt = undefined;
    this.queued = false;
    return true;
  }
}
