// The Events an operator user watches for, read the way they would read them: `kubectl events`.
// Each is recorded when a condition turns, so each appears once however often the object
// reconciles.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import type { GitServer } from "../../support/gitserver.ts";
import { kubectlOk } from "../../support/kubectl.ts";
import { applyMirror, type MirrorTarget } from "../../support/mirror.ts";
import {
  folderBranches,
  mirrorUser,
  startMirrorEnvironment,
  type MirrorEnvironment,
} from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";
import { createRequest, finishedRequest, readyOf, setValue } from "../commitrequest/fixture.ts";

interface SeenEvent {
  type: string;
  reason: string;
  kind: string;
  name: string;
  note: string;
}

/** What `kubectl events -o json` lists in the namespace, whichever Event API it reads. */
async function kubectlEvents(env: MirrorEnvironment, namespace: string): Promise<SeenEvent[]> {
  const list = JSON.parse(await kubectlOk(env.plane, "events", "-n", namespace, "-o", "json")) as {
    items: {
      type?: string;
      reason?: string;
      message?: string;
      note?: string;
      involvedObject?: { kind?: string; name?: string };
      regarding?: { kind?: string; name?: string };
    }[];
  };
  return list.items.map((e) => {
    const about = e.regarding ?? e.involvedObject ?? {};
    return {
      type: e.type ?? "",
      reason: e.reason ?? "",
      kind: about.kind ?? "",
      name: about.name ?? "",
      note: e.note ?? e.message ?? "",
    };
  });
}

const events = "events";
const refused = "refused";
const target: MirrorTarget = {
  name: "apps",
  path: "clusters/apps",
  // The credential Secret is followed too, and no encryption is configured: it is refused.
  rules: [{ apiGroups: [""], resources: ["configmaps", "secrets"] }],
  // The window stays open until the CommitRequest closes it.
  idleTimeout: "60s",
  maxDuration: "120s",
};

describe("the Events an operator user watches for", () => {
  let env: MirrorEnvironment;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;

  /** Waits for one Event about `kind` `name` with `reason`, as `kubectl events` lists it. */
  const eventAbout = async (namespace: string, type: string, reason: string, kind: string, name: string) => {
    let seen: SeenEvent[] = [];
    return eventually(
      async () => {
        seen = await kubectlEvents(env, namespace);
        return seen.find((e) => e.reason === reason && e.kind === kind && e.name === name);
      },
      {
        timeoutMs: 90_000,
        description: () =>
          `a ${type} ${reason} Event about ${kind} ${namespace}/${name}; kubectl events lists ${JSON.stringify(seen.map((e) => `${e.type} ${e.reason} ${e.kind}/${e.name}`))}`,
      },
    ).then((event) => {
      assert.equal(event.type, type, JSON.stringify(event));
      return event;
    });
  };
  const count = async (namespace: string, reason: string, kind: string) =>
    (await kubectlEvents(env, namespace)).filter((e) => e.reason === reason && e.kind === kind).length;

  before(async () => {
    env = await startMirrorEnvironment([events, refused]);
    ({ git, kc, core } = env);
    await core.createNamespacedConfigMap({
      namespace: events,
      body: { metadata: { name: "settings" }, data: { k: "v1" } },
    });
    await applyMirror(kc, events, env.url, mirrorUser, [target]);
    await eventually(() => git.fileAt("state", "main", `${target.path}/${events}/configmaps/settings.yaml`), {
      timeoutMs: 60_000,
      description: "the first mirror",
    });
  });
  after(() => env?.stop());

  it("a GitBranch that takes its branch records BranchClaimed", async () => {
    const event = await eventAbout(events, "Normal", "BranchClaimed", "GitBranch", "main");
    assert.match(event.note, /Holds branch "main"/);
  });

  it("a Secret refused for want of encryption records EncryptionNotConfigured on its GitTarget", async () => {
    const event = await eventAbout(events, "Warning", "EncryptionNotConfigured", "GitTarget", target.name);
    assert.match(event.note, /spec\.encryption is not set/);
  });

  it("a push failing records its reason, its recovery PushRecovered, and the CommitRequest held through it Committed", async () => {
    await git.stop();
    try {
      await setValue(core, events, "settings", "v2");
      await createRequest(kc, events, "through-outage", { target: target.name, message: "Save through it" });
      await eventAbout(events, "Warning", "RemoteUnreachable", "GitBranch", "main");
      await eventAbout(events, "Warning", "RemoteUnreachable", "GitTarget", target.name);
    } finally {
      await git.start();
    }
    const done = await finishedRequest(kc, events, "through-outage", 90_000);
    assert.equal(readyOf(done)?.reason, "Committed", JSON.stringify(done.status));
    await eventAbout(events, "Normal", "PushRecovered", "GitBranch", "main");
    await eventAbout(events, "Normal", "PushRecovered", "GitTarget", target.name);
    const committed = await eventAbout(events, "Normal", "Committed", "CommitRequest", "through-outage");
    assert.match(committed.note, new RegExp(`Commit ${done.status!.commit!}`));
    // Each reconcile during the outage said the same, and the Secret stayed refused through all
    // of them: one Event for each.
    assert.equal(await count(events, "RemoteUnreachable", "GitBranch"), 1);
    assert.equal(await count(events, "EncryptionNotConfigured", "GitTarget"), 1);
  });

  it("Events are emitted for a refused folder: UnsupportedContent, and fixed in Git, GitPathAccepted", async () => {
    const folder = "clusters/refused";
    const { seed } = folderBranches(env);
    await seed(
      refused,
      {
        [`${folder}/kustomization.yaml`]:
          "resources:\n  - settings.yaml\nsecretGenerator:\n  - name: db\n    literals: [password=example]\n",
        [`${folder}/settings.yaml`]:
          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: refused\ndata:\n  mode: fast\n",
      },
      { path: folder, rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
    );
    const refusal = await eventAbout(refused, "Warning", "UnsupportedContent", "GitTarget", refused);
    assert.match(refusal.note, /secretGenerator/);
    await git.pushForeignCommit("state", {
      branch: refused,
      files: { [`${folder}/kustomization.yaml`]: "resources:\n  - settings.yaml\n" },
      message: "Remove the secretGenerator",
    });
    await eventAbout(refused, "Normal", "GitPathAccepted", "GitTarget", refused);
    assert.equal(await count(refused, "UnsupportedContent", "GitTarget"), 1);
  });
});
