// What Flux's postBuild.substitute would render from a folder, measured against the live
// objects. The operator never substitutes: a string holding a ${...} token renders, as far as
// the operator can know, to the string written in Git. Live carrying anything else means the
// folder and the cluster disagree, and mirroring live would overwrite the token with its value.

/** A JSON path, as keys and array indexes from the root. */
export type ValuePath = (string | number)[];

/** One token-bearing value of a document that the live object does not carry verbatim. */
export interface Divergence {
  path: ValuePath;
  rendered: string;
  /** What live holds at the path; undefined when live has nothing there. */
  live: unknown;
}

// ${NAME}, or ${NAME<operator>...} such as ${NAME:=default} or ${NAME:-default}: Flux's
// postBuild substitution (drone/envsubst) takes any of its operators there. "$$" is an escaped
// "$", so the "$" opening a token must end an odd run of "$": "$${X}" is the literal text ${X},
// "$$${X}" is "$" then a token.
const token = /(?<!\$)(?:\$\$)*\$\{[A-Za-z_][A-Za-z0-9_]*(?:[^A-Za-z0-9_}][^}]*)?\}/;

/** Whether a string holds an unescaped substitution token. */
export function hasToken(value: string): boolean {
  return token.test(value);
}

/** Every path in a document whose string value holds a token. */
export function tokenPaths(documentObject: unknown): ValuePath[] {
  const paths: ValuePath[] = [];
  const walk = (value: unknown, path: ValuePath): void => {
    if (typeof value === "string") {
      if (hasToken(value)) paths.push(path);
    } else if (Array.isArray(value)) {
      value.forEach((item, index) => walk(item, [...path, index]));
    } else if (isRecord(value)) {
      // Only values: Flux substitutes keys too, but a key is an identity, and a live object
      // carrying the substituted key is a different field, never an overwritten one.
      for (const [key, item] of Object.entries(value)) walk(item, [...path, key]);
    }
  };
  walk(documentObject, []);
  return paths;
}

/** The token-bearing values of the document that the live object does not carry verbatim. */
export function measureRender(documentObject: unknown, live: unknown): Divergence[] {
  const divergences: Divergence[] = [];
  for (const path of tokenPaths(documentObject)) {
    const rendered = valueAt(documentObject, path).value as string;
    const { value } = valueAt(live, path);
    if (value !== rendered) divergences.push({ path, rendered, live: value });
  }
  return divergences;
}

/**
 * Returns `desired` with every token-bearing value of the document put back where desired
 * carries the same path — used so a write never replaces a token with a substituted value.
 * `desired` itself is left untouched.
 */
export function keepTokens(documentObject: unknown, desired: unknown): unknown {
  const result = structuredClone(desired);
  for (const path of tokenPaths(documentObject)) {
    const parentPath = path.slice(0, -1);
    const key = path.at(-1);
    const { found, value: parent } = valueAt(result, parentPath);
    // A path the document has but desired lacks stays absent: the token is kept only where
    // the write still has a field to keep it in.
    if (!found || key === undefined || !holds(parent, key)) continue;
    (parent as Record<string | number, unknown>)[key] = valueAt(documentObject, path).value;
  }
  return result;
}

/** A path as a person reads it, such as spec.containers[0].image or metadata.labels["a/b"]. */
export function formatPath(path: ValuePath): string {
  return path
    .map((segment, index) => {
      if (typeof segment === "number") return `[${segment}]`;
      if (!/^[A-Za-z_][A-Za-z0-9_-]*$/.test(segment)) return `[${JSON.stringify(segment)}]`;
      return index === 0 ? segment : `.${segment}`;
    })
    .join("");
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function holds(container: unknown, key: string | number): boolean {
  if (Array.isArray(container)) return typeof key === "number" && key < container.length;
  return isRecord(container) && typeof key === "string" && Object.hasOwn(container, key);
}

function valueAt(root: unknown, path: ValuePath): { found: boolean; value: unknown } {
  let value = root;
  for (const key of path) {
    if (!holds(value, key)) return { found: false, value: undefined };
    value = (value as Record<string | number, unknown>)[key];
  }
  return { found: true, value };
}
