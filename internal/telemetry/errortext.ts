// How an error is said, in a log field, a condition's message or an Event: its message alone
// (an Error's name, "Error: ", says nothing a reader needs), or what a thrown non-Error reads as.
// One helper, so every message reads the same way.

/** The text of `err`, whatever was thrown. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
