// The characters that break YAML readers, for the round-trip property tests: each class that
// docs/sanitize.md names, and which of them kustomize cannot carry through its own output.

/**
 * Characters a careless writer gets wrong: C0 controls (tab, CR, LF, ESC), DEL, C1 controls
 * (NEL among them), the no-break space, the Unicode line and paragraph separators, the BOM, the
 * noncharacters U+FFFE and U+FFFF, YAML's quotes and escapes, its indicators, an astral
 * character and an accented letter.
 */
export const awkwardCharacters = [
  "\u0001",
  "\t",
  "\r",
  "\n",
  "\u001b",
  "\u007f",
  "\u0080",
  "\u0085",
  "\u009f",
  "\u00a0",
  "\u2028",
  "\u2029",
  "\ufeff",
  "\ufffe",
  "\uffff",
  '"',
  "\\",
  "'",
  ": ",
  " #",
  "😀",
  "é",
] as const;

/**
 * kustomize reads every one of them from our files as it is. But it prints what it built with
 * its own YAML encoder, which writes DEL, the C1 controls, U+2028, U+2029, U+FFFE and U+FFFF
 * unescaped, however the input spelled them: it then fails reading its own output ("control
 * characters are not allowed"), or its reader, like Flux's, takes NEL and the separators for
 * line breaks. No file carries those through kustomize's output.
 */
export const kustomizeCannotCarry: ReadonlySet<string> = new Set([
  "\u007f",
  "\u0080",
  "\u0085",
  "\u009f",
  "\u2028",
  "\u2029",
  "\ufffe",
  "\uffff",
]);

/** Who reads a value back: kustomize (a Flux folder) or kubectl (Go's YAML reader, then JSON). */
export type Reader = "kustomize" | "kubectl";

/**
 * A value of 1 to 12 characters, half of them awkward ones the reader can carry, half printable
 * ASCII, drawn from `random`.
 */
export function awkwardValue(random: () => number, through: Reader): string {
  const pool =
    through === "kustomize"
      ? awkwardCharacters.filter((ch) => !kustomizeCannotCarry.has(ch))
      : awkwardCharacters;
  let value = "";
  const length = 1 + Math.floor(random() * 12);
  for (let i = 0; i < length; i++) {
    value +=
      random() < 0.5
        ? pool[Math.floor(random() * pool.length)]
        : String.fromCharCode(0x21 + Math.floor(random() * 94));
  }
  return value;
}
