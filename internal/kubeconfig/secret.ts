// Turns a KubeProvider's kubeconfig Secret into a client configuration the operator can use
// safely. The kubeconfig is a tenant's: it must not make the operator read files on its own
// disk, run commands or skip TLS verification unless the installation allows it. The checks
// run on the parsed document, before client-node sees it, because client-node's loader itself
// reads a user's token-file. No message quotes the kubeconfig: it holds credentials.

import { KubeConfig } from "@kubernetes/client-node";
import { parseDocument } from "yaml";
import { KubeProviderReason } from "../../generated/v1alpha3/conditions.ts";
import { keepConnections } from "../kube/connections.ts";

export interface KubeconfigOptions {
  /** Allow a user's exec credential plugin, which runs a command in the operator's pod. */
  allowExec: boolean;
  /** Allow insecure-skip-tls-verify: true. */
  allowInsecure: boolean;
}

export interface SafeKubeconfig {
  kubeConfig: KubeConfig;
  server: string;
}

export interface KubeconfigRefusal {
  reason:
    | typeof KubeProviderReason.KeyNotFound
    | typeof KubeProviderReason.InvalidKubeconfig
    | typeof KubeProviderReason.UnsafeKubeconfig;
  message: string;
}

type Entry = Record<string, unknown>;

/** Fields that name a file, each with what to use instead. */
const clusterFileFields: Record<string, string> = {
  "certificate-authority": "certificate-authority-data",
};
const userFileFields: Record<string, string> = {
  "client-certificate": "client-certificate-data",
  "client-key": "client-key-data",
  tokenFile: "token",
  "token-file": "token",
};
/** auth-provider config keys that name files: client-node's tokenFile, oidc's CA, gcp's command. */
const authProviderFileFields = ["tokenFile", "idp-certificate-authority", "cmd-path"];

/**
 * The kubeconfig in `data` (a Secret's base64 data) under `key` if given, else `value`, else
 * `value.yaml`, checked and cut down to its current context: only that context's cluster and
 * user are checked, so the returned KubeConfig holds nothing else a caller could switch to.
 */
export function readKubeconfigSecret(
  data: Record<string, string> | undefined,
  key: string | undefined,
  options: KubeconfigOptions,
): SafeKubeconfig | KubeconfigRefusal {
  const candidates = key === undefined ? ["value", "value.yaml"] : [key];
  // Own keys only: a key named "constructor" must not find Object.prototype's.
  const chosen = candidates.find((candidate) => data !== undefined && Object.hasOwn(data, candidate));
  if (chosen === undefined) {
    const present = Object.keys(data ?? {}).sort();
    return refuse(
      KubeProviderReason.KeyNotFound,
      `The kubeconfig Secret has no key ${candidates.join(" or ")}; ` +
        `its keys are: ${present.length > 0 ? present.join(", ") : "none"}.`,
    );
  }

  const content = Buffer.from(data?.[chosen] ?? "", "base64").toString("utf8");
  const document = parseDocument(content);
  const error = document.errors[0];
  if (error) {
    // The parser's own message quotes the source, which holds credentials: give the line only.
    const line = error.linePos?.[0].line;
    return invalid(`The kubeconfig under key ${chosen} is not valid YAML${line ? ` (line ${line})` : ""}.`);
  }
  let config: unknown;
  try {
    config = document.toJS();
  } catch {
    return invalid(`The kubeconfig under key ${chosen} cannot be read (it may use too many YAML aliases).`);
  }
  if (!isEntry(config)) return invalid(`The kubeconfig under key ${chosen} is not a YAML or JSON object.`);

  const current = config["current-context"];
  if (typeof current !== "string" || current === "") {
    return invalid("The kubeconfig sets no current-context.");
  }
  const context = named(config.contexts, current);
  const contextBody = context?.context;
  if (!isEntry(contextBody)) {
    return invalid(`The kubeconfig has no context "${current}", its current-context.`);
  }
  const { cluster: clusterName, user: userName } = contextBody;
  if (typeof clusterName !== "string" || typeof userName !== "string") {
    return invalid(`The kubeconfig's context "${current}" does not name both a cluster and a user.`);
  }
  const cluster = named(config.clusters, clusterName);
  const clusterBody = cluster?.cluster;
  if (!isEntry(clusterBody)) return invalid(`The kubeconfig has no cluster "${clusterName}".`);
  if (typeof clusterBody.server !== "string" || clusterBody.server === "") {
    return invalid(`The kubeconfig's cluster "${clusterName}" has no server.`);
  }
  const user = named(config.users, userName);
  if (!user) return invalid(`The kubeconfig has no user "${userName}".`);
  const userBody = isEntry(user.user) ? user.user : {};

  const unsafe = unsafeField(clusterName, clusterBody, userName, userBody, options);
  if (unsafe) return refuse(KubeProviderReason.UnsafeKubeconfig, unsafe);

  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(
    JSON.stringify({ clusters: [cluster], users: [user], contexts: [context], "current-context": current }),
  );
  keepConnections(kubeConfig);
  // The checks above guarantee client-node keeps the one cluster, server and all.
  return { kubeConfig, server: kubeConfig.getCurrentCluster()!.server };
}

