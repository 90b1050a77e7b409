// Who to ignore: a rule object's spec.excludeFieldManagers, excludeUsers and excludeObjects,
// compiled, and the pure decision the watch makes with them. An exclusion is a decision about a
// write, never about state: an excluded write is not mirrored, but the watch takes its content
// as seen, so the next write by anyone else mirrors the object as it then is, the excluded
// change included, and so does a snapshot. A removal carries no managedFields of its remover
// and leaves no later write to carry the state on, so only excludeObjects applies to it.

/** Why a write was kept out: the gitopsreverser_watch_events_excluded_total reason. */
export type ExclusionReason = "field_manager" | "user" | "object";

/** One "[namespace/]name" pattern; a pattern without a namespace matches in every namespace. */
export interface ObjectPattern {
  namespace?: RegExp;
  name: RegExp;
}

/** What one rule object keeps out. */
export interface RuleExclusions {
  fieldManagers: RegExp[];
  users: RegExp[];
  objects: ObjectPattern[];
  /** The objects entries as written, to tell a change of them apart from a recompile. */
  objectPatterns: string[];
}

/** A rule object's spec fields, as both WatchRule and ClusterWatchRule have them. */
export interface ExclusionSpec {
  excludeFieldManagers?: string[];
  excludeUsers?: string[];
  excludeObjects?: string[];
}

/** `*` matches any run of characters; everything else is itself. */
export function globOf(pattern: string): RegExp {
  const literal = pattern.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${literal.join(".*")}$`, "s");
}

/** The exclusions a rule object's spec names, or undefined when it names none. */
export function compileExclusions(spec: ExclusionSpec): RuleExclusions | undefined {
  const managers = spec.excludeFieldManagers ?? [];
  const users = spec.excludeUsers ?? [];
  const objects = spec.excludeObjects ?? [];
  if (managers.length + users.length + objects.length === 0) return undefined;
  return {
    fieldManagers: managers.map(globOf),
    users: users.map(globOf),
    objects: objects.map((pattern) => {
      const slash = pattern.indexOf("/");
      return slash < 0
        ? { name: globOf(pattern) }
        : { namespace: globOf(pattern.slice(0, slash)), name: globOf(pattern.slice(slash + 1)) };
    }),
    objectPatterns: [...objects].sort(),
  };
}

/** What the watch knows of one event when it decides. */
export interface WriteFacts {
  namespace: string;
  name: string;
  /** A delete, or an object that is terminating. */
  removal: boolean;
  /**
   * The managers that may have made the write: the one the watch's order proved, else those
   * whose entries share the newest time. Empty: nothing tells, and no manager is judged.
   */
  writers: readonly string[];
  /** The write's user as attribution resolved it; undefined while unknown or unresolved. */
  user?: string;
}

const anyOf = (patterns: readonly RegExp[], value: string) => patterns.some((p) => p.test(value));

/** Whether one rule object keeps the object out, whatever the write. */
export function objectExcluded(rule: RuleExclusions, namespace: string, name: string): boolean {
  return rule.objects.some((p) => p.name.test(name) && (!p.namespace || p.namespace.test(namespace)));
}

/** Why one rule object keeps the write out, or undefined when it does not. */
export function ruleExcludes(rule: RuleExclusions, write: WriteFacts): ExclusionReason | undefined {
  if (objectExcluded(rule, write.namespace, write.name)) return "object";
  if (write.removal) return undefined;
  if (write.writers.length > 0 && write.writers.every((m) => anyOf(rule.fieldManagers, m)))
    return "field_manager";
  if (write.user !== undefined && anyOf(rule.users, write.user)) return "user";
  return undefined;
}

/**
 * The verdict of a collection fed by `rules` (one entry per rule object that selects it;
 * undefined for one that excludes nothing): a write is kept out only when every one of them
 * keeps it out, since an object any rule selects without excluding it is mirrored. The reason
 * is the first rule's.
 */
export function excludedBy(
  rules: readonly (RuleExclusions | undefined)[],
  write: WriteFacts,
): ExclusionReason | undefined {
  let reason: ExclusionReason | undefined;
  for (const rule of rules) {
    const why = rule && ruleExcludes(rule, write);
    if (!why) return undefined;
    reason ??= why;
  }
  return reason;
}

/**
 * Whether the write's user could still keep it out: it is no removal, and every rule that does
 * not exclude it already names users. Only then does the watch wait for attribution's answer
 * before it decides.
 */
export function userMayExclude(rules: readonly (RuleExclusions | undefined)[], write: WriteFacts): boolean {
  if (write.removal || rules.length === 0) return false;
  return rules.every((rule) => rule !== undefined && (!!ruleExcludes(rule, write) || rule.users.length > 0));
}

/** Whether a collection fed by `rules` can exclude anything at all. */
export function excludesAnything(rules: readonly (RuleExclusions | undefined)[]): boolean {
  return rules.length > 0 && rules.every((rule) => rule !== undefined);
}

/** The object patterns of a collection's rules, as one comparable string: a change asks for a fresh snapshot. */
export function objectPatternsKey(rules: readonly (RuleExclusions | undefined)[]): string {
  return JSON.stringify(rules.map((rule) => rule?.objectPatterns ?? []));
}

/**
 * The condition a rule object reports of its exclusions: excludeUsers cannot be judged with
 * attribution off, and the rule says so instead of quietly excluding nothing.
 */
export function exclusionsEffective(
  spec: ExclusionSpec,
  attributing: boolean,
): { status: "True" | "False"; reason: "Succeeded" | "AttributionOff"; message: string } {
  const users = spec.excludeUsers ?? [];
  if (users.length === 0 || attributing) return { status: "True", reason: "Succeeded", message: "" };
  return {
    status: "False",
    reason: "AttributionOff",
    message:
      `spec.excludeUsers names ${users.length === 1 ? "a user" : `${users.length} users`}, but author ` +
      "attribution is off, so no write's user is known and no write is kept out by user. Start the " +
      "operator with --author-attribution, or name the tools' field managers in spec.excludeFieldManagers.",
  };
}
