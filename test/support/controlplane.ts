import { writeFile } from "node:fs/promises";
import https from "node:https";
import { basename, join } from "node:path";
import { CoreV1Api, Health, type KubeConfig } from "@kubernetes/client-node";
import { auditWebhookFlags, type AuditWebhookOptions } from "./audit.ts";
import { testenvBinaries } from "./binaries.ts";
import { Etcd } from "./etcd.ts";
import { keepLines } from "./keeplogs.ts";
import { kubeConfigFor } from "./kubeconfig.ts";
import { advertiseAddress } from "./network.ts";
import { createCertificateAuthority, createSigningKeyPair, issueCertificate, type CertFiles } from "./pki.ts";
import { freePort, startOnChosenPorts } from "./ports.ts";
import { ManagedProcess } from "./process.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "./reaper.ts";
import { eventually } from "./wait.ts";
import { keepConnections } from "../../internal/kube/connections.ts";

export interface ControlPlaneOptions {
  /** Turns on kube-apiserver's audit webhook backend, posting to a URL the test serves. */
  audit?: AuditWebhookOptions;
  /** More kube-apiserver flags, appended last so they win. */
  extraApiServerArgs?: string[];
  /** How long to wait for /readyz. */
  readyTimeoutMs?: number;
}

/** An identity minted for a test: a KubeConfig, and the same written to a file for kubectl. */
export interface TestIdentity {
  name: string;
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
}

const serviceClusterIpRange = "10.0.0.0/24";
const kubernetesServiceIp = "10.0.0.1";

/**
 * A real etcd and kube-apiserver on loopback, with certificates it generates itself. Start
 * one per test file or suite: it takes seconds, not milliseconds. `stop()` removes every
 * process and file it made.
 */
export class ControlPlane {
  private userCount = 0;

  private constructor(
    readonly dir: string,
    /** `https://127.0.0.1:<port>` */
    readonly server: string,
    readonly advertiseAddress: string,
    /** The admin's kubeconfig file (group system:masters). */
    readonly kubeconfigPath: string,
    private readonly servingCa: CertFiles,
    private readonly clientCa: CertFiles,
    private readonly admin: CertFiles,
    private readonly etcd: Etcd,
    private apiServer: ManagedProcess,
  ) {}

  /**
   * Starts etcd and kube-apiserver on free loopback ports. A port is free when asked for and
   * taken when bound, and a test process beside this one can take it in between: a start that
   * fails to bind is started again on new ports, up to three times.
   */
  static start(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
    return startOnChosenPorts(() => ControlPlane.startOnce(options));
  }

  private static async startOnce(options: ControlPlaneOptions): Promise<ControlPlane> {
    const dir = makeOwnedTempDir("controlplane");
    let etcd: Etcd | undefined;
    let apiServer: ManagedProcess | undefined;
    try {
      const address = advertiseAddress();
      const port = await freePort();
      const server = `https://127.0.0.1:${port}`;

      const servingCa = await createCertificateAuthority(dir, "serving-ca");
      const clientCa = await createCertificateAuthority(dir, "client-ca");
      const serving = await issueCertificate(servingCa, dir, "apiserver", {
        commonName: "kube-apiserver",
        usage: "server",
        dnsNames: ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
        ipAddresses: ["127.0.0.1", kubernetesServiceIp, address],
      });
      const admin = await issueCertificate(clientCa, dir, "admin", {
        commonName: "testenv-admin",
        organizations: ["system:masters"],
        usage: "client",
      });
      const serviceAccountKey = await createSigningKeyPair(dir, "service-account");

      etcd = await Etcd.start(dir);
      const auditFlags = options.audit ? await auditWebhookFlags(dir, options.audit) : [];
      apiServer = ManagedProcess.start({
        name: "kube-apiserver",
        command: testenvBinaries().kubeApiserver,
        args: [
          `--etcd-servers=${etcd.clientUrl}`,
          "--bind-address=127.0.0.1",
          `--secure-port=${port}`,
          `--advertise-address=${address}`,
          `--cert-dir=${dir}`,
          `--tls-cert-file=${serving.certFile}`,
          `--tls-private-key-file=${serving.keyFile}`,
          `--client-ca-file=${clientCa.certFile}`,
          "--authorization-mode=RBAC",
          "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
          `--service-account-key-file=${serviceAccountKey.publicKeyFile}`,
          `--service-account-signing-key-file=${serviceAccountKey.privateKeyFile}`,
          `--service-cluster-ip-range=${serviceClusterIpRange}`,
          // No controller-manager runs here, so nothing would create the default ServiceAccount
          // that this admission plugin demands of every Pod.
          "--disable-admission-plugins=ServiceAccount",
          "--allow-privileged=true",
          "--profiling=false",
          ...auditFlags,
          ...(options.extraApiServerArgs ?? []),
        ],
        logFile: join(dir, "kube-apiserver.log"),
      });

      const kubeconfigPath = join(dir, "admin.kubeconfig");
      const adminConfig = kubeConfigFor(server, servingCa.certPem, "testenv-admin", admin);
      await writeFile(kubeconfigPath, adminConfig.exportConfig(), { mode: 0o600 });
      const plane = new ControlPlane(
        dir,
        server,
        address,
        kubeconfigPath,
        servingCa,
        clientCa,
        admin,
        etcd,
        apiServer,
      );
      await plane.waitReady(options.readyTimeoutMs ?? 90_000);
      return plane;
    } catch (err) {
      await apiServer?.stop();
      await etcd?.stop();
      removeOwnedTempDir(dir);
      throw err;
    }
  }

