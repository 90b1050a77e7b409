// What a commit message template sees. The names are capitalized, Go style, because the templates
// are Go templates and users copy examples written for Go; the GitTarget documentation lists
// these same fields, so renaming one breaks users' templates.
import type { ResourceIdentity } from "../types/identity.ts";

/** Why a commit is made, which also picks the GitTarget's template. */
export type Reason = "live" | "reconcile" | "request";

export type Operation = "create" | "update" | "delete";

/** The data behind `{{.}}` in a commit message template. */
export interface MessageData {
  /** The GitTarget whose folder the commit changes. */
  GitTarget: {
    Namespace: string;
    Name: string;
    /** The folder in the repository, such as "clusters/prod/team-a". */
    Path: string;
  };
  /** The commit's author, as it will be recorded. */
  Author: { Name: string; Email: string };
  /** live: watch events; reconcile: a resync brought the folder in line; request: a CommitRequest. */
  Reason: Reason;
  /** One entry per changed resource, in the order the caller gave them. */
  Resources: ResourceData[];
  /** How many resources each operation touched; Total is the length of Resources. */
  Counts: { Created: number; Updated: number; Deleted: number; Total: number };
  /**
   * The CommitRequest's spec.message, byte for byte. Present only for a request that has one;
   * it is data, never parsed as a template.
   */
  RequestMessage?: string;
}

export interface ResourceData {
  Operation: Operation;
  /** "" for the core group. */
  Group: string;
  Version: string;
  /** The plural resource name, such as "deployments". */
  Resource: string;
  Kind: string;
  /** "" for a cluster-scoped resource. */
  Namespace: string;
  Name: string;
  /** The document's path in the repository. */
  Path: string;
}

/** One changed resource, as the branch worker knows it: a ResourceIdentity spreads into it. */
export interface ChangeInput extends Omit<ResourceIdentity, "uid"> {
  operation: Operation;
  path: string;
}

export interface MessageInput {
  target: { namespace: string; name: string; path: string };
  author: { name: string; email: string };
  reason: Reason;
  changes: readonly ChangeInput[];
  /** spec.message of the CommitRequest, when there is one. */
  requestMessage?: string;
}

/** Builds the data a message template sees. Pure: the same input gives the same data. */
export function messageData(input: MessageInput): MessageData {
  const Resources = input.changes.map((c): ResourceData => ({
    Operation: c.operation,
    Group: c.group,
    Version: c.version,
    Resource: c.resource,
    Kind: c.kind,
    Namespace: c.namespace,
    Name: c.name,
    Path: c.path,
  }));
  const count = (operation: Operation) => Resources.filter((r) => r.Operation === operation).length;
  const data: MessageData = {
    GitTarget: { Namespace: input.target.namespace, Name: input.target.name, Path: input.target.path },
    Author: { Name: input.author.name, Email: input.author.email },
    Reason: input.reason,
    Resources,
    Counts: {
      Created: count("create"),
      Updated: count("update"),
      Deleted: count("delete"),
      Total: Resources.length,
    },
  };
  if (input.requestMessage !== undefined) data.RequestMessage = input.requestMessage;
  return data;
}
