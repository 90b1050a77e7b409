// Go text/template, the subset commit messages need: a tokenizer, a parser and a tiny tree
// walker. A template comes from a GitTarget spec, so any namespace owner's text runs inside the
// operator: nothing here executes code (no eval, no Function, no method call on the data), a
// field lookup reads only an object's own data properties, and every render is bounded in steps
// and in output, so a template can neither escape nor stall the branch worker.
//
// Supported: text; {{.A.B}}, {{.}}, {{$}}, {{$x.A}}; literals ("..." `...` 12 true false nil);
// pipelines with | and (...); {{$x := ...}} and {{$x = ...}}; {{if}}, {{else if}}, {{with}},
// {{else with}}, {{range}} with one or two variables, {{else}}, {{end}}; {{- and -}} trimming;
// {{/* comments */}}; the functions and, or, not, eq, ne, lt, le, gt, ge, len, index, slice,
// print, println, printf (%s %d %v %q %%) and join, which Go lacks but users expect.
//
// Deliberate differences from Go, each so that a template keeps committing:
// - a missing field, or a field of something that has none, is nil and renders as "", where Go
//   prints "<no value>" or fails: a template written for a newer data model still commits, and a
//   missing field is not worth losing a commit over;
// - %s and %v print any value as {{.}} would, and nil as "";
// - an object is true in {{if}}, like a Go struct; a range over an object visits its keys in
//   sorted order, like a Go map;
// - join accepts (list, sep), as strings.Join, or (sep, list), as Sprig's join.
//
// The pieces: limits.ts holds the bounds, source.ts positions and TemplateError, lexer.ts the
// tokenizer, ast.ts the tree, parser.ts parseTemplate, values.ts truth and field lookup,
// functions.ts the built-in functions and evaluate.ts render.

export { maxOutputBytes, maxSteps, maxTemplateLength } from "./limits.ts";
export { TemplateError } from "./source.ts";
export type { Command, Control, Node, Operand, Pipeline, Template } from "./ast.ts";
export { parseTemplate } from "./parser.ts";
export { truthy } from "./values.ts";
export { render } from "./evaluate.ts";
