import { mkdirSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { join } from "node:path";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { freePort, startOnChosenPorts } from "./ports.ts";
import { ManagedProcess } from "./process.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "./reaper.ts";
import { eventually } from "./wait.ts";

const execFileAsync = promisify(execFile);

/** A key pair made with ssh-keygen: the private key in OpenSSH's format, the public line. */
export interface SshKeyPair {
  privateKey: string;
  publicKey: string;
}

/** A fresh ed25519 key pair, optionally with a passphrase. */
export async function sshKeyPair(dir: string, name: string, passphrase = ""): Promise<SshKeyPair> {
  const path = join(dir, name);
  await execFileAsync("ssh-keygen", ["-q", "-t", "ed25519", "-N", passphrase, "-C", name, "-f", path]);
  return {
    privateKey: await readFile(path, "utf8"),
    publicKey: (await readFile(`${path}.pub`, "utf8")).trim(),
  };
}

/**
 * A real OpenSSH server (Debian's sshd) on a free loopback port, as the user the tests run as.
 * Every authorized key may run only git-shell, so a client can fetch and push the bare
 * repositories it names by absolute path (the GitServer's, say) and do nothing else.
 */
export class SshServer {
  private constructor(
    readonly dir: string,
    readonly port: number,
    /** The server's host key, as a known_hosts line for 127.0.0.1 on its port. */
    readonly knownHostsLine: string,
    private readonly process: ManagedProcess,
  ) {}

  /** Starts on a port chosen for it, chosen again if another process took it first. */
  static start(options: { authorizedKeys: string[] }): Promise<SshServer> {
    return startOnChosenPorts(() => SshServer.startOnce(options));
  }

  private static async startOnce(options: { authorizedKeys: string[] }): Promise<SshServer> {
    const dir = makeOwnedTempDir("sshd");
    let proc: ManagedProcess | undefined;
    try {
      const port = await freePort();
      await execFileAsync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(dir, "host_key")]);
      const hostKey = (await readFile(join(dir, "host_key.pub"), "utf8"))
        .trim()
        .split(" ")
        .slice(0, 2)
        .join(" ");
      const forced = 'restrict,command="git-shell -c \\"$SSH_ORIGINAL_COMMAND\\""';
      await writeFile(
        join(dir, "authorized_keys"),
        options.authorizedKeys.map((k) => `${forced} ${k}\n`).join(""),
      );
      await writeFile(join(dir, "sshd_config"), config(dir, port));
      // sshd started by root wants its privilege separation directory.
      if (userInfo().uid === 0) mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
      proc = ManagedProcess.start({
        name: "sshd",
        command: "/usr/sbin/sshd",
        args: ["-D", "-e", "-f", join(dir, "sshd_config")],
        logFile: join(dir, "sshd.log"),
      });
      const server = new SshServer(dir, port, `[127.0.0.1]:${port} ${hostKey}`, proc);
      // Its own word that it bound the port: a connection could reach another process that took it.
      const started = proc;
      await eventually(
        async () => {
          started.assertRunning();
          return (await server.log()).includes(`Server listening on 127.0.0.1 port ${port}.`);
        },
        { timeoutMs: 15_000, description: "sshd to listen" },
      );
      return server;
    } catch (err) {
      await proc?.stop();
      removeOwnedTempDir(dir);
      throw err;
    }
  }

  /** The ssh:// URL of a repository at an absolute path on this machine. */
  url(repositoryPath: string): string {
    return `ssh://${userInfo().username}@127.0.0.1:${this.port}${repositoryPath}`;
  }

  /** sshd's log, for a failing test's message. */
  log(): Promise<string> {
    return readFile(join(this.dir, "sshd.log"), "utf8").catch(() => "");
  }

  async close(): Promise<void> {
    await this.process.stop();
    removeOwnedTempDir(this.dir);
  }
}

function config(dir: string, port: number): string {
  return [
    `Port ${port}`,
    "ListenAddress 127.0.0.1",
    `HostKey ${join(dir, "host_key")}`,
    `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
    `PidFile ${join(dir, "sshd.pid")}`,
    "AuthenticationMethods publickey",
    "PasswordAuthentication no",
    "KbdInteractiveAuthentication no",
    "PermitRootLogin prohibit-password",
    // The temporary directory's modes are the harness's, not a home directory's.
    "StrictModes no",
    "UsePAM no",
    "LogLevel VERBOSE",
    "AcceptEnv GIT_PROTOCOL",
    "",
  ].join("\n");
}
