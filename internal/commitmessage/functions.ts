// The built-in functions. Each checks its own arguments at render, since they come from the data;
// the parser has already checked how many there are.
import type { Run } from "./evaluate.ts";
import { bytesOf, field, goType, isObject, truthy } from "./values.ts";

export type Args = (() => unknown)[];
export type FunctionName = keyof typeof functions;
interface Builtin {
  arity: [number, number];
  impl(this: void, run: Run, args: Args, pos: number): unknown;
}

const all = (args: Args) => args.map((arg) => arg());

function compare(run: Run, pos: number, a: unknown, b: unknown, ordered: boolean): number {
  const kind = (v: unknown) => (v === undefined || v === null ? "nil" : typeof v);
  // A missing field is nil, and equal only to nil: comparing it is not worth failing over.
  if (!ordered && (kind(a) === "nil" || kind(b) === "nil")) return kind(a) === kind(b) ? 0 : 1;
  if (!["string", "number", "boolean"].includes(kind(a)) || (ordered && kind(a) === "boolean"))
    run.fail(pos, `cannot compare ${goType(a)} values`);
  if (kind(a) !== kind(b)) run.fail(pos, `incompatible types for comparison: ${goType(a)} and ${goType(b)}`);
  return a === b ? 0 : (a as string | number) < (b as string | number) ? -1 : 1;
}

export const functions = {
  and: {
    arity: [1, Infinity],
    impl: (_run, args) => {
      let value: unknown;
      for (const arg of args) if (!truthy((value = arg()))) return value;
      return value;
    },
  },
  or: {
    arity: [1, Infinity],
    impl: (_run, args) => {
      let value: unknown;
      for (const arg of args) if (truthy((value = arg()))) return value;
      return value;
    },
  },
  not: { arity: [1, 1], impl: (_run, [arg]) => !truthy(arg!()) },
  eq: {
    arity: [2, Infinity],
    impl: (run, [first, ...rest], pos) => {
      const a = first!();
      return rest.some((b) => compare(run, pos, a, b(), false) === 0);
    },
  },
  ne: { arity: [2, 2], impl: (run, args, pos) => compare(run, pos, args[0]!(), args[1]!(), false) !== 0 },
  lt: { arity: [2, 2], impl: (run, args, pos) => compare(run, pos, args[0]!(), args[1]!(), true) < 0 },
  le: { arity: [2, 2], impl: (run, args, pos) => compare(run, pos, args[0]!(), args[1]!(), true) <= 0 },
  gt: { arity: [2, 2], impl: (run, args, pos) => compare(run, pos, args[0]!(), args[1]!(), true) > 0 },
  ge: { arity: [2, 2], impl: (run, args, pos) => compare(run, pos, args[0]!(), args[1]!(), true) >= 0 },
  len: {
    arity: [1, 1],
    impl: (run, [arg], pos) => {
      const value = arg!();
      if (value === undefined || value === null) return 0;
      if (typeof value === "string") return bytesOf(value); // Go counts bytes
      if (Array.isArray(value)) return value.length;
      if (isObject(value)) return Object.keys(value).length;
      return run.fail(pos, `len of ${goType(value)}`);
    },
  },
  index: {
    arity: [1, Infinity],
    impl: (run, [target, ...keys], pos) =>
      keys.reduce((value, key) => {
        const k = key();
        if (value === undefined || value === null) return undefined;
        if (Array.isArray(value)) {
          if (typeof k !== "number" || !Number.isInteger(k))
            return run.fail(pos, `cannot index a list with ${goType(k)}`);
          if (k < 0 || k >= value.length) return run.fail(pos, `index out of range: ${k}`);
          return value[k];
        }
        if (isObject(value)) {
          if (typeof k !== "string") return run.fail(pos, `cannot index an object with ${goType(k)}`);
          return field(value, k);
        }
        return run.fail(pos, `cannot index ${goType(value)}`);
      }, target!()),
  },
  slice: {
    arity: [1, 3],
    impl: (run, [target, ...bounds], pos) => {
      const value = target!();
      const isString = typeof value === "string";
      if (!isString && !Array.isArray(value)) return run.fail(pos, `cannot slice ${goType(value)}`);
      const bytes = isString ? Buffer.from(value, "utf8") : undefined;
      const length = bytes ? bytes.length : (value as unknown[]).length;
      const [from = 0, to = length] = all(bounds);
      for (const b of [from, to])
        if (typeof b !== "number" || !Number.isInteger(b)) run.fail(pos, `slice index is ${goType(b)}`);
      const [f, t] = [from as number, to as number];
      if (f < 0 || t > length || f > t) run.fail(pos, `slice index out of range: [${f}:${t}] of ${length}`);
      return bytes ? bytes.subarray(f, t).toString("utf8") : (value as unknown[]).slice(f, t);
    },
  },
  print: {
    arity: [0, Infinity],
    impl: (run, args, pos) => {
      // Go's Sprint: a space between operands when neither is a string.
      const values = all(args);
      const text = values
        .map(
          (v, i) =>
            (i > 0 && typeof v !== "string" && typeof values[i - 1] !== "string" ? " " : "") +
            run.format(v, pos),
        )
        .join("");
      return run.bounded(text, pos);
    },
  },
  println: {
    arity: [0, Infinity],
    impl: (run, args, pos) =>
      run.bounded(
        all(args)
          .map((v) => run.format(v, pos))
          .join(" ") + "\n",
        pos,
      ),
  },
  printf: {
    arity: [1, Infinity],
    impl: (run, [format, ...args], pos) => {
      const f = format!();
      if (typeof f !== "string") return run.fail(pos, `printf format is ${goType(f)}, not a string`);
      return run.bounded(sprintf(run, pos, f, all(args)), pos);
    },
  },
  join: {
    arity: [2, 2],
    impl: (run, args, pos) => {
      const [a, b] = all(args);
      const [list, sep] = Array.isArray(a) ? [a, b] : [b, a];
      if (!Array.isArray(list) || typeof sep !== "string")
        return run.fail(pos, "join takes a list and a string separator");
      return run.bounded(list.map((v) => run.format(v, pos)).join(sep), pos);
    },
  },
} satisfies Record<string, Builtin>;

