// Push deliveries in each host's format, after the hosts' public documentation of their push
// event (trimmed to the fields a receiver reads and a few it does not), and signed as each
// host signs them.
import { createHmac } from "node:crypto";

export interface Delivery {
  headers: Record<string, string>;
  body: string;
}

const sign = (algorithm: string, token: string, body: string) =>
  createHmac(algorithm, token).update(body).digest("hex");

/** GitHub's push event: X-GitHub-Event push, signed in X-Hub-Signature-256. */
export function githubPush(token: string, cloneUrl: string, sshUrl: string, branch: string): Delivery {
  const body = JSON.stringify({
    ref: `refs/heads/${branch}`,
    before: "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
    after: "76ae82c7b1a177c8d03f9e96e0adf2466113728f",
    created: false,
    deleted: false,
    forced: false,
    compare: "https://github.com/octo-org/state/compare/6113728f27ae...76ae82c7b1a1",
    repository: {
      id: 186853002,
      name: "state",
      full_name: "octo-org/state",
      private: true,
      html_url: "https://github.com/octo-org/state",
      clone_url: cloneUrl,
      ssh_url: sshUrl,
      default_branch: "main",
    },
    pusher: { name: "octocat", email: "octocat@github.com" },
    sender: { login: "octocat", id: 21031067, type: "User" },
    head_commit: { id: "76ae82c7b1a177c8d03f9e96e0adf2466113728f", message: "Edit by hand" },
  });
  return {
    body,
    headers: {
      "content-type": "application/json",
      "user-agent": "GitHub-Hookshot/044aadd",
      "x-github-event": "push",
      "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
      "x-hub-signature-256": `sha256=${sign("sha256", token, body)}`,
    },
  };
}

/** GitHub's ping, sent when a webhook is made. */
export function githubPing(token: string): Delivery {
  const body = JSON.stringify({
    zen: "Keep it logically awesome.",
    hook_id: 30,
    hook: { type: "Repository" },
  });
  return {
    body,
    headers: {
      "content-type": "application/json",
      "x-github-event": "ping",
      "x-hub-signature-256": `sha256=${sign("sha256", token, body)}`,
    },
  };
}

/** GitLab's Push Hook: X-Gitlab-Event, the secret token as X-Gitlab-Token. */
export function gitlabPush(token: string, httpUrl: string, sshUrl: string, branch: string): Delivery {
  const body = JSON.stringify({
    object_kind: "push",
    event_name: "push",
    before: "95790bf891e76fee5e1747ab589903a6a1f80f22",
    after: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
    ref: `refs/heads/${branch}`,
    ref_protected: true,
    checkout_sha: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
    user_username: "jsmith",
    project_id: 15,
    project: {
      id: 15,
      name: "state",
      web_url: "https://gitlab.example.com/platform/state",
      git_ssh_url: sshUrl,
      git_http_url: httpUrl,
      path_with_namespace: "platform/state",
      default_branch: "main",
    },
    repository: { name: "state", url: sshUrl, git_http_url: httpUrl, git_ssh_url: sshUrl },
    total_commits_count: 1,
  });
  return {
    body,
    headers: {
      "content-type": "application/json",
      "x-gitlab-event": "Push Hook",
      "x-gitlab-token": token,
      "x-gitlab-instance": "https://gitlab.example.com",
    },
  };
}

/** Gitea's push: X-Gitea-Event push, the bare hex HMAC-SHA256 in X-Gitea-Signature. */
export function giteaPush(token: string, cloneUrl: string, sshUrl: string, branch: string): Delivery {
  const body = JSON.stringify({
    ref: `refs/heads/${branch}`,
    before: "28e1879d029cb852e4844d9c718537df08844e03",
    after: "bffeb74224043ba2feb48d137756c8a9331c449a",
    compare_url: "https://gitea.example.com/platform/state/compare/28e1879d029c...bffeb7422404",
    repository: {
      id: 140,
      name: "state",
      full_name: "platform/state",
      html_url: "https://gitea.example.com/platform/state",
      clone_url: cloneUrl,
      ssh_url: sshUrl,
      default_branch: "main",
    },
    pusher: { login: "gitea", email: "gitea@fake.local" },
  });
  const signature = sign("sha256", token, body);
  return {
    body,
    headers: {
      "content-type": "application/json",
      "x-gitea-event": "push",
      "x-gitea-delivery": "f6266f16-1bf3-46a5-9ea4-602e06ead473",
      "x-gitea-signature": signature,
      "x-forgejo-signature": signature,
    },
  };
}

/** A generic sender's push, signed in X-Signature with the algorithm as its prefix. */
export function genericPush(
  token: string,
  repository: string,
  branch: string,
  algorithm = "sha256",
): Delivery {
  const body = JSON.stringify({ repository, ref: `refs/heads/${branch}` });
  return {
    body,
    headers: {
      "content-type": "application/json",
      "x-signature": `${algorithm}=${sign(algorithm, token, body)}`,
    },
  };
}
