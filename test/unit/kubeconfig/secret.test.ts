import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { stringify } from "yaml";
import {
  readKubeconfigSecret,
  type KubeconfigRefusal,
  type SafeKubeconfig,
} from "../../../internal/kubeconfig/secret.ts";

const b64 = (text: string) => Buffer.from(text).toString("base64");
const pem = (label: string, body: string) => `-----BEGIN ${label}-----\n${body}\n-----END ${label}-----\n`;
const caData = b64(
  pem("CERTIFICATE", "MIIBdzCCAR2gAwIBAgIBADAKBggqhkjOPQQDAjAjMSEwHwYDVQQDDBhrM3Mtc2VydmVy"),
);
const certData = b64(
  pem("CERTIFICATE", "MIIBkTCCATegAwIBAgIIZ2xDbGllbnQwCgYIKoZIzj0EAwIwIzEhMB8GA1UEAwwYazNz"),
);
const keyData = b64(pem("EC PRIVATE KEY", "MHcCAQEEIKEY-MATERIAL-do-not-leak"));
const token = "eyJhbGciOiJSUzI1NiJ9.service-account-TOKEN-do-not-leak";
const allowNothing = { allowExec: false, allowInsecure: false };
const allowEverything = { allowExec: true, allowInsecure: true };

/** A kubeconfig as kubectl writes one: a cluster with its CA, and a certificate user and a token user. */
function kubeconfig(cluster: object = {}, user: object = {}, extra: object = {}) {
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: "prod",
        cluster: {
          server: "https://prod.example.com:6443",
          "certificate-authority-data": caData,
          ...cluster,
        },
      },
    ],
    users: [
      { name: "admin", user: { "client-certificate-data": certData, "client-key-data": keyData, ...user } },
      { name: "reader", user: { token } },
    ],
    contexts: [{ name: "prod-admin", context: { cluster: "prod", user: "admin", namespace: "tenant-a" } }],
    "current-context": "prod-admin",
    ...extra,
  };
}
const asSecret = (config: object, key = "value") => ({ [key]: b64(stringify(config)) });

function loaded(result: SafeKubeconfig | KubeconfigRefusal): SafeKubeconfig {
  assert.ok(
    "kubeConfig" in result,
    `expected a kubeconfig, got ${"reason" in result ? result.message : "?"}`,
  );
  return result;
}
function refused(result: SafeKubeconfig | KubeconfigRefusal, reason: KubeconfigRefusal["reason"]): string {
  assert.ok("reason" in result, "expected a refusal");
  assert.equal(result.reason, reason, result.message);
  return result.message;
}

