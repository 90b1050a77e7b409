import { KubeConfig } from "@kubernetes/client-node";

export type Credentials = { certPem: string; keyPem: string } | { token: string };

/** A KubeConfig for one identity against one API server, trusting only the given CA. */
export function kubeConfigFor(
  server: string,
  caPem: string,
  user: string,
  credentials: Credentials,
): KubeConfig {
  const kc = new KubeConfig();
  const userEntry =
    "token" in credentials
      ? { name: user, token: credentials.token }
      : {
          name: user,
          certData: Buffer.from(credentials.certPem).toString("base64"),
          keyData: Buffer.from(credentials.keyPem).toString("base64"),
        };
  kc.loadFromOptions({
    clusters: [
      { name: "testenv", server, caData: Buffer.from(caPem).toString("base64"), skipTLSVerify: false },
    ],
    users: [userEntry],
    contexts: [{ name: user, cluster: "testenv", user: user }],
    currentContext: user,
  });
  return kc;
}
