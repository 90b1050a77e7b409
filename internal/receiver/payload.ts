// What a push delivery names: the repository (every URL the host gives for it) and the branch,
// read from each host's documented payload. Nothing here chooses a URL, a credential or a
// commit: the URLs are only compared with what GitProviders name, and the woken worker reads
// the remote itself. Pure.
import type { IncomingHttpHeaders } from "node:http";
import type { ReceiverType } from "./auth.ts";

export type Delivery =
  /** A push: the repository's URLs and the branch it moved. */
  | { kind: "push"; urls: string[]; branch: string }
  /** GitHub's ping when a webhook is made, and any other event: nothing to wake. */
  | { kind: "ignored"; why: string }
  | { kind: "unreadable"; why: string };

const header = (headers: IncomingHttpHeaders, name: string) => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** The event a host's header names, where it names one; generic-hmac names none. */
function eventOf(type: ReceiverType, headers: IncomingHttpHeaders): string | undefined {
  if (type === "github") return header(headers, "x-github-event");
  if (type === "gitlab") return header(headers, "x-gitlab-event");
  if (type === "gitea") return header(headers, "x-gitea-event");
  return undefined;
}

const pushEvents: Record<Exclude<ReceiverType, "generic-hmac">, string> = {
  github: "push",
  gitlab: "Push Hook",
  gitea: "push",
};

type Json = Record<string, unknown>;
const object = (value: unknown): Json => (value && typeof value === "object" ? (value as Json) : {});
const strings = (...values: unknown[]) =>
  values.filter((v): v is string => typeof v === "string" && v !== "");

/**
 * Every URL the payload gives for its repository: GitHub's and Gitea's repository.clone_url,
 * ssh_url, html_url and git_url; GitLab's project (and repository) git_http_url, git_ssh_url
 * and web_url; and, for a generic sender, a repository or url that is a string.
 */
function urlsOf(payload: Json): string[] {
  const repository = object(payload.repository);
  const project = object(payload.project);
  return [
    ...new Set(
      strings(
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
      ),
    ),
  ];
}

/** The branch a ref names: refs/heads/<branch>; a tag or another ref names none. */
function branchOf(payload: Json): string | undefined {
  const ref = strings(payload.ref)[0];
  if (ref?.startsWith("refs/heads/")) return ref.slice("refs/heads/".length);
  return ref === undefined ? strings(payload.branch)[0] : undefined;
}

/** What an authenticated delivery names. */
export function readDelivery(type: ReceiverType, headers: IncomingHttpHeaders, body: Buffer): Delivery {
  const event = eventOf(type, headers);
  if (type !== "generic-hmac" && event !== pushEvents[type])
    return { kind: "ignored", why: `a ${event ?? "unnamed"} event, not a push` };
  let payload: Json;
  try {
    payload = object(JSON.parse(body.toString("utf8")));
  } catch {
    return { kind: "unreadable", why: "the body is not JSON" };
  }
  const urls = urlsOf(payload);
  const branch = branchOf(payload);
  if (urls.length === 0) return { kind: "unreadable", why: "the payload names no repository URL" };
  if (branch === undefined)
    return { kind: "ignored", why: "the push names no branch (a tag, or another ref)" };
  return { kind: "push", urls, branch };
}
