// client-node 2.x gives every typed API call a new undici Agent, so every request to the API
// server opens a new TCP connection and does a TLS handshake: about 2.5 ms of CPU each (the
// secure context is built anew from the CA and client certificate), a round trip more per call,
// and sockets left open until they time out. A KubeConfig that keeps connections hands every
// call the Agent made for the first one, for as long as the cluster and user's TLS material is
// the same. Watches already share one Agent of their own.
import type { Cluster, KubeConfig, User } from "@kubernetes/client-node";
import type { Dispatcher } from "undici";

const keeping = new WeakSet<KubeConfig>();

/** What a connection is made with: the same cluster and TLS material may share one. */
function tlsKey(cluster: Cluster | null, user: User | null): string {
  return JSON.stringify([
    cluster?.server,
    cluster?.caData,
    cluster?.caFile,
    cluster?.skipTLSVerify,
    cluster?.tlsServerName,
    cluster?.proxyUrl,
    user?.certData,
    user?.certFile,
    user?.keyData,
    user?.keyFile,
  ]);
}

/** Makes `kubeConfig`'s API calls share one connection pool; returns it. Calling it again is harmless. */
export function keepConnections(kubeConfig: KubeConfig): KubeConfig {
  if (keeping.has(kubeConfig)) return kubeConfig;
  keeping.add(kubeConfig);
  const authenticate = kubeConfig.applySecurityAuthentication.bind(kubeConfig);
  let kept: { key: string; dispatcher: Dispatcher } | undefined;
  kubeConfig.applySecurityAuthentication = async (context) => {
    await authenticate(context);
    const made = context.getDispatcher();
    if (!made) return;
    const key = tlsKey(kubeConfig.getCurrentCluster(), kubeConfig.getCurrentUser());
    if (kept?.key === key) {
      context.setDispatcher(kept.dispatcher);
      return;
    }
    // New TLS material (a rotated certificate): the old pool finishes what it carries and closes.
    void kept?.dispatcher.close().catch(() => undefined);
    kept = { key, dispatcher: made };
  };
  return kubeConfig;
}
