import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { sshOutcomeOf, tlsProblemOf } from "../../../../internal/git/engine/probe.ts";

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

describe("sshOutcomeOf", () => {
  const advice = [
    "fatal: Could not read from remote repository.",
    "",
    "Please make sure you have the correct access rights",
    "and the repository exists.",
    "",
  ];
  const url = "ssh://git@example.com/repo.git";

  it("says ssh will not run for a uid with no passwd entry, and how to run the image instead", () => {
    const outcome = sshOutcomeOf(["No user exists for uid 1000700000", ...advice].join("\n"), url);
    assert.equal(outcome.kind, "failed");
    assert.ok(outcome.kind === "failed" && !outcome.transient, "not a network problem a retry mends");
    assert.match(outcome.kind === "failed" ? outcome.detail : "", /uid 1000700000.*no passwd entry.*65532/);
  });

  it("names what ssh said, never git's advice after it", () => {
    const outcome = sshOutcomeOf(
      ["Received disconnect from 10.0.0.9 port 22:2: Too many authentication failures", ...advice].join("\n"),
      url,
    );
    assert.deepEqual(outcome, {
      kind: "failed",
      transient: true,
      detail: "Received disconnect from 10.0.0.9 port 22:2: Too many authentication failures",
    });
  });

  it("reads a refused key and an unknown host key as such", () => {
    assert.equal(
      sshOutcomeOf(["git@example.com: Permission denied (publickey).", ...advice].join("\n"), url).kind,
      "refused",
    );
    assert.equal(sshOutcomeOf("Host key verification failed.\n", url).kind, "hostKeyUnknown");
  });
});
