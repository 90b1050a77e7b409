// Push deliveries of Bitbucket Cloud, Bitbucket Data Center, Azure DevOps, Gogs and Forgejo,
// after each host's public documentation of its push event (trimmed to the fields a receiver
// reads and a few it does not), authenticated as each host authenticates them. The unit tests
// read them, and test/e2e/receiver posts them to the operator.
import { createHmac } from "node:crypto";

export interface Delivery {
  headers: Record<string, string>;
  body: string;
}

const hex = (token: string, body: string) => createHmac("sha256", token).update(body).digest("hex");

/** A ref a push moved: a branch, or a tag. */
export interface Moved {
  kind: "branch" | "tag";
  name: string;
}

const branch = (name: string): Moved[] => [{ kind: "branch", name }];

/**
 * Bitbucket Cloud's repo:push: X-Event-Key, and X-Hub-Signature: sha256=<hex HMAC> since the
 * hook has a secret (`token`; undefined: the hook has none, and the header is not sent).
 */
export function bitbucketPush(
  token: string | undefined,
  htmlUrl: string,
  moved: Moved[] | string,
  event = "repo:push",
): Delivery {
  const refs = typeof moved === "string" ? branch(moved) : moved;
  const target = (hash: string) => ({ type: "commit", hash, message: "Edit by hand\n" });
  const body = JSON.stringify({
    push: {
      changes: refs.map(({ kind, name }) => ({
        old: { type: kind, name, target: target("6113728f27ae82c7b1a177c8d03f9e96e0adf246") },
        new: { type: kind, name, target: target("76ae82c7b1a177c8d03f9e96e0adf2466113728f") },
        created: false,
        forced: false,
        closed: false,
        truncated: false,
        commits: [{ type: "commit", hash: "76ae82c7b1a177c8d03f9e96e0adf2466113728f" }],
      })),
    },
    actor: {
      type: "user",
      display_name: "Emma",
      uuid: "{d301aafa-d676-4ee0-88be-962be7417567}",
      account_id: "557058:c0b72ad0-1cb5-4018-9cdc-0cde8492c443",
    },
    repository: {
      type: "repository",
      name: "state",
      full_name: "platform/state",
      uuid: "{28d2c3a5-4ac3-4b4e-a2e6-94ee64c2fa0d}",
      is_private: true,
      scm: "git",
      links: {
        self: { href: "https://api.bitbucket.org/2.0/repositories/platform/state" },
        html: { href: htmlUrl },
        avatar: { href: "https://bytebucket.org/ravatar/%7B28d2c3a5%7D?ts=default" },
      },
      workspace: { type: "workspace", slug: "platform", name: "Platform" },
    },
  });
  return {
    body,
    headers: {
      "content-type": "application/json",
      "user-agent": "Bitbucket-Webhooks/2.0",
      "x-event-key": event,
      "x-hook-uuid": "cb3b1a38-3c1e-4f6e-8e1e-3e1ab5d4b4a0",
      "x-request-uuid": "1e8c9a3b-4d55-4a4b-9b2e-63c8b8d0a0a1",
      "x-attempt-number": "1",
      ...(token === undefined ? {} : { "x-hub-signature": `sha256=${hex(token, body)}` }),
    },
  };
}

