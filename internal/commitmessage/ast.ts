// The parsed tree: what parseTemplate produces and render walks.
import type { FunctionName } from "./functions.ts";

export type Operand = { pos: number } & (
  | { kind: "field"; path: string[] }
  | { kind: "dot" }
  | { kind: "variable"; name: string; path: string[] }
  | { kind: "literal"; value: string | number | boolean }
  | { kind: "nil" }
  | { kind: "func"; name: FunctionName }
  | { kind: "pipeline"; pipeline: Pipeline; path: string[] }
);

export interface Command {
  pos: number;
  args: Operand[];
}

export interface Pipeline {
  pos: number;
  /** Variables the pipeline declares (:=) or assigns (=); two for a range with index and element. */
  variables: string[];
  assign: boolean;
  commands: Command[];
}

export type Node =
  { kind: "text"; pos: number; text: string } | { kind: "action"; pos: number; pipeline: Pipeline } | Control;

/** {{if}}, {{with}} or {{range}}: `otherwise` is its {{else}}, empty when it has none. */
export interface Control {
  kind: "if" | "with" | "range";
  pos: number;
  pipeline: Pipeline;
  body: Node[];
  otherwise: Node[];
}

export interface Template {
  readonly source: string;
  readonly nodes: readonly Node[];
}
