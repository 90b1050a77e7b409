import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import {
  authenticated,
  authorized,
  bearerToken,
  ExpiringCache,
  MetricsAuthorizer,
} from "../../../internal/telemetry/metricsauth.ts";
import { freePort } from "../../support/ports.ts";

describe("who may read /metrics", () => {
  it("takes the token only from an Authorization: Bearer header", () => {
    assert.equal(bearerToken("Bearer abc.def"), "abc.def");
    assert.equal(bearerToken("bearer abc"), "abc");
    assert.equal(bearerToken(undefined), undefined);
    assert.equal(bearerToken(""), undefined);
    assert.equal(bearerToken("Basic dXNlcjpwYXNz"), undefined);
    assert.equal(bearerToken("Bearer "), undefined);
    assert.equal(bearerToken("Bearer a b"), undefined);
  });

  it("a token the API server does not authenticate is refused 401, saying why", () => {
    assert.deepEqual(authenticated({ authenticated: false, error: "token expired" }), {
      allowed: false,
      status: 401,
      reason: "token expired",
    });
    assert.deepEqual(authenticated(undefined), {
      allowed: false,
      status: 401,
      reason: "the token is not authenticated",
    });
    assert.deepEqual(
      authenticated({ authenticated: true, user: {} }),
      { allowed: false, status: 401, reason: "the token is not authenticated" },
      "an authenticated review that names no user passes nothing",
    );
  });

  it("an authenticated token names the user the access review asks about", () => {
    const user = {
      username: "system:serviceaccount:monitoring:prometheus",
      groups: ["system:serviceaccounts"],
    };
    assert.deepEqual(authenticated({ authenticated: true, user }), user);
  });

  it("only an allowed access review lets the scrape through; any other answer is 403", () => {
    assert.deepEqual(authorized({ allowed: true }, "alice"), { allowed: true });
    assert.deepEqual(authorized({ allowed: false, reason: "" }, "alice"), {
      allowed: false,
      status: 403,
      reason: "alice may not get /metrics: no rule allows it",
    });
    assert.deepEqual(authorized({ allowed: false, evaluationError: "webhook down" }, "bob"), {
      allowed: false,
      status: 403,
      reason: "bob may not get /metrics: webhook down",
    });
    assert.equal(authorized(undefined, "carol").allowed, false);
  });

  it("an API server that cannot be asked is 500, never a pass, and a scrape without a token never asks", async () => {
    const kubeConfig = new KubeConfig();
    const server = `https://127.0.0.1:${await freePort()}`;
    kubeConfig.loadFromOptions({
      clusters: [{ name: "c", server, skipTLSVerify: true }],
      users: [{ name: "u", token: "t" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    const authorizer = new MetricsAuthorizer(kubeConfig);
    assert.deepEqual(await authorizer.check(undefined), {
      allowed: false,
      status: 401,
      reason: "no bearer token",
    });
    const verdict = await authorizer.check("Bearer some-token");
    assert.equal(verdict.allowed, false);
    assert.equal(!verdict.allowed && verdict.status, 500);
    const again = await authorizer.check("Bearer some-token");
    assert.equal(!again.allowed && again.status, 500, "an error is not kept as an answer");
  });

  it("keeps verdicts for their time only, and at most so many, the oldest going first", () => {
    let now = 0;
    const cache = new ExpiringCache<string>(60_000, 2, () => now);
    cache.set("a", "A");
    cache.set("b", "B");
    assert.equal(cache.get("a"), "A");
    cache.set("c", "C");
    assert.equal(cache.get("a"), undefined, "the oldest went to make room");
    assert.equal(cache.get("b"), "B");
    now = 59_999;
    assert.equal(cache.get("c"), "C");
    now = 60_000;
    assert.equal(cache.get("c"), undefined, "expired");
  });
});
