import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  maxOutputBytes,
  maxTemplateLength,
  parseTemplate,
  render,
  TemplateError,
} from "../../../internal/commitmessage/template.ts";

const run = (text: string, data: unknown = {}) => render(parseTemplate(text), data);

/** The TemplateError a template raises, at parse or at render. */
function failure(text: string, data: unknown = {}): TemplateError {
  try {
    run(text, data);
  } catch (err) {
    assert.ok(err instanceof TemplateError, `expected a TemplateError, got ${String(err)}`);
    return err;
  }
  return assert.fail(`${JSON.stringify(text)} rendered without error`);
}

describe("field lookup", () => {
  it("reads a field of dot, and follows nested fields", () => {
    assert.equal(run("{{.Name}} in {{.GitTarget.Path}}", { Name: "a", GitTarget: { Path: "p" } }), "a in p");
  });

  it("renders an unknown field as the empty string, not <no value>, and does not fail", () => {
    assert.equal(run("[{{.Missing}}][{{.A.Missing.Deeper}}][{{.S.Field}}]", { A: {}, S: "text" }), "[][][]");
  });

  it("never runs code: inherited properties and getters are not fields", () => {
    const data = Object.defineProperty({ plain: "p" }, "computed", {
      get: () => assert.fail("a getter ran"),
      enumerable: true,
    });
    assert.equal(run("{{.constructor}}{{.toString}}{{.__proto__}}{{.computed}}{{.plain}}", data), "p");
  });

  it("prints data as data: a value that looks like a template is not parsed", () => {
    assert.equal(run("{{.M}}", { M: "{{.Evil}} {{printf}}" }), "{{.Evil}} {{printf}}");
  });
});

describe("range", () => {
  const data = { Top: "t", List: [{ N: 1 }, { N: 2 }] };

  it("binds dot to each element, while $ still reaches the data", () => {
    assert.equal(run("{{range .List}}[{{.N}} {{$.Top}}]{{end}}", data), "[1 t][2 t]");
  });

  it("with two variables gives the index and the element; with one, the element", () => {
    assert.equal(run("{{range $i, $r := .List}}{{$i}}={{$r.N}};{{end}}", data), "0=1;1=2;");
    assert.equal(run("{{range $r := .List}}{{$r.N}}{{end}}", data), "12");
  });

  it("renders its else for an empty or missing list", () => {
    assert.equal(
      run("{{range .Empty}}x{{else}}none{{end}}|{{range .Gone}}x{{else}}none{{end}}", { Empty: [] }),
      "none|none",
    );
  });
});

describe("if and with", () => {
  it("treat false, 0, empty string, nil and an empty list as false, as Go does", () => {
    const data = { F: false, Z: 0, E: "", N: null, L: [], S: "s", One: 1, Full: [0], Obj: {} };
    const truth = Object.keys(data)
      .map((k) => run(`{{if .${k}}}T{{else}}F{{end}}`, data))
      .join("");
    assert.equal(truth, "FFFFFTTTT");
    assert.equal(run("{{if .Missing}}T{{else}}F{{end}}"), "F");
  });

  it("chain with else if", () => {
    assert.equal(run("{{if .A}}a{{else if .B}}b{{else}}c{{end}}", { A: 0, B: 1 }), "b");
  });

  it("with rebinds dot to a true value, and renders its else otherwise", () => {
    assert.equal(
      run("{{with .A}}{{.B}}{{end}}|{{with .Z}}z{{else}}none{{end}}", { A: { B: "b" }, Z: "" }),
      "b|none",
    );
  });
});

describe("whitespace trimming", () => {
  it("{{- trims the whitespace before, -}} the whitespace after, across newlines", () => {
    assert.equal(run("a  \n\t {{- .X -}} \n  b", { X: "x" }), "axb");
    assert.equal(run("a {{- .X }} b", { X: "x" }), "ax b");
  });

  it("needs a space after the dash: {{-3}} is the number -3", () => {
    assert.equal(run("a {{-3}}"), "a -3");
  });
});

describe("comments", () => {
  it("render nothing, may span lines, and may trim", () => {
    assert.equal(run("a{{/* one\ntwo */}}b {{- /* trimmed */ -}} c"), "abc");
  });
});

