import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { CoreV1Api } from "@kubernetes/client-node";
import { PatchStrategy, setHeaderOptions, type KubeConfig } from "@kubernetes/client-node";
import { sleep } from "../../../internal/timing/sleep.ts";
import type { GitServer } from "../../support/gitserver.ts";
import { applyMirror } from "../../support/mirror.ts";
import {
  mirrorUser as user,
  startMirrorEnvironment,
  type MirrorEnvironment,
} from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";
import { clients, condition } from "../controllers/helpers.ts";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const namespace = "moving";
const folder = "clusters/moving";
const foreignFile = "docs/ticker.md";

/**
 * Somebody else committing to the branch every second, the way a busy CI would, until `stop()`
 * or its own bounds (90 commits, two minutes). A push of theirs that loses a race to ours is
 * counted and tried on the next tick.
 */
function foreignPusher(git: GitServer, branch: string) {
  const abort = new AbortController();
  const deadline = Date.now() + 120_000;
  const pushed: string[] = [];
  let lost = 0;
  let finished = false;
  const done = (async () => {
    for (let tick = 1; tick <= 90 && Date.now() < deadline && !abort.signal.aborted; tick++) {
      await git
        .pushForeignCommit("state", {
          branch,
          files: { [foreignFile]: `tick ${tick}\n` },
          message: `Tick ${tick}`,
        })
        .then(
          (commit) => pushed.push(commit),
          () => lost++,
        );
      await sleep(1_000, abort.signal);
    }
    finished = true;
  })();
  return {
    pushed,
    get lost() {
      return lost;
    },
    running: () => !finished && !abort.signal.aborted,
    stop: async () => {
      abort.abort();
      await done;
    },
  };
}

describe("Git contention: a branch somebody else keeps pushing to", () => {
  let env: MirrorEnvironment;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;

  before(async () => {
    env = await startMirrorEnvironment([namespace]);
    ({ git, kc, core } = env);
  });
  after(() => env?.stop());

  it("a remote that keeps moving is not an outage", async () => {
    const path = (name: string) => `${folder}/${namespace}/configmaps/${name}.yaml`;
    const inGit = (name: string, text: string, description: string) =>
      eventually(async () => (await git.fileAt("state", namespace, path(name)))?.includes(text), {
        timeoutMs: 60_000,
        description,
      });
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "live" }, data: { round: "r0" } },
    });
    // A round's two writes arrive together: a short commit window still takes them in one
    // commit, and the moved edit and each round do not wait out the fixture's second of silence.
    await applyMirror(
      kc,
      namespace,
      env.url,
      user,
      [
        {
          name: namespace,
          path: folder,
          rules: [{ apiGroups: [""], resources: ["configmaps"] }],
          idleTimeout: "200ms",
        },
      ],
      namespace,
    );
    await inGit("live", "round: r0", "the first write");

    // Every Ready reason the GitTarget and its GitBranch show while the branch keeps moving.
    const { targets, branches } = clients(kc);
    const reasons = new Set<string>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const [target, branch] = await Promise.all([
          targets.get(namespace, namespace),
          branches.get(namespace, "main"),
        ]);
        for (const o of [target, branch]) {
          const reason = condition(o, "Ready")?.reason;
          if (reason) reasons.add(`${o?.kind}:${reason}`);
        }
        await sleep(100);
      }
    })();

    // First the remote moves under six of our pushes in a row: more than one cycle's attempts,
    // what used to go onto the outage schedule.
    let moved = 0;
    const moveUnderNextPush = () =>
      git.interceptNextPush(async () => {
        await git.pushForeignCommit("state", {
          branch: namespace,
          files: { [foreignFile]: `moved ${++moved}\n` },
        });
        if (moved < 6) moveUnderNextPush();
      });
    moveUnderNextPush();
    await core.patchNamespacedConfigMap(
      { namespace, name: "live", body: { data: { round: "moved" } } },
      mergePatch,
    );
    await inGit("live", "round: moved", "the edit the remote moved under six times");
    assert.equal(moved, 6, "the remote moved under six pushes in a row");

    const pusher = foreignPusher(git, namespace);
    try {
      await eventually(() => pusher.pushed.length >= 2, { description: "the foreign pusher under way" });
      for (let round = 1; round <= 5; round++) {
        await core.patchNamespacedConfigMap(
          { namespace, name: "live", body: { data: { round: `r${round}` } } },
          mergePatch,
        );
        await core.createNamespacedConfigMap({
          namespace,
          body: { metadata: { name: `new-${round}` }, data: { round: `r${round}` } },
        });
        await inGit("live", `round: r${round}`, `the edit of round ${round}`);
        await inGit(`new-${round}`, `round: r${round}`, `the ConfigMap of round ${round}`);
        assert.ok(pusher.running(), `round ${round} landed while the foreign pusher was still pushing`);
      }
      // The rounds can land within two of its ticks; one more of its commits after them shows a
      // remote still moving on top of what we pushed.
      const before = pusher.pushed.length;
      await eventually(() => pusher.pushed.length > before, {
        description: "a foreign commit after the rounds",
      });
    } finally {
      await pusher.stop();
      sampling = false;
      await sampler;
    }

    assert.ok(pusher.pushed.length >= 3, `the foreign pusher committed ${pusher.pushed.length} times`);
    const last = pusher.pushed.at(-1)!;
    await git.gitIn("state", ["merge-base", "--is-ancestor", last, namespace]).catch(() => {
      assert.fail("the foreign pusher's last commit is in the branch's history: nothing was forced");
    });
    // Our commits were made on theirs: at least one of ours has a foreign commit as its parent.
    const history = await git.gitIn("state", ["log", "--format=%an %P", namespace]);
    const foreign = new Set(pusher.pushed);
    const replayed = history
      .split("\n")
      .filter((line) => !line.startsWith("Foreign Author"))
      .some((line) => foreign.has(line.split(" ").at(-1)!));
    assert.ok(replayed, "some of our writes were replayed onto a foreign commit");
    assert.ok(
      ![...reasons].some((r) => r.endsWith(":RemoteUnreachable")),
      `never RemoteUnreachable: ${[...reasons].join(", ")}`,
    );
    assert.ok(
      !env.operator.errors.some((e) => e.includes("publication failed")),
      "no publication went onto the outage schedule",
    );
  });
});
