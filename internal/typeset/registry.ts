// What one source cluster serves, across discovery scans. A scan that failed for a group
// version keeps its last known facts, and a type that vanished from a complete scan rides a
// removal grace: a discovery blink must not look like an empty API surface, which would close
// watches and, under prune Always, delete documents from Git.
import { followability, type Followability, type ServedType } from "./followability.ts";

export interface TypeRecord extends ServedType {
  /** Whether this version is its group's preferred one. */
  preferred: boolean;
  followability: Followability;
}

/** One discovery pass. */
export interface Scan {
  /** Every group version the API server listed, whether or not its resources could be read. */
  groupVersions: { group: string; version: string; preferred: boolean }[];
  /** The resources of each group version that could be read, keyed "group/version". */
  resources: Map<string, ServedType[]>;
}

export const removalGraceMs = 90_000;

const gvKey = (group: string, version: string) => `${group}/${version}`;
const typeKey = (t: { group: string; version: string; resource: string }) =>
  `${t.group}/${t.version}/${t.resource}`;

export class TypeRegistry {
  private readonly types = new Map<string, TypeRecord>();
  /** When a type went missing from a complete scan, for its removal grace. */
  private readonly missingSince = new Map<string, number>();
  private revisionCounter = 0;

  /** Moves whenever the set of types changes, so planners can tell a stale plan. */
  get revision(): number {
    return this.revisionCounter;
  }

  all(): TypeRecord[] {
    return [...this.types.values()];
  }

  /** Applies a scan; returns whether the set of types changed. */
  update(scan: Scan, now: number): boolean {
    const listed = new Map(scan.groupVersions.map((gv) => [gvKey(gv.group, gv.version), gv]));
    const seen = new Set<string>();
    let changed = false;
    for (const [key, served] of scan.resources) {
      const gv = listed.get(key);
      for (const type of served) {
        const record: TypeRecord = {
          ...type,
          preferred: gv?.preferred ?? false,
          followability: followability(type),
        };
        const k = typeKey(type);
        seen.add(k);
        this.missingSince.delete(k);
        if (JSON.stringify(this.types.get(k)) !== JSON.stringify(record)) {
          this.types.set(k, record);
          changed = true;
        }
      }
    }
    for (const [k, record] of this.types) {
      if (seen.has(k)) continue;
      const key = gvKey(record.group, record.version);
      // Listed but unreadable this time: keep serving the last known facts.
      if (listed.has(key) && !scan.resources.has(key)) continue;
      const since = this.missingSince.get(k) ?? now;
      this.missingSince.set(k, since);
      if (now - since >= removalGraceMs) {
        this.types.delete(k);
        this.missingSince.delete(k);
        changed = true;
      }
    }
    if (changed) this.revisionCounter++;
    return changed;
  }
}