/** Bitbucket Data Center's repo:refs_changed, signed X-Hub-Signature: sha256=<hex HMAC>. */
export function bitbucketServerPush(
  token: string,
  cloneUrls: { http: string; ssh: string },
  moved: Moved[] | string,
): Delivery {
  const refs = typeof moved === "string" ? branch(moved) : moved;
  const body = JSON.stringify({
    eventKey: "repo:refs_changed",
    date: "2017-09-19T09:58:11+1000",
    actor: {
      name: "admin",
      emailAddress: "admin@example.com",
      id: 1,
      displayName: "Administrator",
      active: true,
      slug: "admin",
      type: "NORMAL",
    },
    repository: {
      slug: "state",
      id: 84,
      name: "state",
      hierarchyId: "af05451fc6eb4bbc35e0",
      scmId: "git",
      state: "AVAILABLE",
      statusMessage: "Available",
      forkable: true,
      project: { key: "PLAT", id: 84, name: "Platform", public: false, type: "NORMAL" },
      public: false,
      links: {
        clone: [
          { href: cloneUrls.ssh, name: "ssh" },
          { href: cloneUrls.http, name: "http" },
        ],
        self: [{ href: "https://bitbucket.example.com/projects/PLAT/repos/state/browse" }],
      },
    },
    changes: refs.map(({ kind, name }) => ({
      ref: {
        id: `refs/${kind === "branch" ? "heads" : "tags"}/${name}`,
        displayId: name,
        type: kind === "branch" ? "BRANCH" : "TAG",
      },
      refId: `refs/${kind === "branch" ? "heads" : "tags"}/${name}`,
      fromHash: "ecddabb624f6f5ba43816f5926e580a5f680a932",
      toHash: "178864a7d521b6f5e720b386b2c2b0ef8563e0dc",
      type: "UPDATE",
    })),
  });
  return {
    body,
    headers: {
      "content-type": "application/json; charset=utf-8",
      "user-agent": "Atlassian HttpClient 4.2.0",
      "x-event-key": "repo:refs_changed",
      "x-request-id": "f0f5bc36-0ba0-4d7a-b9a2-61b9ad4bfa1c",
      "x-hub-signature": `sha256=${hex(token, body)}`,
    },
  };
}

/** What Bitbucket Data Center sends when "Test connection" is pressed. */
export function bitbucketServerTest(token: string): Delivery {
  const body = JSON.stringify({ test: true });
  return {
    body,
    headers: {
      "content-type": "application/json; charset=utf-8",
      "x-event-key": "diagnostics:ping",
      "x-request-id": "2d3ed4ff-0e0b-4d36-9e32-4e2f2c1b5f11",
      "x-hub-signature": `sha256=${hex(token, body)}`,
    },
  };
}

/**
 * Azure DevOps' git.push service hook ("Code pushed"), sent with the hook's basic-auth user
 * name and password, whose password is the token.
 */
export function azureDevOpsPush(
  password: string,
  remoteUrl: string,
  refNames: string[] | string,
  eventType = "git.push",
  username = "gitops-reverser",
): Delivery {
  const refs = typeof refNames === "string" ? [`refs/heads/${refNames}`] : refNames;
  const body = JSON.stringify({
    subscriptionId: "00000000-0000-0000-0000-000000000000",
    notificationId: 3,
    id: "03c164c2-8912-4d5e-8009-3707d5f83734",
    eventType,
    publisherId: "tfs",
    message: { text: "Jamal Hartnett pushed updates to state:main." },
    resource: {
      commits: [
        {
          commitId: "33b55f7cb7e7e245323987634f960cf4a6e6bc74",
          author: {
            name: "Jamal Hartnett",
            email: "fabrikamfiber4@hotmail.com",
            date: "2015-02-25T19:01:00Z",
          },
          comment: "Edit by hand",
        },
      ],
      refUpdates: refs.map((name) => ({
        name,
        oldObjectId: "aad331d8d3b131fa9ae03cf5e53965b51942618a",
        newObjectId: "33b55f7cb7e7e245323987634f960cf4a6e6bc74",
      })),
      repository: {
        id: "278d5cd2-584d-4b63-824a-2ba458937249",
        name: "state",
        url: "https://dev.azure.com/fabrikam/_apis/git/repositories/278d5cd2-584d-4b63-824a-2ba458937249",
        project: { id: "6ce954b1-ce1f-45d1-b94d-e6bf2464ba2c", name: "platform", state: "wellFormed" },
        defaultBranch: "refs/heads/main",
        remoteUrl,
      },
      pushedBy: { displayName: "Jamal Hartnett", uniqueName: "fabrikamfiber4@hotmail.com" },
      pushId: 14,
      date: "2014-05-02T19:17:13.3309587Z",
    },
    resourceVersion: "1.0",
    resourceContainers: {
      collection: { id: "c12d0eb8-e382-443b-9f9c-c52cba5014c2" },
      account: { id: "f844ec47-a9db-4511-8281-8b63f4eaf94e" },
      project: { id: "be9b3917-87e6-42a4-a549-2bc06a7a878f" },
    },
    createdDate: "2014-05-02T19:17:28.001Z",
  });
  return {
    body,
    headers: {
      "content-type": "application/json; charset=utf-8",
      authorization: `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`,
    },
  };
}