  /** The pids of etcd and kube-apiserver, for tests that check nothing is left behind. */
  get pids(): { etcd: number; kubeApiserver: number } {
    return { etcd: this.etcd.pid, kubeApiserver: this.apiServer.pid };
  }

  /** A fresh admin KubeConfig (group system:masters). */
  kubeConfig(): KubeConfig {
    return keepConnections(kubeConfigFor(this.server, this.servingCa.certPem, "testenv-admin", this.admin));
  }

  /** A user authenticated by a client certificate: `name` is the CN, each group an O. */
  async mintUser(name: string, groups: string[] = []): Promise<TestIdentity> {
    const fileName = `user-${++this.userCount}`;
    const cert = await issueCertificate(this.clientCa, this.dir, fileName, {
      commonName: name,
      organizations: groups,
      usage: "client",
    });
    return this.writeIdentity(name, fileName, kubeConfigFor(this.server, this.servingCa.certPem, name, cert));
  }

  /** A user authenticated by a bearer token, such as an OIDC ID token: `name` names it only here. */
  async tokenUser(name: string, token: string): Promise<TestIdentity> {
    const fileName = `token-${++this.userCount}`;
    return this.writeIdentity(
      name,
      fileName,
      kubeConfigFor(this.server, this.servingCa.certPem, name, { token }),
    );
  }

  /**
   * A ServiceAccount's identity, through the TokenRequest API. The ServiceAccount is created
   * if it does not exist; the namespace must.
   */
  async serviceAccountToken(
    namespace: string,
    name: string,
    expirationSeconds = 3600,
  ): Promise<TestIdentity> {
    const core = this.kubeConfig().makeApiClient(CoreV1Api);
    try {
      await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
    }
    const request = await core.createNamespacedServiceAccountToken({
      namespace,
      name,
      body: { spec: { audiences: [], expirationSeconds } },
    });
    const token = request.status?.token;
    if (!token) throw new Error(`TokenRequest for ${namespace}/${name} returned no token`);
    const username = `system:serviceaccount:${namespace}:${name}`;
    const fileName = `sa-${++this.userCount}`;
    return this.writeIdentity(
      username,
      fileName,
      kubeConfigFor(this.server, this.servingCa.certPem, username, { token }),
    );
  }

  /**
   * Stops kube-apiserver and starts it again on the same port, with the same etcd: every open
   * watch connection is cut, and no state is lost. For recovery tests.
   */
  async restartApiServer(readyTimeoutMs = 90_000): Promise<void> {
    await this.apiServer.stop();
    this.apiServer = ManagedProcess.start(this.apiServer.options);
    await this.waitReady(readyTimeoutMs);
  }

  /**
   * Compacts etcd's history up to its current revision, and returns that revision. A watch that
   * etcd serves from an older resourceVersion is then answered 410 Gone. kube-apiserver's watch
   * cache keeps a history of its own: pair this with restartApiServer, whose fresh cache holds
   * none older than the restart, so that a resume from before both is answered 410 either way.
   */
  compactEtcd(): Promise<number> {
    return this.etcd.compact();
  }

  async stop(): Promise<void> {
    await this.keepRequestCounts();
    await this.apiServer.stop();
    await this.etcd.stop();
    removeOwnedTempDir(this.dir);
  }

  /**
   * Under KEEP_TEST_LOGS, what the API server was asked, by verb and resource, most first: where
   * a test's API traffic (and so the API server's share of the machine) goes.
   */
  private async keepRequestCounts(): Promise<void> {
    if (!process.env.KEEP_TEST_LOGS) return;
    const text = await this.get("/metrics").catch(() => "");
    const counts = new Map<string, number>();
    for (const line of text.split("\n")) {
      const m = /^apiserver_request_total\{(.*)\} (\d+)/.exec(line);
      if (!m) continue;
      const label = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(m[1]!)?.[1] ?? "";
      const key = `${label("verb")} ${label("group") ? `${label("group")}/` : ""}${label("resource")}${label("subresource") ? `/${label("subresource")}` : ""}`;
      counts.set(key, (counts.get(key) ?? 0) + Number(m[2]));
    }
    const lines = [...counts].sort((a, b) => b[1] - a[1]).map(([key, n]) => `${n} ${key}`);
    keepLines(`controlplane-${process.pid}`, `${basename(this.dir)}-requests.txt`, lines);
  }

  /** A raw GET as the admin, for what no typed client reads (the API server's own /metrics). */
  private async get(path: string): Promise<string> {
    const options: https.RequestOptions = {};
    await this.kubeConfig().applyToHTTPSOptions(options);
    const url = new URL(path, this.server);
    return new Promise((resolve, reject) => {
      https
        .get(url, options, (res) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => (body += chunk));
          res.on("end", () => resolve(body));
        })
        .on("error", reject);
    });
  }

  private async writeIdentity(name: string, fileName: string, kubeConfig: KubeConfig): Promise<TestIdentity> {
    const kubeconfigPath = join(this.dir, `${fileName}.kubeconfig`);
    await writeFile(kubeconfigPath, kubeConfig.exportConfig(), { mode: 0o600 });
    return { name, kubeConfig, kubeconfigPath };
  }

  private async waitReady(timeoutMs: number): Promise<void> {
    const health = new Health(this.kubeConfig());
    await eventually(
      async () => {
        this.apiServer.assertRunning();
        return await health.readyz({ timeout: 2_000 });
      },
      { timeoutMs, intervalMs: 250, description: "kube-apiserver /readyz" },
    );
  }
}
