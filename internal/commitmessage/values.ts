// Values as Go's templates see them: truth, field lookup and type names.

/** Go's truth: false, 0, "", nil and an empty list are false; everything else is true. */
export function truthy(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === "boolean") return value;
  if (typeof value === "number") return value !== 0;
  if (typeof value === "string") return value !== "";
  if (Array.isArray(value)) return value.length > 0;
  return true;
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** An own data property only: never the prototype, never a getter, so lookups run no code. */
export function field(value: unknown, name: string): unknown {
  if (!isObject(value)) return undefined;
  const descriptor = Object.getOwnPropertyDescriptor(value, name);
  return descriptor && "value" in descriptor ? descriptor.value : undefined;
}

export const lookup = (value: unknown, path: readonly string[]): unknown => path.reduce(field, value);

export const bytesOf = (text: string) => Buffer.byteLength(text, "utf8");

export function goType(value: unknown): string {
  if (value === undefined || value === null) return "<nil>";
  if (typeof value === "number") return Number.isInteger(value) ? "int" : "float64";
  if (typeof value === "boolean") return "bool";
  if (typeof value === "string") return "string";
  return Array.isArray(value) ? "[]interface {}" : "map[string]interface {}";
}