/** Go's Sprintf for %s, %d, %v, %q and %%, marking misuse in the output as Go does. */
function sprintf(run: Run, pos: number, format: string, args: unknown[]): string {
  let out = "";
  let next = 0;
  for (let i = 0; i < format.length; i++) {
    const c = format[i];
    if (c !== "%") {
      out += c;
      continue;
    }
    const verb = format[++i];
    if (verb === undefined) {
      out += "%!(NOVERB)";
      break;
    }
    if (verb === "%") {
      out += "%";
      continue;
    }
    if (!"sdvq".includes(verb))
      run.fail(
        pos,
        `printf: %${verb} is not supported; use %s, %d, %v, %q or %% (flags and widths are not supported either)`,
      );
    if (next >= args.length) {
      out += `%!${verb}(MISSING)`;
      continue;
    }
    const arg = args[next++];
    if (verb === "d")
      out += typeof arg === "number" && Number.isInteger(arg) ? String(arg) : `%!d(${badArg(run, pos, arg)})`;
    else if (verb === "q") out += JSON.stringify(run.format(arg, pos));
    else out += run.format(arg, pos);
  }
  if (next < args.length)
    out += `%!(EXTRA ${args
      .slice(next)
      .map((a) => badArg(run, pos, a))
      .join(", ")})`;
  return out;
}

const badArg = (run: Run, pos: number, arg: unknown) =>
  arg === undefined || arg === null ? "<nil>" : `${goType(arg)}=${run.format(arg, pos)}`;
