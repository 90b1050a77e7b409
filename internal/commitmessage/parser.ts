// The parser: tokens become the tree, and every mistake a template can make without its data,
// such as an unknown function, a wrong argument count or an undefined variable, fails here.
import type { Command, Node, Operand, Pipeline, Template } from "./ast.ts";
import { functions, type FunctionName } from "./functions.ts";
import { lex, type Token } from "./lexer.ts";
import { maxTemplateLength } from "./limits.ts";
import { Source } from "./source.ts";

type Stop =
  | { kind: "eof"; pos: number }
  | { kind: "end"; pos: number }
  | { kind: "else"; pos: number; chain?: "if" | "with" };

const keywords = new Set([
  "if",
  "else",
  "end",
  "range",
  "with",
  "define",
  "template",
  "block",
  "break",
  "continue",
]);

function describe(token: Token): string {
  switch (token.kind) {
    case "text":
      return "text";
    case "eof":
      return "the end of the template";
    case "ident":
      return `"${token.name}"`;
    case "field":
      return `".${token.path.join(".")}"`;
    case "variable":
      return `"${[token.name, ...token.path].join(".")}"`;
    case "string":
      return `string ${JSON.stringify(token.value)}`;
    case "number":
      return `number ${token.value}`;
    default:
      return `"${{ open: "{{", close: "}}", dot: ".", declare: ":=", assign: "=", pipe: "|", lparen: "(", rparen: ")", comma: "," }[token.kind]}"`;
  }
}

function describeOperand(operand: Operand): string {
  switch (operand.kind) {
    case "field":
      return `.${operand.path.join(".")}`;
    case "dot":
      return ".";
    case "variable":
      return [operand.name, ...operand.path].join(".");
    case "literal":
      return JSON.stringify(operand.value);
    case "nil":
      return "nil";
    case "func":
      return operand.name;
    case "pipeline":
      return "(...)";
  }
}

/** Parses a template, or throws a TemplateError saying where and what was expected. */
export function parseTemplate(text: string): Template {
  const src = new Source(text);
  if (text.length > maxTemplateLength)
    src.fail(
      maxTemplateLength,
      `the template is ${text.length} characters; the limit is ${maxTemplateLength}`,
    );
  const parser = new Parser(src, lex(src));
  const { nodes, stop } = parser.list();
  if (stop.kind === "end")
    src.fail(stop.pos, "unexpected {{end}}: there is no {{if}}, {{range}} or {{with}} to close");
  if (stop.kind === "else") src.fail(stop.pos, "unexpected {{else}} outside {{if}}, {{range}} or {{with}}");
  return { source: text, nodes };
}

class Parser {
  private i = 0;
  /** Variables in scope, innermost last; $ is the data itself. */
  private readonly variables: string[] = ["$"];

  constructor(
    private readonly src: Source,
    private readonly tokens: Token[],
  ) {}

  private peek(ahead = 0): Token {
    return this.tokens[Math.min(this.i + ahead, this.tokens.length - 1)]!;
  }

  private next(): Token {
    const token = this.peek();
    if (this.i < this.tokens.length - 1) this.i++;
    return token;
  }

  private expect(kind: "close" | "rparen", context: string): void {
    const token = this.next();
    if (token.kind !== kind)
      this.src.fail(
        token.pos,
        `unexpected ${describe(token)} in ${context}; expected "${kind === "close" ? "}}" : ")"}"`,
      );
  }

  list(): { nodes: Node[]; stop: Stop } {
    const nodes: Node[] = [];
    for (;;) {
      const token = this.next();
      if (token.kind === "eof") return { nodes, stop: { kind: "eof", pos: token.pos } };
      if (token.kind === "text") {
        nodes.push({ kind: "text", pos: token.pos, text: token.text });
        continue;
      }
      const word = this.peek();
      const keyword = word.kind === "ident" && keywords.has(word.name) ? word.name : undefined;
      if (keyword === "end") {
        this.next();
        this.expect("close", "{{end}}");
        return { nodes, stop: { kind: "end", pos: token.pos } };
      }
      if (keyword === "else") {
        this.next();
        const chained = this.peek();
        if (chained.kind === "ident" && (chained.name === "if" || chained.name === "with")) {
          this.next();
          return { nodes, stop: { kind: "else", pos: token.pos, chain: chained.name } };
        }
        this.expect("close", "{{else}}");
        return { nodes, stop: { kind: "else", pos: token.pos } };
      }
      if (keyword === "if" || keyword === "with" || keyword === "range") {
        this.next();
        nodes.push(this.control(keyword, token.pos));
        continue;
      }
      if (keyword !== undefined)
        this.src.fail(word.pos, `{{${keyword}}} is not supported in commit message templates`);
      const pipeline = this.pipeline("action", "close", { declare: true });
      this.expect("close", "action");
      nodes.push({ kind: "action", pos: token.pos, pipeline });
    }
  }

  /** {{if}}, {{with}} or {{range}}, after its keyword, through its {{end}}. */
  private control(kind: "if" | "with" | "range", pos: number): Node {
    const mark = this.variables.length;
    const context = `{{${kind}}}`;
    const pipeline = this.pipeline(context, "close", { declare: true, range: kind === "range" });
    this.expect("close", context);
    const body = this.list();
    let otherwise: Node[] = [];
    const unclosed = (at: number): never =>
      this.src.fail(
        at,
        `unexpected end of template; expected {{end}} for the ${context} at ${this.src.where(pos)}`,
      );
    if (body.stop.kind === "eof") unclosed(body.stop.pos);
    if (body.stop.kind === "else" && body.stop.chain !== undefined) {
      // {{else if x}} is {{else}}{{if x}}...{{end}} sharing one {{end}}, as in Go.
      if (body.stop.chain !== kind)
        this.src.fail(body.stop.pos, `{{else ${body.stop.chain}}} cannot continue ${context}`);
      otherwise = [this.control(body.stop.chain, body.stop.pos)];
    } else if (body.stop.kind === "else") {
      const rest = this.list();
      if (rest.stop.kind === "eof") unclosed(rest.stop.pos);
      if (rest.stop.kind === "else")
        this.src.fail(rest.stop.pos, `a second {{else}} in ${context}; expected {{end}}`);
      otherwise = rest.nodes;
    }
    this.variables.length = mark;
    return { kind, pos, pipeline, body: body.nodes, otherwise };
  }

