import { quiet } from "../../support/logger.ts";
import assert from "node:assert/strict";
import { createPrivateKey, X509Certificate } from "node:crypto";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { Registry } from "prom-client";
import {
  readCertificate,
  selfSignedCertificate,
  serialFrom,
} from "../../../internal/telemetry/servingcert.ts";
import { serveMetrics } from "../../../internal/telemetry/servers.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { scrape } from "../../support/scrape.ts";
import { eventually } from "../../support/wait.ts";

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;

describe("the metrics serving certificate", () => {
  let dir: string;
  before(() => {
    dir = makeOwnedTempDir("servingcert-test");
  });
  after(() => removeOwnedTempDir(dir));

  it("a serial is a positive, minimal DER integer whatever the random bytes: never a leading zero byte", () => {
    for (const first of [0x00, 0x01, 0x7f, 0x80, 0xff]) {
      const serial = serialFrom(Buffer.from([first, 0x10, 0x20]));
      assert.ok(serial[0]! >= 0x01 && serial[0]! <= 0x7f, `from ${first}: ${serial[0]}`);
      assert.deepEqual([...serial.subarray(1)], [0x10, 0x20]);
    }
  });

  it("made in memory is a server certificate for the names asked, with its own key, valid now", () => {
    const now = new Date("2026-12-03T12:00:00Z");
    const { cert, key } = selfSignedCertificate(
      "gitops-reverser-metrics",
      ["localhost", "pod-1"],
      ["127.0.0.1"],
      now,
    );
    const x509 = new X509Certificate(cert);
    assert.equal(x509.subject, "CN=gitops-reverser-metrics");
    assert.equal(x509.issuer, x509.subject, "self-signed");
    assert.ok(x509.verify(x509.publicKey), "signed by its own key");
    assert.ok(x509.checkPrivateKey(createPrivateKey(key)));
    assert.equal(x509.subjectAltName, "DNS:localhost, DNS:pod-1, IP Address:127.0.0.1");
    assert.equal(x509.ca, false);
    assert.deepEqual(x509.keyUsage, ["1.3.6.1.5.5.7.3.1"], "for TLS servers");
    assert.ok(new Date(x509.validFrom) < now && now < new Date(x509.validTo));
    assert.notEqual(
      x509.serialNumber,
      new X509Certificate(selfSignedCertificate("x", ["localhost"], [], now).cert).serialNumber,
      "each has its own serial",
    );
  });

  it("read from files is refused, saying why, when the key is not the certificate's", async () => {
    const one = selfSignedCertificate("one", ["localhost"], []);
    const two = selfSignedCertificate("two", ["localhost"], []);
    await writeFile(join(dir, "tls.crt"), one.cert);
    await writeFile(join(dir, "tls.key"), two.key);
    const read = await readCertificate(dir, "tls.crt", "tls.key");
    assert.ok(read instanceof Error);
    assert.match(read.message, /tls\.key is not the key of tls\.crt/);
    const missing = await readCertificate(dir, "absent.crt", "tls.key");
    assert.ok(missing instanceof Error && /absent\.crt/.test(missing.message));
  });

  it("from --metrics-cert-path is served again when the files there change, a bad change keeping the last good one; a scrape is answered as its verdict says, an API error unsaid", async () => {
    const certDir = join(dir, "rotating");
    await mkdir(certDir);
    const first = selfSignedCertificate("first", ["localhost"], ["127.0.0.1"]);
    await writeFile(join(certDir, "tls.crt"), first.cert);
    await writeFile(join(certDir, "tls.key"), first.key);
    const errors: string[] = [];
    const server: Server = await serveMetrics(
      new Registry(),
      { host: "127.0.0.1", port: 0 },
      {
        secure: true,
        certificate: first,
        watch: { dir: certDir, certName: "tls.crt", keyName: "tls.key" },
        check: (authorization) =>
          Promise.resolve(
            authorization === "Bearer ok"
              ? { allowed: true }
              : authorization === "Bearer broken"
                ? { allowed: false, status: 500, reason: "the API server said: internal detail" }
                : { allowed: false, status: 403, reason: "no" },
          ),
      },
      { ...quiet, error: (message: string) => void errors.push(message) },
    );
    try {
      const { port } = server.address() as AddressInfo;
      const url = `https://127.0.0.1:${port}/metrics`;
      const served = await scrape(url, "ok");
      assert.equal(served.status, 200);
      assert.equal(served.fingerprint, fingerprint(first.cert));
      assert.equal((await scrape(url, "other")).status, 403, "the verdict is the answer");
      const broken = await scrape(url, "broken");
      assert.equal(broken.status, 500);
      assert.doesNotMatch(broken.body, /internal detail/, "the API server's error is logged, not answered");
      assert.ok(errors.some((e) => e.includes("could not be authorized")));
      assert.equal((await scrape(`https://127.0.0.1:${port}/other`, "ok")).status, 404);

      // A rotation as a Secret volume makes one: the new pair written beside, then moved in.
      const second = selfSignedCertificate("second", ["localhost"], ["127.0.0.1"]);
      await writeFile(join(certDir, "tls.key.new"), second.key);
      await writeFile(join(certDir, "tls.crt.new"), second.cert);
      await rename(join(certDir, "tls.key.new"), join(certDir, "tls.key"));
      await rename(join(certDir, "tls.crt.new"), join(certDir, "tls.crt"));
      await eventually(async () => (await scrape(url, "ok")).fingerprint === fingerprint(second.cert), {
        description: "the rotated certificate to be served",
      });

      // A key that does not match: logged, and the second pair served still.
      await writeFile(join(certDir, "tls.key"), first.key);
      await eventually(() => errors.some((e) => e.startsWith("kept the metrics certificate")), {
        description: "the bad change to be logged",
      });
      assert.equal((await scrape(url, "ok")).fingerprint, fingerprint(second.cert));
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
