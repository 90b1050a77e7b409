// The webhook applier's own parts, as a tool meets them: the signature Flux's generic-hmac
// Receiver checks, where a request may go, what the claim's Secret must hold, the request itself
// (never a redirect followed), and how a callback is judged (a replayed token refused).
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import type { ApplyOperation, WebhookClaim } from "../../../../generated/v1alpha3/index.ts";
import {
  judgeCallback,
  postApply,
  refuseSignature,
  refuseUrl,
  requestBody,
  sign,
  webhookSecretFrom,
  type WebhookSecret,
} from "../../../../internal/applier/webhook/index.ts";

const b64 = (text: string) => Buffer.from(text).toString("base64");
const secret: WebhookSecret = { kind: "loaded", token: "s3cret-key" };

describe("the signature, as Flux's generic-hmac Receiver checks it", () => {
  it("is sha256=<hex HMAC-SHA256 of the exact body>, keyed by the token", () => {
    const body = '{"commit":"abc"}';
    const hex = createHmac("sha256", "k").update(body).digest("hex");
    assert.equal(sign(body, "k"), `sha256=${hex}`);
  });

  it("holds for the body it signs, and for no other body, key or algorithm", () => {
    const body = Buffer.from('{"a":1}');
    assert.equal(refuseSignature(body, sign(body, "k"), "k"), undefined);
    assert.match(refuseSignature(Buffer.from('{"a":2}'), sign(body, "k"), "k") ?? "", /does not match/);
    assert.match(refuseSignature(body, sign(body, "other"), "k") ?? "", /does not match/);
    assert.match(refuseSignature(body, undefined, "k") ?? "", /no X-Signature/);
    const sha1 = `sha1=${createHmac("sha1", "k").update(body).digest("hex")}`;
    assert.match(refuseSignature(body, sha1, "k") ?? "", /not sha256/);
  });
});

describe("where a WebhookClaim may send", () => {
  it("https anywhere; plain http only to loopback, and only with --webhook-claim-allow-loopback-http", () => {
    assert.equal(refuseUrl("https://deployer.example/hook", false), undefined);
    assert.equal(refuseUrl("http://127.0.0.1:8080/hook", true), undefined);
    assert.equal(refuseUrl("http://localhost/hook", true), undefined);
    assert.match(refuseUrl("http://127.0.0.1:8080/hook", false) ?? "", /--webhook-claim-allow-loopback-http/);
    assert.match(refuseUrl("http://deployer.example/hook", true) ?? "", /plain http to deployer\.example/);
    assert.match(refuseUrl("ftp://x/y", true) ?? "", /must be https/);
    assert.match(refuseUrl("https://user:pw@x/y", false) ?? "", /bearerToken/);
    assert.match(refuseUrl("not a url", false) ?? "", /is not a URL/);
  });
});

describe("what a WebhookClaim's Secret must hold", () => {
  it("a token; a client certificate whole; a CA in PEM", () => {
    assert.deepEqual(webhookSecretFrom("shop/hook", { token: b64(" key\n") }), {
      kind: "loaded",
      token: "key",
    });
    const none = webhookSecretFrom("shop/hook", {});
    assert.equal(none.kind, "problem");
    assert.match(none.kind === "problem" ? none.message : "", /Secret shop\/hook has no token/);
    const half = webhookSecretFrom("shop/hook", { token: b64("k"), "tls.crt": b64("x") });
    assert.match(half.kind === "problem" ? half.message : "", /only one of tls\.crt and tls\.key/);
    const ca = webhookSecretFrom("shop/hook", { token: b64("k"), "ca.crt": b64("junk") });
    assert.match(ca.kind === "problem" ? ca.message : "", /not a PEM certificate/);
  });
});