/** Why the cluster or user is unsafe, or undefined. File paths first: no option allows them. */
function unsafeField(
  clusterName: string,
  cluster: Entry,
  userName: string,
  user: Entry,
  options: KubeconfigOptions,
): string | undefined {
  const files = (fields: Record<string, string>, body: Entry) =>
    Object.keys(fields).find(
      (field) => body[field] !== undefined && body[field] !== null && body[field] !== "",
    );
  const onDisk = "names a file on the operator's disk, which a kubeconfig from a Secret may not do";

  const clusterFile = files(clusterFileFields, cluster);
  if (clusterFile) {
    return `The kubeconfig's cluster "${clusterName}" sets ${clusterFile}, which ${onDisk}; use ${clusterFileFields[clusterFile]} instead.`;
  }
  const userFile = files(userFileFields, user);
  if (userFile) {
    return `The kubeconfig's user "${userName}" sets ${userFile}, which ${onDisk}; use ${userFileFields[userFile]} instead.`;
  }
  const authProvider = user["auth-provider"];
  if (authProvider !== undefined && authProvider !== null) {
    const config = isEntry(authProvider) && isEntry(authProvider.config) ? authProvider.config : {};
    const providerFile = authProviderFileFields.find((field) => config[field] !== undefined);
    return providerFile
      ? `The kubeconfig's user "${userName}" sets auth-provider config ${providerFile}, which ${onDisk}.`
      : `The kubeconfig's user "${userName}" uses auth-provider, whose plugins are deprecated and not supported; use a token or client certificate.`;
  }
  if (user.exec !== undefined && user.exec !== null && !options.allowExec) {
    return `The kubeconfig's user "${userName}" uses exec, which runs a command in the operator's pod and is not allowed by the operator's flags.`;
  }
  if (cluster["insecure-skip-tls-verify"] === true && !options.allowInsecure) {
    return `The kubeconfig's cluster "${clusterName}" sets insecure-skip-tls-verify, which the operator's flags do not allow; give certificate-authority-data instead.`;
  }
  return undefined;
}

/** The first entry of a kubeconfig list with this name, the one client-node would pick. */
function named(list: unknown, name: string): Entry | undefined {
  return Array.isArray(list)
    ? list.find((entry): entry is Entry => isEntry(entry) && entry.name === name)
    : undefined;
}

function isEntry(value: unknown): value is Entry {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function invalid(message: string): KubeconfigRefusal {
  return refuse(KubeProviderReason.InvalidKubeconfig, message);
}

function refuse(reason: KubeconfigRefusal["reason"], message: string): KubeconfigRefusal {
  return { reason, message };
}