  private pipeline(
    context: string,
    end: "close" | "rparen",
    options: { declare?: boolean; range?: boolean } = {},
  ): Pipeline {
    const pos = this.peek().pos;
    const variables: string[] = [];
    let assign = false;
    const first = this.peek();
    const after = this.peek(1);
    if (
      options.declare &&
      first.kind === "variable" &&
      first.path.length === 0 &&
      (after.kind === "declare" || after.kind === "assign" || (options.range && after.kind === "comma"))
    ) {
      this.next();
      variables.push(first.name);
      if (after.kind === "comma") {
        this.next();
        const second = this.next();
        if (second.kind !== "variable" || second.path.length > 0)
          this.src.fail(
            second.pos,
            `unexpected ${describe(second)} after "," in {{range}}; expected a variable`,
          );
        variables.push(second.name);
      }
      const operator = this.next();
      if (operator.kind !== "declare" && operator.kind !== "assign")
        this.src.fail(
          operator.pos,
          `unexpected ${describe(operator)} after the range variables; expected ":="`,
        );
      assign = operator.kind === "assign";
      if (assign && options.range) this.src.fail(operator.pos, 'range variables are declared with ":="');
      if (assign && !this.variables.includes(first.name))
        this.src.fail(first.pos, `undefined variable ${first.name}`);
      if (!assign) this.variables.push(...variables);
    }

    const commands: Command[] = [];
    for (;;) {
      commands.push(this.command(context, commands.length > 0));
      if (this.peek().kind !== "pipe") break;
      this.next();
    }
    const next = this.peek();
    if (next.kind !== end)
      this.src.fail(
        next.pos,
        `unexpected ${describe(next)} in ${context}; expected "${end === "close" ? "}}" : ")"}"`,
      );
    return { pos, variables, assign, commands };
  }

  private command(context: string, piped: boolean): Command {
    const pos = this.peek().pos;
    const args: Operand[] = [];
    for (;;) {
      const token = this.peek();
      if (token.kind === "pipe" || token.kind === "close" || token.kind === "rparen" || token.kind === "eof")
        break;
      if (args.length > 0 && !token.spaced)
        this.src.fail(token.pos, `expected a space before ${describe(token)}`);
      args.push(this.operand());
    }
    const [head] = args;
    if (head === undefined)
      this.src.fail(this.peek().pos, `missing value in ${context}; found ${describe(this.peek())}`);
    for (const arg of args.slice(1))
      if (arg.kind === "func" && functions[arg.name].arity[0] > 0)
        this.src.fail(arg.pos, `${arg.name} needs arguments; call it in parentheses, as (${arg.name} ...)`);
    if (head.kind === "func") {
      const count = args.length - 1 + (piped ? 1 : 0);
      const [min, max] = functions[head.name].arity;
      if (count < min || count > max) {
        const expected = min === max ? `${min}` : max === Infinity ? `at least ${min}` : `${min} to ${max}`;
        this.src.fail(
          head.pos,
          `${head.name} expects ${expected} argument${expected === "1" ? "" : "s"}, got ${count}`,
        );
      }
    } else if (head.kind === "nil") {
      this.src.fail(head.pos, "nil is not a command");
    } else if (piped) {
      this.src.fail(
        head.pos,
        `cannot pipe into ${describeOperand(head)}: only a function takes the piped value`,
      );
    } else if (args.length > 1) {
      this.src.fail(args[1]!.pos, `${describeOperand(head)} is not a function, so it takes no arguments`);
    }
    return { pos, args };
  }

  private operand(): Operand {
    const token = this.next();
    const { pos } = token;
    switch (token.kind) {
      case "field":
        return { kind: "field", path: token.path, pos };
      case "dot":
        return { kind: "dot", pos };
      case "variable":
        if (!this.variables.includes(token.name)) this.src.fail(pos, `undefined variable ${token.name}`);
        return { kind: "variable", name: token.name, path: token.path, pos };
      case "string":
      case "number":
        return { kind: "literal", value: token.value, pos };
      case "lparen": {
        const pipeline = this.pipeline("parenthesized pipeline", "rparen");
        this.expect("rparen", "parenthesized pipeline");
        const chained = this.peek();
        const path = chained.kind === "field" && !chained.spaced ? (this.next(), chained.path) : [];
        return { kind: "pipeline", pipeline, path, pos };
      }
      case "ident":
        if (token.name === "true" || token.name === "false")
          return { kind: "literal", value: token.name === "true", pos };
        if (token.name === "nil") return { kind: "nil", pos };
        if (Object.hasOwn(functions, token.name))
          return { kind: "func", name: token.name as FunctionName, pos };
        if (keywords.has(token.name))
          this.src.fail(pos, `unexpected keyword "${token.name}"; expected a value`);
        return this.src.fail(
          pos,
          `function "${token.name}" not defined; the functions are ${Object.keys(functions).join(", ")}`,
        );
      default:
        return this.src.fail(pos, `unexpected ${describe(token)}; expected a value`);
    }
  }
}
