// The tree walker: every render is bounded in steps and in output, and reads the data only through
// field lookups, so a template can neither escape nor stall the branch worker.
import type { Control, Node, Operand, Pipeline, Template } from "./ast.ts";
import { functions, type Args } from "./functions.ts";
import { maxOutputBytes, maxSteps } from "./limits.ts";
import { Source } from "./source.ts";
import { bytesOf, field, goType, isObject, lookup, truthy } from "./values.ts";

/**
 * Renders a parsed template with `data` as its dot. Throws a TemplateError, with the position of
 * the action at fault, when a function is misused or a bound is reached.
 */
export function render(template: Template, data: unknown): string {
  const run = new Run(new Source(template.source), data);
  run.walk(template.nodes, data);
  return run.output();
}

export class Run {
  private readonly out: string[] = [];
  private bytes = 0;
  private steps = 0;
  /** Variables in scope, innermost last, as Go keeps them: pushed by a declaration, popped by a block's end. */
  private readonly variables: { name: string; value: unknown }[];

  constructor(
    private readonly src: Source,
    root: unknown,
  ) {
    this.variables = [{ name: "$", value: root }];
  }

  fail(pos: number, reason: string): never {
    return this.src.fail(pos, reason);
  }

  output(): string {
    return this.out.join("");
  }

  private step(pos: number): void {
    if (++this.steps > maxSteps) this.fail(pos, `the template takes more than ${maxSteps} steps to render`);
  }

  bounded(text: string, pos: number): string {
    if (text.length > maxOutputBytes || bytesOf(text) > maxOutputBytes)
      this.fail(pos, `a value exceeds ${maxOutputBytes} bytes`);
    return text;
  }

  private emit(text: string, pos: number): void {
    this.bytes += bytesOf(text);
    if (this.bytes > maxOutputBytes) this.fail(pos, `the output exceeds ${maxOutputBytes} bytes`);
    this.out.push(text);
  }

  /** How {{.}} prints a value; nil is "". */
  format(value: unknown, pos: number): string {
    this.step(pos);
    if (value === undefined || value === null) return "";
    if (typeof value === "string") return value;
    if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint")
      return String(value);
    const inner = (v: unknown) => (v === undefined || v === null ? "<nil>" : this.format(v, pos));
    if (Array.isArray(value)) return this.bounded(`[${value.map(inner).join(" ")}]`, pos);
    if (isObject(value))
      return this.bounded(
        `{${Object.keys(value)
          .map((k) => inner(field(value, k)))
          .join(" ")}}`,
        pos,
      );
    return "";
  }

  walk(nodes: readonly Node[], dot: unknown): void {
    for (const node of nodes) {
      if (node.kind === "text") {
        this.emit(node.text, node.pos);
        continue;
      }
      this.step(node.pos);
      const mark = this.variables.length;
      if (node.kind === "action") {
        const value = this.pipeline(node.pipeline, dot);
        // An action that sets a variable prints nothing, as in Go.
        if (node.pipeline.variables.length === 0) this.emit(this.format(value, node.pos), node.pos);
        continue;
      }
      if (node.kind === "range") this.range(node, dot);
      else {
        const value = this.pipeline(node.pipeline, dot);
        if (!truthy(value)) this.walk(node.otherwise, dot);
        else this.walk(node.body, node.kind === "with" ? value : dot);
      }
      this.variables.length = mark;
    }
  }

  private range(node: Control, dot: unknown): void {
    const value = this.commands(node.pipeline, dot);
    let entries: [unknown, unknown][];
    if (value === undefined || value === null) entries = [];
    else if (Array.isArray(value)) entries = value.map((v, i) => [i, v]);
    else if (isObject(value))
      entries = Object.keys(value)
        .sort()
        .map((k) => [k, field(value, k)]);
    else return this.fail(node.pos, `range cannot iterate over ${goType(value)}`);
    if (entries.length === 0) return this.walk(node.otherwise, dot);
    const names = node.pipeline.variables;
    const mark = this.variables.length;
    for (const [key, element] of entries) {
      this.step(node.pos);
      // One variable is the element; two are the index (or key) and the element.
      if (names.length === 1) this.variables.push({ name: names[0]!, value: element });
      if (names.length === 2)
        this.variables.push({ name: names[0]!, value: key }, { name: names[1]!, value: element });
      this.walk(node.body, element);
      this.variables.length = mark;
    }
  }

  private pipeline(pipeline: Pipeline, dot: unknown): unknown {
    const value = this.commands(pipeline, dot);
    for (const name of pipeline.variables) {
      if (!pipeline.assign) this.variables.push({ name, value });
      else this.variables.findLast((v) => v.name === name)!.value = value;
    }
    return value;
  }

  private commands(pipeline: Pipeline, dot: unknown): unknown {
    let value: unknown;
    pipeline.commands.forEach((command, i) => {
      this.step(command.pos);
      const [head, ...rest] = command.args;
      if (head!.kind !== "func") {
        value = this.operand(head!, dot);
        return;
      }
      const args: Args = rest.map((arg) => () => this.operand(arg, dot));
      // A piped value is the last argument of the next command, as in Go.
      if (i > 0) {
        const piped = value;
        args.push(() => piped);
      }
      value = functions[head!.name].impl(this, args, head!.pos);
    });
    return value;
  }

  private operand(operand: Operand, dot: unknown): unknown {
    switch (operand.kind) {
      case "field":
        return lookup(dot, operand.path);
      case "dot":
        return dot;
      case "variable":
        return lookup(this.variables.findLast((v) => v.name === operand.name)?.value, operand.path);
      case "literal":
        return operand.value;
      case "nil":
        return undefined;
      case "pipeline":
        return lookup(this.commands(operand.pipeline, dot), operand.path);
      case "func":
        // A function named as an argument is called without arguments, as in Go.
        return functions[operand.name].impl(this, [], operand.pos);
    }
  }
}
