// How git reaches a remote with a credential, without the credential ever being an argument or
// in a log. An HTTP Authorization header (basic or bearer) goes as an `http.extraHeader` through
// GIT_CONFIG_* environment variables; what git can only read from a file (an https CA bundle, a
// client certificate and its key, an SSH key and its known_hosts lines) goes into files in a
// private directory (0700, files 0600) made for the one call and removed after it, named by
// `http.sslCAInfo`, `http.sslCert`, `http.sslKey` or `core.sshCommand`. Host keys are checked
// strictly, always: a host not in known_hosts is refused, never learned. A header that expires
// (a GitHub App's installation token) comes as a function, asked at the start of each call, so
// a long-lived worker sends a fresh one on every push and fetch with nothing else to refresh.
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

export type RemoteAuth =
  | {
      kind: "http";
      /**
       * The Authorization header's value: `Basic …` or `Bearer …`, or a function that gives it
       * for each call (a token that expires); none for TLS alone.
       */
      authorization?: string | (() => Promise<string>);
      caCert?: string;
      clientCert?: string;
      clientKey?: string;
    }
  | { kind: "ssh"; privateKey: string; knownHosts: string; passphrase?: string };

/** An http transport with its header for this call. */
type HttpAuth = Omit<Extract<RemoteAuth, { kind: "http" }>, "authorization"> & { authorization?: string };

/** Whether git reads `url` as SSH: ssh:// or scp-like (a colon before any slash, no scheme). */
export function isSshUrl(url: string): boolean {
  return /^ssh:\/\//i.test(url) || (!url.includes("://") && /^[^/]+:/.test(url));
}

/** GIT_CONFIG_COUNT/KEY/VALUE variables for `settings`: config that no file or argument carries. */
export function configEnv(settings: [string, string][]): Record<string, string> {
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(settings.length) };
  settings.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}

/**
 * The ssh command line git runs (git hands it to a shell, so every path is single-quoted; the
 * paths are ones made here, under a mkdtemp directory, and hold no quote).
 */
export function sshCommand(keyFile: string, knownHostsFile: string, askpass: boolean): string {
  const options = [
    "-F /dev/null",
    `-i '${keyFile}'`,
    "-o IdentitiesOnly=yes",
    "-o IdentityAgent=none",
    "-o StrictHostKeyChecking=yes",
    `-o UserKnownHostsFile='${knownHostsFile}'`,
    "-o GlobalKnownHostsFile=/dev/null",
    "-o PasswordAuthentication=no",
    "-o KbdInteractiveAuthentication=no",
    "-o ConnectTimeout=30",
    // Batch mode would also refuse the askpass helper that gives a key its passphrase.
    ...(askpass ? [] : ["-o BatchMode=yes"]),
  ];
  return `ssh ${options.join(" ")}`;
}

/** Runs `work` with the environment that lets git reach the remote with `auth`. */
export async function withTransport<T>(
  auth: RemoteAuth | undefined,
  work: (env: Record<string, string>) => Promise<T>,
): Promise<T> {
  if (!auth) return work({});
  const call =
    auth.kind === "http" && typeof auth.authorization === "function"
      ? { ...auth, authorization: await auth.authorization() }
      : (auth as HttpAuth | Extract<RemoteAuth, { kind: "ssh" }>);
  if (call.kind === "http" && !call.caCert && !call.clientCert) return work(configEnv(httpSettings(call)));
  const dir = await mkdtemp(join(tmpdir(), "gitops-reverser-transport-"));
  try {
    return await work(await writeTransport(dir, call));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function httpSettings(auth: HttpAuth): [string, string][] {
  return auth.authorization ? [["http.extraHeader", `Authorization: ${auth.authorization}`]] : [];
}

/** The files an https call's TLS material is written to, as git's config names them. */
async function tlsSettings(
  auth: HttpAuth,
  secret: (name: string, content: string) => Promise<string>,
): Promise<[string, string][]> {
  const settings: [string, string][] = [];
  if (auth.caCert) settings.push(["http.sslCAInfo", await secret("ca.crt", auth.caCert)]);
  if (auth.clientCert && auth.clientKey) {
    settings.push(["http.sslCert", await secret("tls.crt", auth.clientCert)]);
    settings.push(["http.sslKey", await secret("tls.key", auth.clientKey)]);
  }
  return settings;
}

async function writeTransport(
  dir: string,
  auth: HttpAuth | Extract<RemoteAuth, { kind: "ssh" }>,
): Promise<Record<string, string>> {
  await chmod(dir, 0o700);
  const secret = async (name: string, content: string, mode = 0o600) => {
    const path = join(dir, name);
    await writeFile(path, content, { mode });
    return path;
  };
  if (auth.kind === "http") return configEnv([...httpSettings(auth), ...(await tlsSettings(auth, secret))]);
  // OpenSSH refuses a key file that does not end in a newline.
  const key = await secret(
    "identity",
    auth.privateKey.endsWith("\n") ? auth.privateKey : `${auth.privateKey}\n`,
  );
  const knownHosts = await secret("known_hosts", auth.knownHosts);
  const env = configEnv([["core.sshCommand", sshCommand(key, knownHosts, auth.passphrase !== undefined)]]);
  if (auth.passphrase === undefined) return env;
  // The passphrase stays in the environment; the helper only prints it to ssh.
  const askpass = await secret(
    "askpass",
    '#!/bin/sh\nprintf "%s\\n" "$GITOPS_REVERSER_SSH_PASSPHRASE"\n',
    0o700,
  );
  return {
    ...env,
    SSH_ASKPASS: askpass,
    SSH_ASKPASS_REQUIRE: "force",
    DISPLAY: "none",
    GITOPS_REVERSER_SSH_PASSPHRASE: auth.passphrase,
  };
}
