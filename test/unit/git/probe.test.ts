import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { tlsProblemOf } from "../../../internal/git/engine/probe.ts";

describe("tlsProblemOf", () => {
  it("says a server certificate no CA vouches for is not trusted, and to put its CA under ca.crt", () => {
    for (const code of [
      "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
      "SELF_SIGNED_CERT_IN_CHAIN",
      "DEPTH_ZERO_SELF_SIGNED_CERT",
    ]) {
      assert.match(tlsProblemOf(code) ?? "", /certificate is not trusted.*ca\.crt/);
    }
  });

  it("says a refused handshake wants a client certificate under tls.crt and tls.key", () => {
    for (const code of [
      "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED",
      "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE",
      "ERR_SSL_TLSV1_ALERT_UNKNOWN_CA",
    ]) {
      assert.match(tlsProblemOf(code) ?? "", /client certificate.*tls\.crt and tls\.key/);
    }
  });

  it("leaves errors that are not about certificates to the network classification", () => {
    assert.equal(tlsProblemOf("ECONNREFUSED"), undefined);
    assert.equal(tlsProblemOf("ERR_SSL_WRONG_VERSION_NUMBER"), undefined);
  });
});