describe("the request", () => {
  let server: Server;
  let base: string;
  const seen: { headers: IncomingMessage["headers"]; body: string; path: string }[] = [];
  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        seen.push({ headers: req.headers, body: Buffer.concat(chunks).toString(), path: req.url ?? "" });
        if (req.url === "/accept") res.writeHead(202).end();
        else if (req.url === "/moved") res.writeHead(307, { location: "http://127.0.0.1:1/elsewhere" }).end();
        else if (req.url === "/slow") setTimeout(() => res.writeHead(200).end(), 2_000).unref();
        else res.writeHead(500).end("deploy broke");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  const apply = {
    repository: "https://git.example/shop.git",
    branch: "main",
    commit: "3f1c",
    reason: "ForeignCommit",
    claim: "shop/deployer",
    token: "t1",
  };

  it("POSTs the JSON body signed over its exact bytes, with the bearer token, and takes a 2xx as accepted", async () => {
    const outcome = await postApply(`${base}/accept`, apply, { ...secret, bearerToken: "bt" }, 5_000);
    assert.deepEqual(outcome, { kind: "accepted", status: 202 });
    const got = seen.at(-1)!;
    assert.equal(got.body, requestBody(apply));
    assert.deepEqual(JSON.parse(got.body), apply);
    assert.equal(got.headers["x-signature"], sign(got.body, secret.token));
    assert.equal(got.headers.authorization, "Bearer bt");
    assert.equal(got.headers["content-type"], "application/json");
  });

  it("never follows a redirect: it is a refusal that names where it pointed", async () => {
    const before = seen.length;
    const outcome = await postApply(`${base}/moved`, apply, secret, 5_000);
    assert.equal(outcome.kind, "refused");
    assert.match(
      outcome.kind === "refused" ? outcome.message : "",
      /HTTP 307 to http:\/\/127\.0\.0\.1:1\/elsewhere \(redirects are not followed\)/,
    );
    assert.equal(seen.length, before + 1, "one request, not two");
  });

  it("an error answer is refused with what it said; no answer within the timeout is unreachable", async () => {
    const refused = await postApply(`${base}/boom`, apply, secret, 5_000);
    assert.deepEqual(refused, { kind: "refused", status: 500, message: "HTTP 500: deploy broke" });
    const slow = await postApply(`${base}/slow`, apply, secret, 200);
    assert.equal(slow.kind, "unreachable");
    assert.match(slow.kind === "unreachable" ? slow.message : "", /no answer within 200 ms/);
  });
});

describe("a callback", () => {
  const running: ApplyOperation = {
    phase: "Running",
    requestToken: "t1",
    commit: "c1",
    requestedAt: "2026-12-07T10:00:00Z",
  };
  const claimWith = (operation?: ApplyOperation) =>
    ({
      metadata: { namespace: "shop", name: "deployer" },
      status: operation ? { operation } : {},
    }) as unknown as WebhookClaim;
  const now = new Date("2026-12-07T10:00:05Z");
  const report = (body: object, key = secret.token) => {
    const text = Buffer.from(JSON.stringify(body));
    return { body: text, signature: sign(text, key) };
  };

  it("ends the operation in flight its token names, as it reports", () => {
    const verdict = judgeCallback({
      claim: claimWith(running),
      secret,
      now,
      ...report({ token: "t1", result: "Succeeded", message: "deployed" }),
    });
    assert.deepEqual(verdict, {
      kind: "accepted",
      operation: { ...running, phase: "Succeeded", completedAt: now.toISOString(), message: "deployed" },
    });
  });

  it("a bad signature is refused 401, before the body is believed", () => {
    const verdict = judgeCallback({
      claim: claimWith(running),
      secret,
      now,
      ...report({ token: "t1", result: "Succeeded" }, "wrong"),
    });
    assert.equal(verdict.kind === "refused" && verdict.status, 401);
  });

  it("a replayed token, whose operation already ended, is refused 409; so is a token of no operation", () => {
    const ended = { ...running, phase: "Succeeded" as const, completedAt: now.toISOString() };
    const replay = judgeCallback({
      claim: claimWith(ended),
      secret,
      now,
      ...report({ token: "t1", result: "Failed" }),
    });
    assert.equal(replay.kind === "refused" && replay.status, 409);
    assert.match(
      replay.kind === "refused" ? replay.message : "",
      /already ended Succeeded: a replayed report is refused/,
    );
    const other = judgeCallback({
      claim: claimWith(running),
      secret,
      now,
      ...report({ token: "t0", result: "Succeeded" }),
    });
    assert.equal(other.kind === "refused" && other.status, 409);
  });

  it("a body that is not a report is refused 400; a claim that does not exist 404", () => {
    const bad = judgeCallback({
      claim: claimWith(running),
      secret,
      now,
      ...report({ token: "t1", result: "Done" }),
    });
    assert.equal(bad.kind === "refused" && bad.status, 400);
    const none = judgeCallback({
      claim: undefined,
      secret: undefined,
      now,
      ...report({ token: "t1", result: "Succeeded" }),
    });
    assert.equal(none.kind === "refused" && none.status, 404);
  });
});
