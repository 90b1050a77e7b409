// Durations and byte quantities as users write them in flags and specs.

const durationUnits: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Parses a Go duration ("5s", "1m30s", "0s", "0") into milliseconds. */
export function parseDuration(text: string): number {
  if (text === "0") return 0;
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text) {
    throw new Error(`invalid duration "${text}": use Go's notation, such as 5s, 1m30s or 0s`);
  }
  return parts.reduce((total, [, value, unit]) => total + Number(value) * durationUnits[unit!]!, 0);
}

const quantitySuffixes: Record<string, number> = {
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
};

/** Parses a Kubernetes-style byte quantity ("8Mi", "512Ki", "10M", "1024") into bytes. */
export function parseQuantity(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|k|M|G)?$/.exec(text);
  if (!match)
    throw new Error(`invalid quantity "${text}": use a number with an optional Ki, Mi, Gi, k, M or G suffix`);
  return Math.round(Number(match[1]) * quantitySuffixes[match[2] ?? ""]!);
}
