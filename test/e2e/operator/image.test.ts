// What ships is what is tested: the operator's image (the Dockerfile's final stage, built as a
// root filesystem by hack/image/rootfs.ts, since these machines have no container engine and no
// registry), run as the chart's Deployment runs it (test/support/image.ts): its uid and gid,
// a read-only root with the emptyDir on /tmp, no new privileges, the in-cluster configuration
// from a projected ServiceAccount token, and the chart's RBAC. OpenSSH refuses to run for a uid
// with no passwd entry, so an image without one fails the SSH half here.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig, type V1Deployment } from "@kubernetes/client-node";
import { builtImage } from "../../../hack/image/rootfs.ts";
import { kustomizeBinary, repoRoot } from "../../support/binaries.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { helmTemplate } from "../../support/helm.ts";
import { podRuntime, startImageProcess } from "../../support/image.ts";
import { installCrds } from "../../support/manifests.ts";
import { applyMirror } from "../../support/mirror.ts";
import type { OperatorProcess } from "../../support/operator.ts";
import { createCertificateAuthority, issueCertificate } from "../../support/pki.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { operatorNamespace, shippedOperatorIdentity } from "../../support/shippedrbac.ts";
import { SshServer, sshKeyPair } from "../../support/sshserver.ts";
import { eventually } from "../../support/wait.ts";

const user = { username: "gitops", password: "s3cret" };
const configMaps = [{ apiGroups: [""], resources: ["configmaps"] }];
const namespaces = ["image-ssh", "image-https"] as const;

describe(
  "the operator's image, run as the chart runs it",
  { skip: !isRoot() && "needs root, as a container runtime does" },
  () => {
    let scratch: string;
    let plane: ControlPlane;
    let kc: KubeConfig;
    let git: GitServer;
    let sshd: SshServer;
    let caPem: string;
    let operator: OperatorProcess;
    let privateKey: string;

    before(async () => {
      scratch = makeOwnedTempDir("image");
      const ca = await createCertificateAuthority(scratch, "git-ca");
      caPem = ca.certPem;
      const serving = await issueCertificate(ca, scratch, "git-server", {
        commonName: "git-server",
        usage: "server",
        ipAddresses: ["127.0.0.1"],
      });
      const client = await sshKeyPair(scratch, "client");
      privateKey = client.privateKey;
      [plane, git, sshd] = await Promise.all([
        ControlPlane.start(),
        GitServer.start({ users: [user], tls: { cert: serving.certPem, key: serving.keyPem } }),
        SshServer.start({ authorizedKeys: [client.publicKey] }),
      ]);
      kc = plane.kubeConfig();
      await installCrds(kc);
      const identity = await shippedOperatorIdentity(plane, kc);
      // The bundle the image's build stage makes, attached where the final stage copies it.
      const bundleDir = join(scratch, "dist");
      execFileSync(process.execPath, [join(repoRoot, "hack/bundle.ts"), join(bundleDir, "operator.mjs")], {
        stdio: "inherit",
      });
      // As a user installs it to mirror with its own identity from these two namespaces.
      const values = ["--set", `inClusterKubeProviders={${namespaces.map((ns) => `${ns}/self`).join(",")}}`];
      const deployment = (await helmTemplate(plane, operatorNamespace, ...values)).objects.find(
        (o) => o.kind === "Deployment" && o.metadata.name === "gitops-reverser",
      ) as unknown as V1Deployment;
      const api = new URL(plane.server);
      operator = startImageProcess({
        image: builtImage(),
        outputs: { bundleDir, kustomize: kustomizeBinary() },
        pod: podRuntime(deployment),
        // On loopback beside other tests: ports the kernel picks, read back from the log.
        args: ["--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0"],
        fields: { "metadata.namespace": operatorNamespace },
        serviceAccount: {
          token: identity.kubeConfig.getCurrentUser()!.token!,
          ca: Buffer.from(identity.kubeConfig.getCurrentCluster()!.caData!, "base64").toString("utf8"),
          namespace: operatorNamespace,
          host: api.hostname,
          port: Number(api.port),
        },
        dir: join(scratch, "pod"),
      });
    });
    after(async () => {
      await operator?.process.stop();
      await sshd?.close();
      await git?.close();
      await plane?.stop();
      removeOwnedTempDir(scratch);
    });

    /** Mirrors a ConfigMap of `namespace` through `url` and returns its file as the repository holds it. */
    async function mirrored(
      namespace: string,
      url: string,
      secret: Record<string, string>,
      repository: string,
    ) {
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
      await kc.makeApiClient(CoreV1Api).createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: "settings" }, data: { transport: namespace } },
      });
      await applyMirror(kc, namespace, url, secret, [{ name: "apps", path: "apps", rules: configMaps }]);
      return eventually(() => git.fileAt(repository, "main", `apps/${namespace}/configmaps/settings.yaml`), {
        timeoutMs: 90_000,
        description: () =>
          `the ConfigMap of ${namespace} in Git; the operator's last lines:\n${operator.process.logTail()}`,
      });
    }

    it("the image runs as its own uid and mirrors over SSH and HTTPS", async () => {
      const probes = await operator.port("probes");
      // The process is the pod's: uid and gid 65532 (the chart's), no new privileges, no capabilities.
      const status = readFileSync(`/proc/${operator.process.pid}/status`, "utf8");
      const field = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, "m").exec(status)?.[1]?.split(/\s+/);
      assert.deepEqual(field("Uid"), ["65532", "65532", "65532", "65532"]);
      assert.deepEqual(field("Gid"), ["65532", "65532", "65532", "65532"]);
      assert.deepEqual(field("NoNewPrivs"), ["1"]);
      assert.deepEqual(field("CapEff"), ["0000000000000000"]);
      await eventually(async () => (await fetch(`http://127.0.0.1:${probes}/readyz`)).status === 200, {
        timeoutMs: 60_000,
        description: () => `/readyz 200; last lines:\n${operator.process.logTail()}`,
      });

      await git.createRepository("over-ssh");
      const overSsh = await mirrored(
        "image-ssh",
        sshd.url(git.repositoryPath("over-ssh")),
        { "ssh-privatekey": privateKey, known_hosts: `${sshd.knownHostsLine}\n` },
        "over-ssh",
      );
      assert.match(overSsh, /transport: image-ssh/);

      const httpsUrl = await git.createRepository("over-https");
      assert.match(httpsUrl, /^https:/);
      const overHttps = await mirrored("image-https", httpsUrl, { ...user, "ca.crt": caPem }, "over-https");
      assert.match(overHttps, /transport: image-https/);
    });
  },
);

function isRoot(): boolean {
  return process.getuid?.() === 0;
}
