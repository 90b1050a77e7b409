// What a push delivery names: the repository (every URL the host gives for it) and the branches
// it moved, read from each host's documented payload. Nothing here chooses a URL, a credential
// or a commit: the URLs are only compared with what GitProviders name, and the woken workers
// read the remote themselves. Pure.
import type { IncomingHttpHeaders } from "node:http";
import type { ReceiverType } from "./auth.ts";

export type Delivery =
  /** A push: the repository's URLs and the branches it moved (created, updated or deleted). */
  | { kind: "push"; urls: string[]; branches: string[] }
  /** GitHub's ping when a webhook is made, a tag push, and any other event: nothing to wake. */
  | { kind: "ignored"; why: string }
  | { kind: "unreadable"; why: string };

const header = (headers: IncomingHttpHeaders, name: string) => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

type Json = Record<string, unknown>;
const object = (value: unknown): Json => (value && typeof value === "object" ? (value as Json) : {});
const array = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const strings = (...values: unknown[]) =>
  values.filter((v): v is string => typeof v === "string" && v !== "");

/** What a push payload of one shape names. */
interface Read {
  urls: string[];
  branches: string[];
}

/**
 * Where each type names its event, and which events are pushes: a header for every host but
 * Azure DevOps, whose service hook names it in the body (eventType); generic-hmac names none.
 * Flux's bitbucket Receiver is the Data Center one, so `bitbucket` reads Data Center's push too.
 */
const dialects: Record<ReceiverType, { header?: string; body?: string; push: readonly string[] }> = {
  github: { header: "x-github-event", push: ["push"] },
  gitlab: { header: "x-gitlab-event", push: ["Push Hook"] },
  gitea: { header: "x-gitea-event", push: ["push"] },
  gogs: { header: "x-gogs-event", push: ["push"] },
  forgejo: { header: "x-forgejo-event", push: ["push"] },
  bitbucket: { header: "x-event-key", push: ["repo:push", "repo:refs_changed"] },
  "bitbucket-server": { header: "x-event-key", push: ["repo:refs_changed"] },
  "azure-devops": { body: "eventType", push: ["git.push"] },
  "generic-hmac": { push: [] },
};

/** The shape of each push event's payload; any other (and generic-hmac) is a ref and a repository. */
const shapes: Record<string, (payload: Json) => Read> = {
  "repo:push": bitbucketCloud,
  "repo:refs_changed": bitbucketServer,
  "git.push": azureDevOps,
};

/** What an authenticated delivery names. */
export function readDelivery(type: ReceiverType, headers: IncomingHttpHeaders, body: Buffer): Delivery {
  const dialect = dialects[type];
  let event = dialect.header ? header(headers, dialect.header) : undefined;
  if (dialect.header && !dialect.push.includes(event ?? "")) return notAPush(event);
  let payload: Json;
  try {
    payload = object(JSON.parse(body.toString("utf8")));
  } catch {
    return { kind: "unreadable", why: "the body is not JSON" };
  }
  if (dialect.body) {
    event = strings(payload[dialect.body])[0];
    if (!dialect.push.includes(event ?? "")) return notAPush(event);
  }
  const { urls, branches } = (shapes[event ?? ""] ?? refAndRepository)(payload);
  if (urls.length === 0) return { kind: "unreadable", why: "the payload names no repository URL" };
  if (branches.length === 0)
    return { kind: "ignored", why: "the push names no branch (a tag, or another ref)" };
  return { kind: "push", urls: [...new Set(urls)], branches: [...new Set(branches)] };
}

const notAPush = (event: string | undefined): Delivery => ({
  kind: "ignored",
  why: `a ${event ?? "unnamed"} event, not a push`,
});

/** The branch a ref names: refs/heads/<branch>; a tag or another ref names none. */
function branchOfRef(ref: unknown): string | undefined {
  return typeof ref === "string" && ref.startsWith("refs/heads/") && ref.length > "refs/heads/".length
    ? ref.slice("refs/heads/".length)
    : undefined;
}

/**
 * GitHub, GitLab, Gitea, Gogs and Forgejo: `ref` and the repository's URLs (GitHub's, Gitea's,
 * Gogs' and Forgejo's repository.clone_url, ssh_url, html_url and git_url; GitLab's project
 * (and repository) git_http_url, git_ssh_url and web_url); a generic sender's `repository` or
 * `url` that is a string, and `ref` or, without one, `branch`.
 */