describe("functions", () => {
  it("printf formats %s, %d, %v, %q and %%", () => {
    assert.equal(
      run('{{printf "%s has %d items: %v, %q, 100%%" .Name (len .L) .L .Name}}', { Name: "x", L: [1, 2] }),
      'x has 2 items: [1 2], "x", 100%',
    );
  });

  it("printf marks a wrong or missing argument in the output, as Go does", () => {
    assert.equal(run('{{printf "%d|%s" "text"}}'), "%!d(string=text)|%!s(MISSING)");
    assert.equal(run('{{printf "x" 1}}'), "x%!(EXTRA int=1)");
  });

  it("len counts list elements, object fields and a string's bytes, as Go does", () => {
    assert.equal(
      run("{{len .L}} {{len .O}} {{len .S}} {{len .Missing}}", { L: [1, 2, 3], O: { a: 1 }, S: "é" }),
      "3 1 2 0",
    );
  });

  it("a pipe passes its value as the last argument", () => {
    assert.equal(run('{{.N | printf "%s=%d" "n"}}', { N: 4 }), "n=4");
  });

  it("and and or return their deciding argument; comparisons need matching types", () => {
    assert.equal(
      run('{{and 1 0 2}} {{or 0 "" 3}} {{not 0}} {{eq .A 1 2}} {{ne "a" "b"}} {{lt 1 2}}', { A: 2 }),
      "0 3 true true true true",
    );
    assert.match(failure('{{eq 1 "1"}}').message, /incompatible types for comparison: int and string/);
  });

  it("index and slice reach into lists, and join joins them", () => {
    const data = { L: ["a", "b", "c"], R: [{ N: 7 }] };
    assert.equal(
      run('{{index .L 1}} {{(index .R 0).N}} {{len (slice .L 1)}} {{join .L ", "}}', data),
      "b 7 2 a, b, c",
    );
  });
});

describe("variables", () => {
  it("an assignment in a block changes the variable declared outside it", () => {
    assert.equal(run("{{$x := 1}}{{range .L}}{{$x = .}}{{end}}{{$x}}", { L: [2, 3] }), "3");
  });
});

describe("a malformed template", () => {
  const cases: [string, string, number, number, RegExp][] = [
    ["unclosed action", "ok\n  {{.Name", 2, 3, /unclosed action/],
    ["if without end", "{{if .A}}\nyes", 2, 4, /expected \{\{end\}\} for the \{\{if\}\} at line 1, column 1/],
    ["end without opener", "a{{end}}", 1, 2, /unexpected \{\{end\}\}/],
    ["missing condition", "{{if }}x{{end}}", 1, 6, /missing value in \{\{if\}\}; found "\}\}"/],
    ["unknown function", "{{upper .A}}", 1, 3, /function "upper" not defined/],
    ["undefined variable", "{{range .L}}{{end}}{{$r}}", 1, 22, /undefined variable \$r/],
    ["argument to a field", "{{.A .B}}", 1, 6, /\.A is not a function/],
    ["bad escape", '{{"\\q"}}', 1, 4, /unknown escape sequence \\q/],
    ["wrong arity", "{{len .A .B}}", 1, 3, /len expects 1 argument, got 2/],
    ["unclosed comment", "{{/* note", 1, 1, /unclosed comment/],
    ["unsupported action", '{{template "x"}}', 1, 3, /\{\{template\}\} is not supported/],
  ];
  for (const [what, text, line, column, reason] of cases) {
    it(`is a TemplateError with its position and what was expected: ${what}`, () => {
      const err = failure(text);
      assert.deepEqual([err.line, err.column], [line, column], err.message);
      assert.match(err.message, reason);
      assert.match(err.message, new RegExp(`^line ${line}, column ${column}: `));
    });
  }

  it("fails at render with the position of the action at fault", () => {
    const err = failure("x\n{{index .L 3}}", { L: [1] });
    assert.deepEqual([err.line, err.column, err.reason], [2, 3, "index out of range: 3"]);
    assert.match(failure('{{printf "%x" 1}}').message, /%x is not supported/);
  });
});

describe("bounds", () => {
  it(`refuses a template over ${maxTemplateLength} characters`, () => {
    assert.equal(run("x".repeat(maxTemplateLength)).length, maxTemplateLength);
    assert.match(failure("x".repeat(maxTemplateLength + 1)).message, /the limit is 4096/);
  });

  it(`refuses output over ${maxOutputBytes} bytes`, () => {
    const items = Array.from({ length: 1000 }, () => "x".repeat(100));
    assert.match(failure("{{range .I}}{{.}}{{end}}", { I: items }).message, /the output exceeds 65536 bytes/);
    // Bytes, not characters: 3-byte characters reach the bound sooner.
    assert.match(
      failure("{{range .I}}{{.}}{{end}}", { I: Array(300).fill("€".repeat(100)) }).message,
      /exceeds/,
    );
  });

  it("refuses a value over the bound even when it is never printed", () => {
    const doubling = '{{$s := "xxxxxxxx"}}{{range .L}}{{$s = printf "%s%s" $s $s}}{{end}}';
    assert.match(failure(doubling, { L: Array(40).fill(0) }).message, /a value exceeds 65536 bytes/);
  });

  it("stops a render that would take too many steps, quickly", () => {
    const started = Date.now();
    const L = Array(1000).fill(0);
    assert.match(
      failure("{{range .L}}{{range $.L}}{{range $.L}}{{end}}{{end}}{{end}}", { L }).message,
      /steps/,
    );
    assert.ok(Date.now() - started < 5000);
  });
});
