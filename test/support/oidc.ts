// An OIDC issuer on loopback, for kube-apiserver's structured authentication: it serves its
// discovery document and keys over HTTPS and signs ID tokens (RS256). The AuthenticationConfiguration
// it writes maps the name and email claims into the two user.extra keys attribution reads.
import { createSign, generateKeyPairSync } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import { join } from "node:path";
import { displayNameKey, emailKey } from "../../internal/attribution/author.ts";
import { createCertificateAuthority, issueCertificate, type CertFiles } from "./pki.ts";

export class OidcIssuer {
  private readonly keys = generateKeyPairSync("rsa", { modulusLength: 2048 });
  private readonly kid = "test-key";
  private readonly server: Server;
  /** The issuer URL, once it listens. */
  url = "";

  private constructor(
    private readonly ca: CertFiles,
    serving: CertFiles,
  ) {
    this.server = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
      const body = this.document(req.url ?? "");
      res.writeHead(body ? 200 : 404, { "content-type": "application/json" }).end(JSON.stringify(body ?? {}));
    });
  }

  static async start(dir: string): Promise<OidcIssuer> {
    const ca = await createCertificateAuthority(dir, "oidc-ca");
    const serving = await issueCertificate(ca, dir, "oidc", {
      commonName: "oidc",
      usage: "server",
      ipAddresses: ["127.0.0.1"],
    });
    const issuer = new OidcIssuer(ca, serving);
    await new Promise<void>((resolve) => issuer.server.listen(0, "127.0.0.1", resolve));
    const address = issuer.server.address();
    if (!address || typeof address !== "object") throw new Error("the OIDC issuer is not listening");
    issuer.url = `https://127.0.0.1:${address.port}`;
    return issuer;
  }

  /** The discovery document and the keys, as kube-apiserver fetches them. */
  private document(path: string): object | undefined {
    if (path === "/.well-known/openid-configuration")
      return {
        issuer: this.url,
        jwks_uri: `${this.url}/jwks`,
        id_token_signing_alg_values_supported: ["RS256"],
      };
    if (path === "/jwks")
      return {
        keys: [{ ...this.keys.publicKey.export({ format: "jwk" }), kid: this.kid, use: "sig", alg: "RS256" }],
      };
    return undefined;
  }

  /** kube-apiserver's --authentication-config, written into `dir`: email is the username. */
  async authenticationConfigFlag(dir: string): Promise<string> {
    const file = join(dir, "authentication-config.json");
    const config = {
      apiVersion: "apiserver.config.k8s.io/v1",
      kind: "AuthenticationConfiguration",
      jwt: [
        {
          issuer: { url: this.url, audiences: ["kubernetes"], certificateAuthority: this.ca.certPem },
          claimMappings: {
            username: { claim: "email", prefix: "" },
            extra: [
              { key: displayNameKey, valueExpression: "claims.name" },
              { key: emailKey, valueExpression: "claims.email" },
            ],
          },
        },
      ],
    };
    await writeFile(file, JSON.stringify(config, null, 2));
    return `--authentication-config=${file}`;
  }

  /** An ID token for `claims`, valid for an hour. */
  token(claims: Record<string, unknown>): string {
    const now = Math.floor(Date.now() / 1000);
    const header = { alg: "RS256", kid: this.kid, typ: "JWT" };
    const payload = { iss: this.url, aud: "kubernetes", iat: now, exp: now + 3600, ...claims };
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const unsigned = `${encode(header)}.${encode(payload)}`;
    const signature = createSign("RSA-SHA256").update(unsigned).sign(this.keys.privateKey);
    return `${unsigned}.${signature.toString("base64url")}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