/** A Gogs-style push (Gogs, and the Gitea payload Forgejo keeps): ref and repository URLs. */
function giteaStyleBody(host: string, cloneUrl: string, sshUrl: string, ref: string): string {
  return JSON.stringify({
    ref,
    before: "28e1879d029cb852e4844d9c718537df08844e03",
    after: "bffeb74224043ba2feb48d137756c8a9331c449a",
    compare_url: `https://${host}/platform/state/compare/28e1879d029c...bffeb7422404`,
    commits: [
      {
        id: "bffeb74224043ba2feb48d137756c8a9331c449a",
        message: "Edit by hand\n",
        url: `https://${host}/platform/state/commit/bffeb74224043ba2feb48d137756c8a9331c449a`,
        author: { name: "alice", email: "alice@example.com", username: "alice" },
      },
    ],
    repository: {
      id: 140,
      owner: { id: 1, login: "platform", username: "platform" },
      name: "state",
      full_name: "platform/state",
      private: true,
      fork: false,
      html_url: `https://${host}/platform/state`,
      ssh_url: sshUrl,
      clone_url: cloneUrl,
      default_branch: "main",
    },
    pusher: { id: 1, login: "alice", username: "alice" },
    sender: { id: 1, login: "alice", username: "alice" },
  });
}

const refOf = (moved: Moved | string) =>
  typeof moved === "string"
    ? `refs/heads/${moved}`
    : `refs/${moved.kind === "branch" ? "heads" : "tags"}/${moved.name}`;

/** Gogs' push: X-Gogs-Event, and the bare hex HMAC-SHA256 in X-Gogs-Signature. */
export function gogsPush(
  token: string,
  cloneUrl: string,
  sshUrl: string,
  moved: Moved | string,
  event = "push",
): Delivery {
  const body = giteaStyleBody("gogs.example.com", cloneUrl, sshUrl, refOf(moved));
  return {
    body,
    headers: {
      "content-type": "application/json",
      "x-gogs-delivery": "f6266f16-1bf3-46a5-9ea4-602e06ead473",
      "x-gogs-event": event,
      "x-gogs-signature": hex(token, body),
    },
  };
}

/**
 * Forgejo's push: X-Forgejo-Event and the bare hex HMAC-SHA256 in X-Forgejo-Signature, with the
 * Gitea, Gogs and GitHub event headers it also sends.
 */
export function forgejoPush(
  token: string,
  cloneUrl: string,
  sshUrl: string,
  moved: Moved | string,
  event = "push",
): Delivery {
  const body = giteaStyleBody("codeberg.example.org", cloneUrl, sshUrl, refOf(moved));
  const signature = hex(token, body);
  const delivery = "b6c9d9c4-38cf-4a71-8d38-f4bbd3a0c8d2";
  return {
    body,
    headers: {
      "content-type": "application/json",
      "x-forgejo-delivery": delivery,
      "x-forgejo-event": event,
      "x-forgejo-event-type": event,
      "x-forgejo-signature": signature,
      "x-gitea-delivery": delivery,
      "x-gitea-event": event,
      "x-gitea-signature": signature,
      "x-gogs-delivery": delivery,
      "x-gogs-event": event,
      "x-github-delivery": delivery,
      "x-github-event": event,
    },
  };
}
