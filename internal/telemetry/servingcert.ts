// The metrics server's TLS certificate, as controller-runtime's secure metrics serving has it:
// with no --metrics-cert-path, a self-signed certificate made in memory at start (node:crypto
// makes the key; the X.509 around it is a few DER structures, written here rather than pulled
// in as a dependency); with one, the files there, read again whenever that folder changes, so
// a rotated Secret (or cert-manager's renewal) is served without a restart.
import { generateKeyPairSync, randomBytes, sign, X509Certificate, createPrivateKey } from "node:crypto";
import { watch, type FSWatcher } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";

/** A PEM certificate and its PEM private key, as node's TLS options take them. */
export interface ServingCertificate {
  cert: string;
  key: string;
}

/** A DER element: tag, definite length, content. */
function der(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const length: number[] = [];
  for (let n = body.length; n > 0; n >>= 8) length.unshift(n & 0xff);
  const prefix = body.length < 0x80 ? [body.length] : [0x80 | length.length, ...length];
  return Buffer.concat([Buffer.from([tag, ...prefix]), body]);
}

const sequence = (...parts: Buffer[]) => der(0x30, ...parts);

function objectId(dotted: string): Buffer {
  const [first, second, ...rest] = dotted.split(".").map(Number) as [number, number, ...number[]];
  const bytes = [40 * first + second];
  for (const arc of rest) {
    const septets = [arc & 0x7f];
    for (let n = arc >> 7; n > 0; n >>= 7) septets.unshift(0x80 | (n & 0x7f));
    bytes.push(...septets);
  }
  return der(0x06, Buffer.from(bytes));
}

/** UTCTime before 2050, GeneralizedTime from then on, as RFC 5280 says. */
function time(date: Date): Buffer {
  const iso = date.toISOString().replace(/[-:T]/g, "").slice(0, 14) + "Z";
  return date.getUTCFullYear() < 2050 ? der(0x17, Buffer.from(iso.slice(2))) : der(0x18, Buffer.from(iso));
}

const commonName = (name: string) =>
  sequence(der(0x31, sequence(objectId("2.5.4.3"), der(0x0c, Buffer.from(name)))));

function ipBytes(address: string): Buffer {
  return Buffer.from(address.split(".").map(Number));
}

/**
 * A self-signed ECDSA P-256 serving certificate for `dnsNames` and IPv4 `ipAddresses`, valid
 * from an hour ago for a year: what a scraper that skips verification (a ServiceMonitor's
 * insecureSkipVerify) accepts, and what a restart replaces.
 */
/**
 * A certificate serial from random bytes, as DER's INTEGER needs it: positive (the top bit
 * clear) and minimal (no leading zero byte, which X.509 parsers refuse as illegal padding).
 */
export function serialFrom(random: Buffer): Buffer {
  const serial = Buffer.from(random);
  serial[0] = (serial[0]! & 0x7f) | 0x01;
  return serial;
}

export function selfSignedCertificate(
  name: string,
  dnsNames: string[],
  ipAddresses: string[],
  now = new Date(),
): ServingCertificate {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const signatureAlgorithm = sequence(objectId("1.2.840.10045.4.3.2"));
  const serial = serialFrom(randomBytes(16));
  const altNames = sequence(
    ...dnsNames.map((n) => der(0x82, Buffer.from(n))),
    ...ipAddresses.map((ip) => der(0x87, ipBytes(ip))),
  );
  const extension = (id: string, critical: boolean, value: Buffer) =>
    sequence(objectId(id), ...(critical ? [der(0x01, Buffer.from([0xff]))] : []), der(0x04, value));
  const extensions = sequence(
    extension("2.5.29.19", true, sequence()),
    extension("2.5.29.15", true, der(0x03, Buffer.from([0x07, 0x80]))),
    extension("2.5.29.37", false, sequence(objectId("1.3.6.1.5.5.7.3.1"))),
    extension("2.5.29.17", false, altNames),
  );
  const year = 365 * 24 * 3600 * 1000;
  const tbs = sequence(
    der(0xa0, der(0x02, Buffer.from([2]))),
    der(0x02, serial),
    signatureAlgorithm,
    commonName(name),
    sequence(time(new Date(now.getTime() - 3600 * 1000)), time(new Date(now.getTime() + year))),
    commonName(name),
    publicKey.export({ type: "spki", format: "der" }),
    der(0xa3, extensions),
  );
  const signature = sign("sha256", tbs, privateKey);
  const certificate = sequence(tbs, signatureAlgorithm, der(0x03, Buffer.from([0]), signature));
  const lines = certificate.toString("base64").match(/.{1,64}/g)!;
  return {
    cert: `-----BEGIN CERTIFICATE-----\n${lines.join("\n")}\n-----END CERTIFICATE-----\n`,
    key: privateKey.export({ type: "pkcs8", format: "pem" }) as string,
  };
}

/** Reads the pair in `dir`; why it cannot be served, if it cannot (a half-written rotation). */
export async function readCertificate(
  dir: string,
  certName: string,
  keyName: string,
): Promise<ServingCertificate | Error> {
  try {
    const [cert, key] = await Promise.all([
      readFile(join(dir, certName), "utf8"),
      readFile(join(dir, keyName), "utf8"),
    ]);
    if (!new X509Certificate(cert).checkPrivateKey(createPrivateKey(key)))
      return new Error(`${keyName} is not the key of ${certName}`);
    return { cert, key };
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

/**
 * Calls `changed` with the pair in `dir` each time something in `dir` changes (a Secret
 * volume swaps its ..data link; a file written in place), or `failed` when the new pair cannot
 * be read, so the last good one stays served. Changes that come together are read once.
 */
export function watchCertificate(
  dir: string,
  certName: string,
  keyName: string,
  changed: (certificate: ServingCertificate) => void,
  failed: (err: Error) => void,
): FSWatcher {
  let pending: NodeJS.Timeout | undefined;
  const reload = async () => {
    pending = undefined;
    const read = await readCertificate(dir, certName, keyName);
    if (read instanceof Error) failed(read);
    else changed(read);
  };
  const watcher = watch(dir, () => {
    pending ??= setTimeout(() => void reload(), 100);
  });
  watcher.on("close", () => clearTimeout(pending));
  // The folder gone (its volume unmounted): the last pair stays served, and the process runs on.
  watcher.on("error", failed);
  return watcher;
}
