// The whole operator mirrors into a repository served over HTTPS by a private CA that requires a
// client certificate: the credential Secret's ca.crt, tls.crt and tls.key carry it end to end.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { gitBranches, gitTargets } from "../../../generated/v1alpha3/index.ts";
import { applyMirror } from "../../support/mirror.ts";
import { mirrorUser, startMirrorEnvironment, type MirrorEnvironment } from "../../support/mirrorenv.ts";
import { createCertificateAuthority, issueCertificate, type CertFiles } from "../../support/pki.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { eventually } from "../../support/wait.ts";
import { condition } from "../controllers/helpers.ts";

const namespace = "https-mirror";
const withoutCertificate = "https-no-client-cert";
const configMaps = [{ apiGroups: [""], resources: ["configmaps"] }];

describe("mirroring over HTTPS with a private CA and a client certificate", () => {
  let scratch: string;
  let ca: CertFiles;
  let client: CertFiles;
  let env: MirrorEnvironment;

  before(async () => {
    scratch = makeOwnedTempDir("https-mirror");
    ca = await createCertificateAuthority(scratch, "git-ca");
    const serving = await issueCertificate(ca, scratch, "git-server", {
      commonName: "git-server",
      usage: "server",
      ipAddresses: ["127.0.0.1"],
    });
    client = await issueCertificate(ca, scratch, "git-client", { commonName: "operator", usage: "client" });
    env = await startMirrorEnvironment(
      [namespace, withoutCertificate],
      {},
      { gitTls: { cert: serving.certPem, key: serving.keyPem, clientCa: ca.certPem } },
    );
  });
  after(async () => {
    await env?.stop();
    removeOwnedTempDir(scratch);
  });

  it("a ConfigMap reaches the repository with ca.crt, tls.crt and tls.key in the Secret", async () => {
    assert.match(env.url, /^https:\/\/127\.0\.0\.1:\d+\//);
    const secret = {
      ...mirrorUser,
      "ca.crt": ca.certPem,
      "tls.crt": client.certPem,
      "tls.key": client.keyPem,
    };
    await env.core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "settings" }, data: { mode: "private-ca" } },
    });
    await applyMirror(env.kc, namespace, env.url, secret, [
      { name: "apps", path: "apps", rules: configMaps },
    ]);

    const path = `apps/${namespace}/configmaps/settings.yaml`;
    const content = await eventually(() => env.git.fileAt("state", "main", path), {
      timeoutMs: 60_000,
      description: "the ConfigMap in the repository",
    });
    assert.match(content, /mode: private-ca/);
    const target = await eventually(
      async () => {
        const found = await gitTargets(env.kc).get(namespace, "apps");
        return condition(found, "Ready")?.status === "True" && found;
      },
      { timeoutMs: 60_000, description: "the GitTarget Ready" },
    );
    assert.equal(condition(target, "Ready")?.status, "True");
  });

  it("without a client certificate the GitBranch says the server asks for one", async () => {
    await applyMirror(env.kc, withoutCertificate, env.url, { ...mirrorUser, "ca.crt": ca.certPem }, [
      { name: "apps", path: "other", rules: configMaps },
    ]);
    const branch = await eventually(
      async () => {
        const found = await gitBranches(env.kc)
          .get(withoutCertificate, "main")
          .catch(() => undefined);
        return (found?.status?.conditions ?? []).some((c) => /client certificate/.test(c.message)) && found;
      },
      { timeoutMs: 30_000, description: "a GitBranch condition about the client certificate" },
    );
    const ready = condition(branch, "Ready");
    assert.equal(ready?.status, "False");
    assert.equal(ready?.reason, "PushSessionFailed");
    assert.match(ready?.message ?? "", /tls\.crt and tls\.key/);
    assert.equal(condition(branch, "Stalled")?.status, "True", "a human must fix the Secret");
  });
});
