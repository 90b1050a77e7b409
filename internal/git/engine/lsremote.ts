// Reads `git ls-remote --symref` output into an advertisement. Pure, so its rules are pinned
// by the clone's tests against a real server.
import type { Advertisement } from "./root.ts";

/** `<oid>\t<ref>` lines and `ref: <target>\tHEAD`; peeled tags (`^{}`) and HEAD itself are left out. */
export function parseAdvertisement(output: string): Advertisement {
  const refs = new Map<string, string>();
  let head: string | undefined;
  for (const line of output.split("\n")) {
    const [left, name] = line.split("\t");
    if (!left || !name) continue;
    if (left.startsWith("ref: ")) {
      if (name === "HEAD") head = left.slice("ref: ".length);
    } else if (name !== "HEAD" && !name.endsWith("^{}")) {
      refs.set(name, left);
    }
  }
  return head === undefined ? { refs } : { refs, head };
}
