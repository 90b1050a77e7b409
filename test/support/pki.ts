import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** A PEM certificate and key on disk, with their contents loaded for kubeconfigs. */
export interface CertFiles {
  certFile: string;
  keyFile: string;
  certPem: string;
  keyPem: string;
}

export interface LeafSpec {
  commonName: string;
  /** Each group becomes an O= attribute, which kube-apiserver reads as a group. */
  organizations?: string[];
  usage: "server" | "client";
  /** DNS names and IP addresses for a serving certificate. */
  dnsNames?: string[];
  ipAddresses?: string[];
}

const ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

/** Builds an OpenSSL -subj string; slashes and backslashes in values are escaped. */
export function subjectOf(commonName: string, organizations: string[] = []): string {
  const escape = (value: string) => value.replace(/[\\/]/g, (c) => `\\${c}`);
  return [...organizations.map((o) => `/O=${escape(o)}`), `/CN=${escape(commonName)}`].join("");
}

async function load(certFile: string, keyFile: string): Promise<CertFiles> {
  const [certPem, keyPem] = await Promise.all([readFile(certFile, "utf8"), readFile(keyFile, "utf8")]);
  return { certFile, keyFile, certPem, keyPem };
}

/** A self-signed certificate authority, valid for two days: long enough for any test run. */
export async function createCertificateAuthority(dir: string, name: string): Promise<CertFiles> {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  await run("openssl", [
    "req",
    "-x509",
    "-new",
    ...ecKey,
    "-keyout",
    keyFile,
    "-out",
    certFile,
    "-days",
    "2",
    "-subj",
    subjectOf(`gitops-reverser-testenv-${name}`),
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
  ]);
  return load(certFile, keyFile);
}

/** A leaf certificate signed by `ca`. File names are derived from `fileName`. */
export async function issueCertificate(
  ca: CertFiles,
  dir: string,
  fileName: string,
  spec: LeafSpec,
): Promise<CertFiles> {
  const certFile = join(dir, `${fileName}.crt`);
  const keyFile = join(dir, `${fileName}.key`);
  const sans = [
    ...(spec.dnsNames ?? []).map((n) => `DNS:${n}`),
    ...(spec.ipAddresses ?? []).map((ip) => `IP:${ip}`),
  ];
  const extensions = [
    "basicConstraints=critical,CA:FALSE",
    "keyUsage=critical,digitalSignature,keyEncipherment",
    `extendedKeyUsage=${spec.usage === "server" ? "serverAuth" : "clientAuth"}`,
    ...(sans.length > 0 ? [`subjectAltName=${sans.join(",")}`] : []),
  ];
  await run("openssl", [
    "req",
    "-x509",
    "-new",
    ...ecKey,
    "-CA",
    ca.certFile,
    "-CAkey",
    ca.keyFile,
    "-keyout",
    keyFile,
    "-out",
    certFile,
    "-days",
    "2",
    "-subj",
    subjectOf(spec.commonName, spec.organizations),
    ...extensions.flatMap((e) => ["-addext", e]),
  ]);
  return load(certFile, keyFile);
}

/** An ECDSA P-256 key pair for signing service-account tokens. */
export async function createSigningKeyPair(
  dir: string,
  name: string,
): Promise<{ privateKeyFile: string; publicKeyFile: string }> {
  const privateKeyFile = join(dir, `${name}.key`);
  const publicKeyFile = join(dir, `${name}.pub`);
  await run("openssl", [
    "genpkey",
    "-algorithm",
    "EC",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-out",
    privateKeyFile,
  ]);
  await run("openssl", ["pkey", "-in", privateKeyFile, "-pubout", "-out", publicKeyFile]);
  return { privateKeyFile, publicKeyFile };
}
