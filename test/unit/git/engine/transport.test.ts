import assert from "node:assert/strict";
import { stat } from "node:fs/promises";
import { dirname } from "node:path";
import { describe, it } from "node:test";
import { withTransport, type RemoteAuth } from "../../../../internal/git/engine/transport.ts";

const clientKey = "-----BEGIN PRIVATE KEY-----\nKEY-MATERIAL\n-----END PRIVATE KEY-----\n";
const clientCert = "-----BEGIN CERTIFICATE-----\nCERT\n-----END CERTIFICATE-----\n";
const caCert = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";

/** The git config settings a GIT_CONFIG_* environment carries, by key. */
function settingsOf(env: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < Number(env.GIT_CONFIG_COUNT ?? 0); i++) {
    out[env[`GIT_CONFIG_KEY_${i}`]!] = env[`GIT_CONFIG_VALUE_${i}`]!;
  }
  return out;
}

describe("withTransport over http(s)", () => {
  it("sends the Authorization header as git config in the environment, with no file", async () => {
    const auth: RemoteAuth = { kind: "http", authorization: "Bearer tok-1" };
    const settings = await withTransport(auth, (env) => Promise.resolve(settingsOf(env)));
    assert.deepEqual(settings, { "http.extraHeader": "Authorization: Bearer tok-1" });
  });

  it("gives the CA, client certificate and key to git as paths to 0600 files in a 0700 directory", async () => {
    const auth: RemoteAuth = { kind: "http", caCert, clientCert, clientKey };
    let dir = "";
    await withTransport(auth, async (env) => {
      for (const value of Object.values(env)) {
        assert.ok(!value.includes("KEY-MATERIAL"), "no key material in the environment");
      }
      const settings = settingsOf(env);
      assert.equal(settings["http.extraHeader"], undefined, "TLS alone sends no header");
      const files = [settings["http.sslCAInfo"], settings["http.sslCert"], settings["http.sslKey"]];
      dir = dirname(files[0]!);
      assert.equal((await stat(dir)).mode & 0o777, 0o700);
      for (const file of files) {
        assert.equal(dirname(file!), dir);
        assert.equal((await stat(file!)).mode & 0o777, 0o600, file);
      }
    });
    await assert.rejects(stat(dir), { code: "ENOENT" }, "the directory is removed after the call");
  });

  it("writes no client certificate without its key", async () => {
    const settings = await withTransport({ kind: "http", caCert, clientCert }, (env) =>
      Promise.resolve(settingsOf(env)),
    );
    assert.deepEqual(Object.keys(settings), ["http.sslCAInfo"]);
  });
});
