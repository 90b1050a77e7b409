// What a target's collections hold, by name, for the writer to tell which object a namespace-less
// document describes. Built at most once per write, and only when a write asks: a folder whose
// documents all name their namespace never pays for it.
import type { FollowedObjects } from "../../manifest/index.ts";
import type { CollectionView } from "./prune.ts";

const none: ReadonlySet<string> = new Set();

/** The followed objects of the target's namespaced collections, indexed on first use. */
export function followedObjects(collections: readonly CollectionView[]): FollowedObjects {
  const namespaced = collections.filter((v) => v.collection.namespaced);
  let byName: Map<string, Set<string>> | undefined;
  const index = () => {
    if (byName) return byName;
    byName = new Map();
    for (const { collection, members } of namespaced) {
      for (const member of members) {
        const slash = member.indexOf("/");
        const key = `${collection.group}/${collection.kind}/${member.slice(slash + 1)}`;
        const namespaces = byName.get(key) ?? new Set<string>();
        namespaces.add(member.slice(0, slash));
        byName.set(key, namespaces);
      }
    }
    return byName;
  };
  return {
    namespacesOf: (group, kind, name) => index().get(`${group}/${kind}/${name}`) ?? none,
    followsNamespaced: (group, kind) =>
      namespaced.some((v) => v.collection.group === group && v.collection.kind === kind),
  };
}
