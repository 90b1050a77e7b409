// A template's text and positions in it: every error, at lex, parse or render, names the line and
// column of the action at fault.

export class TemplateError extends Error {
  override readonly name = "TemplateError";

  constructor(
    /** What went wrong, without the position. */
    readonly reason: string,
    /** 1-based. */
    readonly line: number,
    /** 1-based, in characters. */
    readonly column: number,
  ) {
    super(`line ${line}, column ${column}: ${reason}`);
  }
}

export class Source {
  private readonly lineStarts: number[] = [0];

  constructor(readonly text: string) {
    for (let i = 0; i < text.length; i++) if (text[i] === "\n") this.lineStarts.push(i + 1);
  }

  fail(pos: number, reason: string): never {
    const { line, column } = this.at(pos);
    throw new TemplateError(reason, line, column);
  }

  at(pos: number): { line: number; column: number } {
    let line = 0;
    while (line + 1 < this.lineStarts.length && this.lineStarts[line + 1]! <= pos) line++;
    return { line: line + 1, column: pos - this.lineStarts[line]! + 1 };
  }

  where(pos: number): string {
    const { line, column } = this.at(pos);
    return `line ${line}, column ${column}`;
  }
}