function refAndRepository(payload: Json): Read {
  const repository = object(payload.repository);
  const project = object(payload.project);
  const urls = strings(
    repository.clone_url,
    repository.ssh_url,
    repository.html_url,
    repository.git_url,
    repository.git_http_url,
    repository.git_ssh_url,
    repository.url,
    repository.homepage,
    project.git_http_url,
    project.git_ssh_url,
    project.web_url,
    payload.repository,
    payload.url,
  );
  const ref = strings(payload.ref)[0];
  const branch = ref === undefined ? strings(payload.branch)[0] : branchOfRef(ref);
  return { urls, branches: strings(branch) };
}

/**
 * Bitbucket Cloud's repo:push: repository.links.html.href (or, without it, full_name on
 * bitbucket.org), and push.changes[], each a branch or tag as it is after the push (`new`), or
 * as it was before, when the push deleted it (`new` is null).
 */
function bitbucketCloud(payload: Json): Read {
  const repository = object(payload.repository);
  const html = strings(object(object(repository.links).html).href);
  const fullName = strings(repository.full_name)[0];
  const urls = html.length > 0 || !fullName ? html : [`https://bitbucket.org/${fullName}`];
  const branches = array(object(payload.push).changes).flatMap((change) => {
    const { new: after, old: before } = object(change);
    const ref = object(after ?? before);
    return ref.type === "branch" ? strings(ref.name) : [];
  });
  return { urls, branches };
}

/**
 * Bitbucket Data Center's (and Server's) repo:refs_changed: repository.links.clone[].href (its
 * ssh and http clone URLs), and changes[].ref.id (refs/heads/… for a branch).
 */
function bitbucketServer(payload: Json): Read {
  const links = object(object(payload.repository).links);
  const urls = strings(...array(links.clone).map((link) => object(link).href));
  const branches = array(payload.changes).flatMap((change) => {
    const { ref, refId } = object(change);
    return strings(branchOfRef(strings(object(ref).id, refId)[0]));
  });
  return { urls, branches };
}

/**
 * Azure DevOps' git.push service hook: resource.repository.remoteUrl (and sshUrl and webUrl,
 * where the resource carries them), each with the other spellings Azure DevOps Services gives
 * the repository, and resource.refUpdates[].name (refs/heads/…).
 */
function azureDevOps(payload: Json): Read {
  const resource = object(payload.resource);
  const repository = object(resource.repository);
  const urls = strings(repository.remoteUrl, repository.sshUrl, repository.webUrl).flatMap(azureSpellings);
  const branches = array(resource.refUpdates).flatMap((update) => strings(branchOfRef(object(update).name)));
  return { urls, branches };
}

/**
 * Every spelling Azure DevOps Services accepts for the repository an https URL names: on
 * dev.azure.com and on <org>.visualstudio.com (with or without DefaultCollection), the short
 * form of a repository named like its project, and the SSH URL of each host. A URL on another
 * host (Azure DevOps Server) is its only spelling.
 */
export function azureSpellings(url: string): string[] {
  const named = azureRepository(url);
  if (!named) return [url];
  const { org, project, repo } = named;
  const long = `${project}/_git/${repo}`;
  const paths = project === repo ? [long, `_git/${repo}`] : [long];
  return [
    url,
    ...paths.flatMap((path) => [
      `https://dev.azure.com/${org}/${path}`,
      `https://${org}.visualstudio.com/${path}`,
      `https://${org}.visualstudio.com/DefaultCollection/${path}`,
    ]),
    `git@ssh.dev.azure.com:v3/${org}/${project}/${repo}`,
    `${org}@vs-ssh.visualstudio.com:v3/${org}/${project}/${repo}`,
  ];
}

/** The organization, project and repository an Azure DevOps Services https URL names. */
function azureRepository(url: string): { org: string; project: string; repo: string } | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  const segments = parsed.pathname.split("/").filter((s) => s !== "");
  const host = parsed.hostname.toLowerCase();
  let org: string | undefined;
  if (host === "dev.azure.com") org = segments.shift();
  else if (host.endsWith(".visualstudio.com")) {
    org = host.slice(0, -".visualstudio.com".length);
    if (segments[0]?.toLowerCase() === "defaultcollection") segments.shift();
  }
  if (!org || org.includes(".")) return undefined;
  // <project>/_git/<repo>, or _git/<repo> for the repository named like its project.
  const at = segments.indexOf("_git");
  if (at < 0 || at > 1 || at !== segments.length - 2) return undefined;
  const repo = segments[at + 1]!.replace(/\.git$/, "");
  return { org, project: at === 1 ? segments[0]! : repo, repo };
}