describe("readKubeconfigSecret", () => {
  it("returns the current context's server, user and namespace", () => {
    const { kubeConfig, server } = loaded(
      readKubeconfigSecret(asSecret(kubeconfig()), undefined, allowNothing),
    );
    assert.equal(server, "https://prod.example.com:6443");
    assert.equal(kubeConfig.getCurrentUser()?.keyData, keyData);
    assert.equal(kubeConfig.getCurrentCluster()?.caData, caData);
    assert.equal(kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace, "tenant-a");
  });

  it("reads value, then value.yaml, unless key names one", () => {
    const at = (server: string) => b64(stringify(kubeconfig({ server })));
    const data = {
      value: at("https://a:6443"),
      "value.yaml": at("https://b:6443"),
      custom: at("https://c:6443"),
    };
    const serverOf = (d: Record<string, string>, key?: string) =>
      loaded(readKubeconfigSecret(d, key, allowNothing)).server;
    assert.equal(serverOf(data), "https://a:6443");
    assert.equal(serverOf({ "value.yaml": data["value.yaml"] }), "https://b:6443");
    assert.equal(serverOf(data, "custom"), "https://c:6443");
  });

  it("refuses a missing key, naming the keys it looked for and the keys present", () => {
    const data = { config: b64(stringify(kubeconfig())) };
    assert.match(
      refused(readKubeconfigSecret(data, undefined, allowNothing), "KeyNotFound"),
      /no key value or value\.yaml; its keys are: config\./,
    );
    assert.match(
      refused(readKubeconfigSecret({ value: data.config }, "kubeconfig", allowNothing), "KeyNotFound"),
      /no key kubeconfig; its keys are: value\./,
    );
    refused(readKubeconfigSecret(data, "constructor", allowNothing), "KeyNotFound");
  });

  it("reads a JSON kubeconfig as well as YAML", () => {
    loaded(readKubeconfigSecret({ value: b64(JSON.stringify(kubeconfig())) }, undefined, allowNothing));
  });

  it("refuses unparsable YAML without quoting it", () => {
    const broken = `users:\n- name: admin\n  user:\n    token: ${token}\n   bad: [indent\n`;
    const message = refused(
      readKubeconfigSecret({ value: b64(broken) }, undefined, allowNothing),
      "InvalidKubeconfig",
    );
    assert.match(message, /not valid YAML \(line \d+\)/);
    assert.ok(!message.includes(token));
  });

  it("refuses a kubeconfig with no current-context, or whose context names a missing cluster or user", () => {
    const refusal = (config: object) =>
      refused(readKubeconfigSecret(asSecret(config), undefined, allowNothing), "InvalidKubeconfig");
    assert.match(refusal(kubeconfig({}, {}, { "current-context": "" })), /no current-context/);
    assert.match(refusal(kubeconfig({}, {}, { "current-context": "staging" })), /no context "staging"/);
    const contextTo = (context: object) =>
      kubeconfig({}, {}, { contexts: [{ name: "prod-admin", context }] });
    assert.match(refusal(contextTo({ cluster: "dev", user: "admin" })), /no cluster "dev"/);
    assert.match(refusal(contextTo({ cluster: "prod", user: "ghost" })), /no user "ghost"/);
    assert.match(refusal(contextTo({ cluster: "prod" })), /does not name both a cluster and a user/);
    assert.match(refusal(kubeconfig({ server: "" })), /cluster "prod" has no server/);
    assert.match(refusal([]), /not a YAML or JSON object/);
  });

  it("refuses a certificate-authority file path", () => {
    const config = kubeconfig({
      "certificate-authority": "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
    });
    assert.match(
      refused(readKubeconfigSecret(asSecret(config), undefined, allowEverything), "UnsafeKubeconfig"),
      /cluster "prod" sets certificate-authority, .*use certificate-authority-data/,
    );
  });

  it("refuses a client-certificate or client-key file path", () => {
    for (const field of ["client-certificate", "client-key"]) {
      const config = kubeconfig({}, { [field]: "/etc/kubernetes/pki/admin.pem" });
      assert.match(
        refused(readKubeconfigSecret(asSecret(config), undefined, allowEverything), "UnsafeKubeconfig"),
        new RegExp(`user "admin" sets ${field}, which names a file on the operator's disk`),
      );
    }
  });

  it("refuses a token file path in either spelling", () => {
    for (const field of ["tokenFile", "token-file"]) {
      const config = kubeconfig({}, { [field]: "/var/run/secrets/kubernetes.io/serviceaccount/token" });
      assert.match(
        refused(readKubeconfigSecret(asSecret(config), undefined, allowEverything), "UnsafeKubeconfig"),
        new RegExp(`sets ${field}, .*use token instead`),
      );
    }
  });

  it("refuses auth-provider, naming a file its config would read", () => {
    const provider = (config: object) =>
      refused(
        readKubeconfigSecret(
          asSecret(kubeconfig({}, { "auth-provider": { name: "oidc", config } })),
          undefined,
          allowEverything,
        ),
        "UnsafeKubeconfig",
      );
    assert.match(
      provider({ "idp-certificate-authority": "/etc/oidc-ca.pem" }),
      /auth-provider config idp-certificate-authority/,
    );
    assert.match(provider({ "id-token": token }), /auth-provider, whose plugins are deprecated/);
  });

  it("refuses exec auth unless allowed", () => {
    const exec = {
      apiVersion: "client.authentication.k8s.io/v1",
      command: "aws",
      args: ["eks", "get-token"],
    };
    const data = asSecret(kubeconfig({}, { exec }));
    assert.match(
      refused(readKubeconfigSecret(data, undefined, allowNothing), "UnsafeKubeconfig"),
      /uses exec/,
    );
    const { kubeConfig } = loaded(
      readKubeconfigSecret(data, undefined, { allowExec: true, allowInsecure: false }),
    );
    assert.equal((kubeConfig.getCurrentUser()?.exec as { command?: string }).command, "aws");
  });

  it("refuses insecure TLS unless allowed", () => {
    const data = asSecret(kubeconfig({ "insecure-skip-tls-verify": true }));
    assert.match(
      refused(readKubeconfigSecret(data, undefined, allowNothing), "UnsafeKubeconfig"),
      /sets insecure-skip-tls-verify/,
    );
    const { kubeConfig } = loaded(
      readKubeconfigSecret(data, undefined, { allowExec: false, allowInsecure: true }),
    );
    assert.equal(kubeConfig.getCurrentCluster()?.skipTLSVerify, true);
  });

  it("checks only the current context's cluster and user, and returns nothing else", () => {
    // client-node's loader reads a token-file as it loads: the unchecked user is never loaded,
    // or this path would fail with ENOENT.
    const base = kubeconfig();
    const config = {
      ...base,
      users: [...base.users, { name: "files", user: { "token-file": "/nonexistent/token" } }],
      contexts: [...base.contexts, { name: "other", context: { cluster: "prod", user: "files" } }],
    };
    const { kubeConfig } = loaded(readKubeconfigSecret(asSecret(config), undefined, allowNothing));
    assert.deepEqual(
      kubeConfig.getContexts().map((c) => c.name),
      ["prod-admin"],
    );
    assert.deepEqual(
      kubeConfig.getUsers().map((u) => u.name),
      ["admin"],
    );
  });

  it("never puts a kubeconfig credential in a refusal message", () => {
    const configs = [
      kubeconfig({ "insecure-skip-tls-verify": true }, { token }),
      kubeconfig({}, { exec: { command: "get-token", env: [{ name: "SECRET", value: token }] } }),
      kubeconfig({}, { "client-key": "/k", password: token }),
      kubeconfig({}, {}, { "current-context": "missing" }),
    ];
    for (const config of configs) {
      const result = readKubeconfigSecret(asSecret(config), undefined, allowNothing);
      assert.ok("reason" in result);
      for (const secret of [token, keyData, certData, caData]) assert.ok(!result.message.includes(secret));
    }
  });
});
