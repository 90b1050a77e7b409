// Neither side's change is lost, with the real Flux controllers. The apply window where the
// applier's write and a person's live edits land in the same second: managedFields times resolve
// to the second, so on its own such a write is a tie; the watch's order tells who wrote each
// write (internal/watch/lastwriter.ts), so the applier's write over newer edits is withheld and
// repaired, and nothing the person typed is lost, in Git or on the cluster. A snapshot taken
// while a pushed commit is not applied yet is discarded (applier-claims.md, "Resyncs while Git
// is ahead"), and a resume whose answer is lost is followed as if it landed.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EventsV1Api, type V1ConfigMap } from "@kubernetes/client-node";
import {
  fluxClaims,
  gitTargets,
  type ApplyOperation,
  type FluxClaim,
} from "../../../generated/v1alpha3/index.ts";
import { operationFieldManager, repairFieldManager } from "../../../controllers/applies.ts";
import { kustomizationType, type Kustomization } from "../../../internal/applier/flux/view.ts";
import { holdsApplier } from "../../../internal/applier/claim/index.ts";
import { ResourceClient } from "../../../internal/kube/resourceclient.ts";
import {
  fluxClaim,
  fluxSource,
  kustomization,
  startFlux,
  type Flux,
  type FluxObject,
} from "../../support/flux.ts";
import { applyMirror, mirrorFieldManager } from "../../support/mirror.ts";
import { mirrorUser, startMirrorEnvironment, type MirrorEnvironment } from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";
import { startApiProxy } from "../../support/apiproxy.ts";
import { startOwnedOperator } from "../../support/operator.ts";
import type { OperatorSettings } from "../../../controllers/settings.ts";
import {
  applyEchoes,
  applyRequests,
  applyWindowCollisions,
  staleSnapshots,
  watchSessionEnds,
} from "../../../internal/telemetry/instruments.ts";

/** How many ties the apply window judged ambiguous (and mirrored) for the claim, in this process. */
const ambiguousCount = async () =>
  (await applyWindowCollisions.get()).values
    .filter((v) => v.labels.outcome === "ambiguous" && v.labels.claim_name === "apps")
    .reduce((sum, v) => sum + v.value, 0);

/** How many of the applier's writes the apply window judged (echo, late, withheld or ambiguous). */
const judgedCount = async () =>
  [...(await applyEchoes.get()).values, ...(await applyWindowCollisions.get()).values]
    .filter((v) => v.labels.claim_name === "apps")
    .reduce((sum, v) => sum + v.value, 0);

/** How many apply attempts for the claim ended `ended` in this process. */
const requestsEnded = async (ended: string) =>
  (await applyRequests.get()).values
    .filter((v) => v.labels.outcome === ended && v.labels.claim_name === "apps")
    .reduce((sum, v) => sum + v.value, 0);

/** How many of the GitTarget's watch connections ended for a fresh snapshot. */
const resyncCount = async () =>
  (await watchSessionEnds.get()).values
    .filter((v) => v.labels.reason === "resync" && v.labels.gittarget_name === "apps")
    .reduce((sum, v) => sum + v.value, 0);

/** How many snapshots of the GitTarget the operator (in this process) counted with `outcome`. */
const staleCount = async (outcome: string) =>
  (await staleSnapshots.get()).values.find(
    (v) => v.labels.outcome === outcome && v.labels.gittarget_name === "apps",
  )?.value ?? 0;

/**
 * Whether the claim's last reconcile, in an operator's log lines, was a settled one: requeued a
 * minute out, with no pass begun since.
 */
const claimSettled = (logs: readonly string[]) => {
  const last = logs.findLast((l) => l.includes('"controller":"fluxclaim"'));
  return (
    last?.startsWith("reconciled; looking again later") === true && /"requeueAfterMs":[1-9]\d{4,}/.test(last)
  );
};

const namespace = "shop";
const branchKey = `${namespace}/main`;
const file = "clusters/apps/settings.yaml";
const settingsFile = (mode: string, size?: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: ${namespace}\n  labels:\n    app: apps\ndata:\n  mode: ${mode}\n${size ? `  size: ${size}\n` : ""}`;

/**
 * The file as Git holds it when the push lands, with another key than the edits' set to `size`:
 * everything else (a key only a live client keeps, say) stays, so live and Git still agree.
 */
const withSize =
  (size: string) =>
  (current = ""): string =>
    /\n {2}size: .*\n/.test(current)
      ? current.replace(/\n {2}size: .*\n/, `\n  size: ${size}\n`)
      : current.replace(/\ndata:\n/, `\ndata:\n  size: ${size}\n`);

/** A Deployment that never gets ready: no kubelet runs here. */
const neverReady = (name: string) =>
  `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\nspec:\n  selector:\n    matchLabels: {app: ${name}}\n  template:\n    metadata:\n      labels: {app: ${name}}\n    spec:\n      containers:\n        - name: c\n          image: example.invalid/never:1\n`;

/** When kustomize-controller last wrote the object's content, from its managedFields. */
const fluxWroteAt = (cm: V1ConfigMap) => {
  const entry = cm.metadata?.managedFields?.find(
    (e) => e.manager === "kustomize-controller" && e.subresource !== "status",
  );
  return entry?.time ? new Date(entry.time).toISOString() : undefined;
};

describe("neither side's change is lost, with the real Flux controllers", () => {
  let env: MirrorEnvironment;
  let flux: Flux;
  let kustomizations: ResourceClient<Kustomization>;

  const operationOf = async (): Promise<ApplyOperation | undefined> =>
    (await fluxClaims(env.kc).get(namespace, "apps"))?.status?.operation;
  const live = () => env.core.readNamespacedConfigMap({ namespace, name: "settings" });
  const inGit = async () => (await env.git.fileAt("state", "main", file)) ?? "";
  // A person's edit through a client that is not kubectl: kustomize-controller drops the
  // entries of every manager whose name starts with "kubectl" when it applies, so only another
  // client's entry can share a second with the applier's in what the watch delivers.
  const edit = (mode: string) =>
    env.core.patchNamespacedConfigMap({
      namespace,
      name: "settings",
      fieldManager: "k9s",
      // The same client also keeps a key of its own that Git does not set, so its entry stays
      // beside kustomize-controller's when that takes data.mode back.
      body: [
        { op: "replace", path: "/data/mode", value: mode },
        { op: "add", path: "/data/note", value: "kept by k9s" },
      ],
    });

  before(async () => {
    env = await startMirrorEnvironment([namespace], {}, { attributed: true });
    flux = await startFlux(env.plane);
    kustomizations = new ResourceClient<Kustomization>(env.kc, kustomizationType);
    await env.git.pushForeignCommit("state", {
      files: { [file]: settingsFile("start") },
      message: "The folder Flux applies",
    });
    await fluxSource(env, namespace, mirrorUser);
    await kustomizations.apply(kustomization(namespace, "apps", "./clusters/apps"), "kubectl");
    await eventually(async () => (await live().catch(() => undefined))?.data?.mode === "start", {
      timeoutMs: 60_000,
      description: "Flux applied the folder",
    });
    await applyMirror(env.kc, namespace, env.url, mirrorUser, [
      {
        name: "apps",
        path: "clusters/apps",
        rules: [
          { apiGroups: [""], resources: ["configmaps"], objectSelector: { matchLabels: { app: "apps" } } },
        ],
        applierClaimRef: { kind: "FluxClaim", name: "apps" },
      },
    ]);
    await fluxClaims(env.kc).apply(fluxClaim(namespace, "apps"), mirrorFieldManager);
    await eventually(
      async () => {
        const [operation, head] = await Promise.all([operationOf(), env.git.branchHead("state", "main")]);
        return operation?.phase === "Succeeded" && operation.commit === head;
      },
      { timeoutMs: 90_000, description: "the converge at start applied the tip" },
    );
  });
  after(async () => {
    await current?.stop();
    await flux?.stop();
    await env?.stop();
  });

  /** The operator of the tests from here on: the environment's, until a restart replaces it. */
  let current: { stop(): Promise<void> } | undefined;
  /** Stops the operator, does `whileDown`, and starts a new one on the same cluster and repository. */
  const restartAfter = async (whileDown: () => Promise<void>, settings: Partial<OperatorSettings> = {}) => {
    await (current ?? env.operator).stop();
    await whileDown();
    const started = startOwnedOperator(env.operatorKc, "restarted", {
      ...env.operatorSettings,
      ...settings,
    });
    current = started;
    return started;
  };
  /** The claim's last apply succeeded and the cluster runs what Git holds: a base to restart from. */
  const inStep = () =>
    eventually(
      async () => {
        const [operation, cm, content] = await Promise.all([operationOf(), live(), inGit()]);
        return operation?.phase === "Succeeded" && content.includes(`mode: ${cm.data?.mode}\n`);
      },
      { timeoutMs: 60_000, description: "the claim applied, and the cluster at what Git holds" },
    );
  /** A new process has published its initial snapshots, and holds nothing more to write. */
  const initialSnapshotsPublished = (operator: ReturnType<typeof startOwnedOperator>) =>
    eventually(
      () => {
        const worker = operator.workers.worker(branchKey);
        return (
          operator.sourceContexts.snapshotsSettled({ namespace, name: "apps" }) &&
          worker !== undefined &&
          !worker.holdsResync(`${namespace}/apps`) &&
          worker.backlog === 0
        );
      },
      { timeoutMs: 60_000, description: "the new process's initial snapshots published" },
    );
  const fluxEvents = async (reason: string) =>
    (await env.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace })).items.filter(
      (e) => e.reason === reason && e.regarding?.kind === "FluxClaim" && e.regarding.name === "apps",
    );
  const eventsNaming = async (reason: string, text: string) =>
    (await env.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace })).items.filter(
      (e) => e.reason === reason && e.regarding?.kind === "GitTarget" && e.note?.includes(text),
    );

  it("a burst of live edits to one key while an apply of another key runs ends with the last edit in Git and in the cluster", async () => {
    // Rounds go on until two (make soak: ten) had kustomize-controller's write in the same
    // second as the last edit before it (a tie in managedFields, which only the watch's order
    // resolves); each tie loses the edit when the rule is broken.
    const tiesWanted = process.env.SOAK ? 10 : 2;
    let ties = 0;
    for (let round = 1; ties < tiesWanted; round++) {
      assert.ok(
        round <= tiesWanted * 3,
        `only ${ties} of ${round - 1} rounds had the apply's write in an edit's second`,
      );
      const before = fluxWroteAt(await live());
      let last = "";
      // Edits a quarter-second apart; a foreign commit of another key is pushed after the
      // eighteenth, and the burst stops as soon as kustomize-controller's write has landed, so
      // nothing after it heals what it did: it is the last write until the operator acts.
      for (let n = 1; ; n++) {
        assert.ok(n <= 200, `round ${round}: kustomize-controller never wrote during the burst`);
        last = `r${round}-e${n}`;
        await edit(last);
        if (n === 18) {
          // Another key, on whatever mode Git holds when it lands (the operator commits edits meanwhile).
          const size = (current = "") =>
            settingsFile(current.match(/mode: (\S+)/)?.[1] ?? "start", `size-${round}`);
          await env.git.pushForeignCommit("state", {
            files: { [file]: size },
            message: `Another key, round ${round}`,
          });
          env.operator.workers.notice(branchKey);
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
        const cm = await live();
        if (fluxWroteAt(cm) !== before) {
          const second = (manager: string) =>
            cm.metadata?.managedFields
              ?.filter((e) => e.manager === manager && e.time)
              .map((e) => Math.floor(new Date(e.time!).getTime() / 1000))[0];
          if (second("k9s") === second("kustomize-controller")) ties++;
          break;
        }
      }
      await eventually(async () => (await inGit()).includes(`mode: ${last}\n`), {
        timeoutMs: 60_000,
        description: `round ${round}: Git holds the last edit, ${last}`,
      });
      // A withheld write made a Repair due: the cluster is put back at the edit, and stays there.
      await eventually(
        async () => {
          const [operation, head, cm] = await Promise.all([
            operationOf(),
            env.git.branchHead("state", "main"),
            live(),
          ]);
          return (
            operation?.phase === "Succeeded" &&
            operation.commit === head &&
            cm.data?.mode === last &&
            (await inGit()).includes(`mode: ${last}\n`)
          );
        },
        { timeoutMs: 90_000, description: `round ${round}: the cluster and Git both at ${last}` },
      );
    }
  });

  it("an ambiguous tie with no previous event mirrors the applier's write and says so in a Warning Event", async () => {
    // An object enters the watch's selector with kustomize-controller's write, which adds the
    // label: the watch's first event of it, so nothing tells who wrote it. A person edits it in
    // the same second (until the apply lands), and owns a key the commit does not set, so their
    // entry stays beside the applier's. Their client is not kubectl: kustomize-controller drops
    // the entries of every manager whose name starts with "kubectl" when it applies (Flux's
    // field-manager cleanup), so a kubectl edit never ties with it.
    for (let attempt = 1; ; attempt++) {
      const name = `entering-${attempt}`;
      const [ambiguousBefore, judgedBefore] = [await ambiguousCount(), await judgedCount()];
      await env.core.createNamespacedConfigMap({
        namespace,
        fieldManager: "k9s",
        body: { metadata: { name }, data: { mode: "live" } },
      });
      await env.git.pushForeignCommit("state", {
        files: {
          [`clusters/apps/${name}.yaml`]: settingsFile("from-git").replace("name: settings", `name: ${name}`),
        },
        message: `${name} in Git`,
      });
      env.operator.workers.notice(branchKey);
      // Edits a tenth of a second apart until the apply has landed, read without writing.
      let cm: V1ConfigMap;
      for (let n = 0; ; n++) {
        assert.ok(n < 600, "kustomize-controller never applied the new file");
        await env.core.patchNamespacedConfigMap({
          namespace,
          name,
          fieldManager: "k9s",
          body: [{ op: "add", path: "/data/note", value: `edit-${n}` }],
        });
        await new Promise((resolve) => setTimeout(resolve, 100));
        cm = await env.core.readNamespacedConfigMap({ namespace, name });
        if (cm.metadata?.labels?.app === "apps") break;
      }
      const second = (manager: string) =>
        cm.metadata?.managedFields
          ?.filter((e) => e.manager === manager)
          .map((e) => Math.floor(new Date(e.time!).getTime() / 1000))[0];
      // The object as kustomize-controller left it: is its write in the last edit's second? And
      // did the watch see that write first (kustomize-controller can write twice in one apply,
      // and only the first is seen with no predecessor)? The window's judgement counts it.
      const tied =
        second("kustomize-controller") !== undefined && second("kustomize-controller") === second("k9s");
      const judgedTie =
        tied &&
        (await eventually(
          async () => {
            if ((await ambiguousCount()) > ambiguousBefore) return "tie";
            return (await judgedCount()) > judgedBefore && "no tie";
          },
          { timeoutMs: 60_000, description: "kustomize-controller's write judged by the apply window" },
        )) === "tie";
      if (!judgedTie) {
        assert.ok(attempt < 8, "kustomize-controller's first write never shared a second with an edit");
        continue;
      }
      const warning = await eventually(
        async () =>
          (await env.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace })).items.find(
            (e) =>
              e.reason === "AmbiguousWriteMirrored" &&
              e.regarding?.kind === "GitTarget" &&
              e.regarding.name === "apps" &&
              e.note?.includes(name),
          ),
        { timeoutMs: 60_000, description: "a Warning on the GitTarget naming the object" },
      );
      assert.equal(warning.type, "Warning");
      assert.match(warning.note ?? "", /k9s \(data\.note\)/, "it names the other manager and its fields");
      assert.ok(
        (await env.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace })).items.some(
          (e) => e.reason === "AmbiguousWriteMirrored" && e.regarding?.kind === "FluxClaim",
        ),
        "and on the claim",
      );
      return;
    }
  });

  it("a snapshot taken while a pushed commit is not yet applied is discarded, and the pushed value reaches the cluster", async () => {
    const discardedBefore = await staleCount("discarded");
    // A pushed change, with a broken manifest beside it: its apply fails until that is fixed.
    const pushed = await env.git.pushForeignCommit("state", {
      files: {
        [file]: settingsFile("pushed"),
        "clusters/apps/broken.yaml":
          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_A_Name\n  namespace: shop\n",
      },
      message: "A change, and a broken manifest",
    });
    env.operator.workers.notice(branchKey);
    await eventually(async () => (await operationOf())?.phase === "Failed", {
      timeoutMs: 60_000,
      description: "the apply failed",
    });
    // A re-list snapshot of the cluster's old state arrives while Git is ahead.
    const target = { namespace, name: "apps" };
    const resyncsBefore = await resyncCount();
    env.operator.sourceContexts.resync(target);
    await eventually(
      async () =>
        (await resyncCount()) > resyncsBefore && env.operator.sourceContexts.snapshotsSettled(target),
      { timeoutMs: 30_000, description: "the re-list's snapshot taken by the branch worker" },
    );
    await env.git.pushForeignCommit("state", {
      files: { "clusters/apps/broken.yaml": null },
      message: "Fix it",
    });
    env.operator.workers.notice(branchKey);
    await eventually(async () => (await live()).data?.mode === "pushed", {
      timeoutMs: 90_000,
      description: "the pushed value on the cluster",
    });
    // Once the apply is done, the fresh snapshot asked for then is decided: what only the
    // cluster held (the key the earlier test's client keeps) reaches Git beside the pushed value.
    await eventually(
      async () => {
        const content = await inGit();
        return content.includes("mode: pushed\n") && content.includes("note: kept by k9s");
      },
      { timeoutMs: 60_000, description: "the fresh snapshot after the apply, decided" },
    );
    // Git never went back: every version of the file since the push holds the pushed value.
    const versions = await env.git.versionsSince("state", pushed, file);
    for (const [commit, content] of versions) assert.match(content, /mode: pushed/, `at ${commit}`);
    assert.ok(
      versions.some(([commit]) => commit === pushed),
      "the history reads from the push",
    );
    assert.ok((await staleCount("discarded")) > discardedBefore, "counted in stale_snapshots_total");
  });

  it("a source on another repository or branch is Rejected, and the worker asks again no sooner than 15 s after the rejection", async () => {
    await inStep();
    let rejectedAt: number | undefined;
    const repositories = flux.gitRepositories(env.kc);
    const source = (branch: string) =>
      ({
        metadata: { name: "state", namespace },
        spec: { url: env.url, ref: { branch }, interval: "1m", secretRef: { name: "flux-git" } },
      }) as FluxObject;
    // The claim reads the GitRepository on each pass (a minute apart once settled, a second
    // apart while an operation settles): one that read the other branch first would stop holding
    // the Kustomization (SourceMismatch), and the worker would ask nothing to reject. So the
    // source changes just after a settled pass that left the claim holding the Kustomization
    // (a pass settles whether or not it holds), and the worker is asked at once. The pass is one
    // made since this test began: the last settled one may be a minute old, and its successor
    // due as the source changes (seen on a loaded machine: the pass read "release" first).
    const since = env.operator.logs.length;
    let inControl: string | undefined;
    await eventually(
      async () => {
        const claim = await fluxClaims(env.kc).get(namespace, "apps");
        inControl = claim?.status?.conditions?.find((c) => c.type === "InControl")?.reason;
        return claimSettled(env.operator.logs.slice(since)) && claim !== undefined && holdsApplier(claim);
      },
      {
        // The next pass is at most a minute out.
        timeoutMs: 90_000,
        description: () =>
          `the claim's last pass settled (next one a minute later), holding (InControl ${inControl})`,
      },
    );
    // Somebody points the GitRepository at another branch, then pushes to the one mirrored.
    await repositories.apply(source("release"), "kubectl");
    try {
      const pushed = await env.git.pushForeignCommit("state", {
        files: {
          [file]: withSize("rejected"),
        },
        message: "Pushed while the source reads another branch",
      });
      const rejected = await eventually(
        async () =>
          env.operator.workers.notice(branchKey) &&
          (await fluxEvents("ApplyRequestFailed")).find(
            (e) => e.note?.includes(pushed) && e.note.includes("ended Rejected"),
          ),
        { timeoutMs: 60_000, description: "the rejected attempt's ApplyRequestFailed Event" },
      );
      assert.match(rejected.note!, /GitRepository shop\/state fetches \S+ release, not \S+ main/);
      rejectedAt = Date.parse(String(rejected.eventTime));
    } finally {
      await repositories.apply(source("main"), "kubectl");
    }
    const operation = await eventually(
      async () => {
        const [now, tip] = await Promise.all([operationOf(), env.git.branchHead("state", "main")]);
        return now?.phase === "Succeeded" && now.commit === tip && now;
      },
      { timeoutMs: 90_000, description: "applied once the source reads the branch again" },
    );
    const waited = Date.parse(operation.requestedAt!) - rejectedAt;
    assert.ok(waited >= 15_000, `asked again ${waited} ms after the rejection`);
    assert.equal((await live()).data?.size, "rejected");
  });

  it("a commit pushed while the operator is down is applied at start when nobody edited the object live", async () => {
    await inStep();
    let pushed = "";
    await restartAfter(async () => {
      pushed = await env.git.pushForeignCommit("state", {
        files: { [file]: (await inGit()).replace(/mode: .*/, "mode: pushed-while-down") },
        message: "Pushed while the operator is down",
      });
    });
    // The initial snapshot leaves the pushed document as it is; the converge at start applies it.
    await eventually(async () => (await live()).data?.mode === "pushed-while-down", {
      timeoutMs: 90_000,
      description: "the pushed value on the cluster",
    });
    for (const [commit, content] of await env.git.versionsSince("state", pushed, file))
      assert.match(content, /mode: pushed-while-down/, `at ${commit}`);
    assert.deepEqual(await eventsNaming("PushedChangeOverridden", pushed.slice(0, 12)), []);
  });

  it("a commit pushed while the operator is down loses to a live edit of the same object, and a PushedChangeOverridden Event names the commit", async () => {
    await inStep();
    let pushed = "";
    await restartAfter(async () => {
      pushed = await env.git.pushForeignCommit("state", {
        files: { [file]: (await inGit()).replace(/mode: .*/, "mode: pushed-and-edited") },
        message: "Pushed while the operator is down, and edited live too",
      });
      await edit("edited-while-down");
    });
    await eventually(async () => (await inGit()).includes("mode: edited-while-down\n"), {
      timeoutMs: 90_000,
      description: "the live edit in Git: the API wins",
    });
    const [warning] = await eventually(
      async () => {
        const found = await eventsNaming("PushedChangeOverridden", pushed.slice(0, 12));
        return found.length > 0 && found;
      },
      { timeoutMs: 60_000, description: "a PushedChangeOverridden Event naming the pushed commit" },
    );
    assert.equal(warning!.type, "Warning");
    assert.match(warning!.note ?? "", /ConfigMap shop\/settings/);
    assert.match(warning!.note ?? "", /git revert [0-9a-f]{12}/);
    const messages = await env.git.gitIn("state", ["log", "--format=%B", `${pushed}..main`]);
    assert.match(
      messages,
      new RegExp(`Overrides-Pushed-Change: ${pushed}`),
      "a trailer in the snapshot's commit",
    );
    assert.equal((await live()).data?.mode, "edited-while-down", "the cluster keeps the edit");
  });

  it("a Repair pending when the last process stopped is asked for again at start (status.repairPending restored)", async () => {
    await inStep();
    await restartAfter(async () => {
      // The last process stopped with a Repair pending: the cluster may still run a reverted value.
      await fluxClaims(env.kc).applyStatus(
        { metadata: { namespace, name: "apps" }, status: { repairPending: true } } as FluxClaim,
        repairFieldManager,
      );
    });
    const repaired = await eventually(
      async () => {
        const operation = await operationOf();
        return operation?.reason === "Repair" && operation.phase === "Succeeded" && operation;
      },
      { timeoutMs: 90_000, description: "a Repair applied after the start" },
    );
    assert.ok(repaired.commit);
    await eventually(
      async () => (await fluxClaims(env.kc).get(namespace, "apps"))?.status?.repairPending === false,
      { timeoutMs: 30_000, description: "repairPending answered" },
    );
  });

  it("a recorded token that is nowhere on the Kustomization means the process stopped between the record and the resume: the Kustomization is suspended, and the operation ends Failed", async () => {
    await inStep();
    const head = (await env.git.branchHead("state", "main"))!;
    const token = `${new Date().toISOString()}-never-resumed`;
    await restartAfter(async () => {
      // The last process recorded an apply and stopped before its resume: the Kustomization is
      // suspended as the claim holds it, and the token is on it nowhere.
      await fluxClaims(env.kc).applyStatus(
        {
          metadata: { namespace, name: "apps" },
          status: {
            operation: {
              phase: "Requested",
              reason: "ForeignCommit",
              commit: head,
              requestToken: token,
              requestedAt: new Date().toISOString(),
            },
          },
        } as FluxClaim,
        operationFieldManager,
      );
    });
    const failed = await eventually(
      async () =>
        (await fluxEvents("ApplyFailed")).find(
          (e) => e.note?.includes(head) && e.note.includes("nothing was applied"),
        ),
      { timeoutMs: 60_000, description: "the recovered operation's ApplyFailed Event" },
    );
    assert.match(failed.note!, /stopped between recording this apply and resuming the Kustomization/);
    assert.equal((await kustomizations.get(namespace, "apps"))?.spec?.suspend, true, "suspended");
    // A failure backs off and asks again: the claim ends applied at the tip, under a new token.
    const operation = await eventually(
      async () => {
        const [now, tip] = await Promise.all([operationOf(), env.git.branchHead("state", "main")]);
        return now?.phase === "Succeeded" && now.commit === tip && now;
      },
      { timeoutMs: 90_000, description: "applied again after the failure" },
    );
    assert.notEqual(operation.requestToken, token);
  });

  it("an apply that runs past its budget is Unresolved: an ApplyUnresolved Event, suspended at once, and followed to its end", async () => {
    await inStep();
    // A budget of 3 s, and an apply that waits 10 s for a Deployment no kubelet will run.
    const started = await restartAfter(
      async () => {
        await kustomizations.apply(
          {
            metadata: { name: "apps", namespace },
            spec: { ...kustomization(namespace, "apps", "./clusters/apps").spec, wait: true, timeout: "10s" },
          } as Kustomization,
          "kubectl",
        );
        await env.git.pushForeignCommit("state", {
          files: { "clusters/apps/slow.yaml": neverReady("slow") },
          message: "A Deployment that never gets ready",
        });
      },
      { applyBudgetMs: 3_000 },
    );
    try {
      const unresolved = await eventually(
        async () => {
          const operation = await operationOf();
          return operation?.phase === "Unresolved" && operation;
        },
        { timeoutMs: 90_000, description: "the apply Unresolved past its budget" },
      );
      await eventually(
        async () =>
          (await env.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace })).items.some(
            (e) =>
              e.reason === "ApplyUnresolved" && e.regarding?.kind === "FluxClaim" && e.type === "Warning",
          ),
        { timeoutMs: 30_000, description: "an ApplyUnresolved Event on the claim" },
      );
      // Suspended at once, while the apply still runs; then followed to its end (the wait times out).
      assert.equal((await kustomizations.get(namespace, "apps"))?.spec?.suspend, true, "suspended at once");
      const ended = await eventually(
        async () => {
          const operation = await operationOf();
          return (
            operation?.requestToken === unresolved.requestToken && operation?.phase === "Failed" && operation
          );
        },
        { timeoutMs: 90_000, description: "the Unresolved apply followed to its end" },
      );
      assert.ok(ended.completedAt, "completed");
      assert.ok(started.workers, "the restarted operator ran it");
    } finally {
      // Back to a folder Flux can apply at once, for the test after this one.
      await kustomizations.apply(kustomization(namespace, "apps", "./clusters/apps"), "kubectl");
      await env.git.pushForeignCommit("state", {
        files: { "clusters/apps/slow.yaml": null },
        message: "Drop the Deployment",
      });
    }
  });

  // It replaces the operator with one whose record of its next apply reaches the API server only
  // once a newer commit was pushed and the worker has fetched it.
  it("a decision that no longer holds when the write is due (the commit is no longer the tip) asks nothing: Stale, no failure, decided again at once", async () => {
    await inStep();
    await (current ?? env.operator).stop();
    current = undefined;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held = false;
    const proxy = await startApiProxy(
      env.operatorKc,
      () => false,
      (r) => {
        const record =
          r.method === "PATCH" &&
          r.path.includes("/fluxclaims/apps/status") &&
          r.body.includes('"Requested"');
        if (!record || held) return undefined;
        held = true;
        return released;
      },
    );
    const operator = startOwnedOperator(proxy.kubeConfig, "stale", {
      ...env.operatorSettings,
    });
    current = { stop: () => operator.stop().then(() => proxy.close()) };
    const staleBefore = await requestsEnded("Stale");
    const failuresBefore =
      (await fluxEvents("ApplyRequestFailed")).length + (await fluxEvents("ApplyFailed")).length;
    const first = await env.git.pushForeignCommit("state", {
      files: { [file]: withSize("first") },
      message: "The commit the held record is for",
    });
    await eventually(() => operator.workers.notice(branchKey) && held, {
      timeoutMs: 90_000,
      description: "the apply of the first commit recorded (and held)",
    });
    const fetched = operator.workers.worker(branchKey)!.fetches;
    const second = await env.git.pushForeignCommit("state", {
      files: { [file]: withSize("second") },
      message: "A newer commit, pushed while the record is on its way",
    });
    await eventually(
      () => operator.workers.notice(branchKey) && operator.workers.worker(branchKey)!.fetches > fetched,
      {
        timeoutMs: 60_000,
        description: "the worker fetched the newer commit",
      },
    );
    release();
    const operation = await eventually(
      async () => {
        const now = await operationOf();
        return now?.phase === "Succeeded" && now.commit === second && now;
      },
      { timeoutMs: 90_000, description: "the newer commit applied" },
    );
    assert.equal(await requestsEnded("Stale"), staleBefore + 1, "the held attempt ended Stale");
    assert.equal(
      (await fluxEvents("ApplyRequestFailed")).length + (await fluxEvents("ApplyFailed")).length,
      failuresBefore,
      "no failure recorded",
    );
    assert.notEqual(operation.commit, first);
    assert.equal((await live()).data?.size, "second");
  });

  // It replaces the operator with one that reaches the API server through a proxy that loses
  // the first resume's answer after it landed.
  it("a resume whose answer is lost is followed and suspended again", async () => {
    await (current ?? env.operator).stop();
    current = undefined;
    const proxy = await startApiProxy(
      env.operatorKc,
      (r) =>
        r.method === "PATCH" && r.path.includes("/kustomizations/apps") && r.body.includes('"suspend":false'),
    );
    const operator = startOwnedOperator(proxy.kubeConfig, "resume-lost", {
      ...env.operatorSettings,
    });
    try {
      // Pushed once the new process has published its initial snapshots (a commit pushed while
      // it starts is another rule's: the restart's), so its apply is the one resumed for.
      await initialSnapshotsPublished(operator);
      await env.git.pushForeignCommit("state", {
        files: { [file]: settingsFile("after-a-lost-answer") },
        message: "Applied through a lost answer",
      });
      await eventually(() => operator.workers.notice(branchKey) && proxy.lost.length > 0, {
        timeoutMs: 90_000,
        description: "a resume whose answer was lost",
      });
      // The lost resume's token, as it carried it: the operation it belongs to.
      const sent = JSON.parse(proxy.lost[0]!.body) as Kustomization;
      const requestToken = sent.metadata?.annotations?.["reconcile.fluxcd.io/requestedAt"];
      assert.ok(requestToken, "the lost resume carried its token");
      const operation = await eventually(
        async () => {
          const now = await operationOf();
          // Ended, or replaced by another attempt's record (an attempt ended RequestFailed).
          const ended =
            now?.requestToken !== requestToken || ["Succeeded", "Failed"].includes(now.phase ?? "");
          return ended && now;
        },
        { timeoutMs: 90_000, description: "the operation followed to its end" },
      );
      assert.equal(
        operation.requestToken,
        requestToken,
        "the lost resume's operation was followed, not given up",
      );
      assert.equal(operation.phase, "Succeeded", `followed as if it landed: ${operation.message ?? ""}`);
      const k = await kustomizations.get(namespace, "apps");
      assert.equal(k?.spec?.suspend, true, "suspended again");
      // The lost resume may be the converge at start or the pushed commit's apply: either way
      // the pushed value reaches the cluster.
      await eventually(async () => (await live()).data?.mode === "after-a-lost-answer", {
        timeoutMs: 60_000,
        description: "the pushed value on the cluster",
      });
    } finally {
      await operator.stop();
      await proxy.close();
    }
  });

  // Its GitTarget ends without the claim for a moment, so the claim lets go.
  // The operator reaches the API server through a proxy that holds the dispatcher's re-read of
  // the GitTarget until the test has removed its applierClaimRef.
  it("an attempt whose GitTarget no longer names the claim when the dispatcher reads it asks nothing: Dropped, the Kustomization never resumed", async () => {
    await (current ?? env.operator).stop();
    current = undefined;
    // Only the attempt for the pushed commit is held: one the new process sends for the tip it
    // started at (a catch-up, under load sent after the test looked) goes through.
    let tipBefore: string | undefined;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const held: string[] = [];
    const asked: string[] = [];
    const forPushed = () => {
      const last = operator.logs.filter((l) => l.startsWith("asking an applier to apply")).at(-1);
      return tipBefore !== undefined && last !== undefined && !last.includes(tipBefore);
    };
    const proxy = await startApiProxy(
      env.operatorKc,
      () => false,
      (r) => {
        if (!forPushed()) return undefined;
        const path = r.path.split("?")[0]!;
        // An apply's request: the resume or the requestedAt token, on the Kustomization.
        if (r.method === "PATCH" && path.endsWith("/kustomizations/apps") && r.body.includes("requestedAt"))
          asked.push(r.body);
        if (r.method !== "GET" || !path.endsWith(`/namespaces/${namespace}/gittargets/apps`))
          return undefined;
        held.push(r.path);
        return released;
      },
    );
    const operator = startOwnedOperator(proxy.kubeConfig, "dropped", { ...env.operatorSettings });
    const targets = gitTargets(env.kc);
    try {
      await initialSnapshotsPublished(operator);
      const droppedBefore = await requestsEnded("Dropped");
      tipBefore = await env.git.branchHead("state", "main");
      const pushed = await env.git.pushForeignCommit("state", {
        files: { [file]: withSize("dropped") },
        message: "Pushed while the GitTarget lets go of its claim",
      });
      // The attempt for the pushed commit is sent before the GitTarget lets go: the worker would
      // otherwise see the claim gone and send nothing. Its re-read of the GitTarget is held
      // (whenever it comes) until the test releases it, after the change. Any attempt before it
      // has ended by then: a claim has one attempt out at a time.
      await eventually(
        () =>
          operator.workers.notice(branchKey) &&
          operator.logs.some((l) => l.startsWith("asking an applier to apply") && l.includes(pushed)),
        { timeoutMs: 60_000, description: "the attempt for the pushed commit sent" },
      );
      const operationBefore = await operationOf();
      const target = (await targets.get(namespace, "apps"))!;
      await targets.jsonPatch(target, [{ op: "remove", path: "/spec/applierClaimRef" }], "kubectl-edit");
      release();
      await eventually(async () => (await requestsEnded("Dropped")) > droppedBefore, {
        timeoutMs: 30_000,
        description: "the attempt ended Dropped",
      });
      assert.ok(held.length > 0, "the dispatcher's re-read of the GitTarget was held over the change");
      assert.ok(
        operator.logs.some((l) => l.startsWith("an apply attempt ended") && l.includes('"ended":"Dropped"')),
        "logged as Dropped",
      );
      assert.equal(
        (await operationOf())?.requestToken,
        operationBefore?.requestToken,
        "no operation recorded",
      );
      assert.deepEqual(asked, [], "no request for an apply reached the Kustomization");
    } finally {
      release();
      const target = await targets.get(namespace, "apps");
      if (target && !target.spec.applierClaimRef)
        await targets.jsonPatch(
          target,
          [{ op: "add", path: "/spec/applierClaimRef", value: { kind: "FluxClaim", name: "apps" } }],
          "kubectl-edit",
        );
      await operator.stop();
      await proxy.close();
    }
  });

  // Last in the suite: its GitTarget is deleted and created again, and the Kustomization ends
  // suspended by hand as well as held.
  it("a GitTarget that newly names a claim keeps a commit pushed since the claim last applied, when nobody edited the object live", async () => {
    const operator = startOwnedOperator(env.operatorKc, "renamed", { ...env.operatorSettings });
    current = operator;
    const targets = gitTargets(env.kc);
    // The base: the claim applied the tip.
    const base = await eventually(
      async () => {
        const [operation, head] = await Promise.all([operationOf(), env.git.branchHead("state", "main")]);
        return operation?.phase === "Succeeded" && operation.commit === head && head;
      },
      { timeoutMs: 90_000, description: "the claim applied the tip" },
    );
    const { apiVersion, kind, metadata, spec } = (await targets.get(namespace, "apps"))!;
    await targets.delete(namespace, "apps");
    await eventually(
      async () => {
        const claim = await fluxClaims(env.kc).get(namespace, "apps");
        const configured = claim?.status?.conditions?.find((c) => c.type === "Configured");
        const k = await kustomizations.get(namespace, "apps");
        return (
          (await targets.get(namespace, "apps")) === undefined &&
          configured?.reason === "NotReferenced" &&
          k?.spec?.suspend !== true
        );
      },
      { timeoutMs: 60_000, description: "the GitTarget gone, and the claim handed the Kustomization back" },
    );
    // A person pauses Flux by hand, so nothing applies the push before the claim holds it again.
    const k = (await kustomizations.get(namespace, "apps"))!;
    await kustomizations.jsonPatch(k, [{ op: "add", path: "/spec/suspend", value: true }], "kubectl-patch");
    const pushed = await env.git.pushForeignCommit("state", {
      files: { [file]: (await inGit()).replace(/mode: .*/, "mode: pushed-while-unnamed") },
      message: "Pushed while no GitTarget named the claim",
    });
    await targets.create({ apiVersion, kind, metadata: { name: metadata.name, namespace }, spec });
    // The push notice a receiver would deliver.
    await eventually(() => operator.workers.notice(branchKey), {
      timeoutMs: 60_000,
      description: "the branch worker told of the push",
    });
    // The new GitTarget's first snapshot keeps the pushed document (the live object still equals
    // the claim's last applied commit's), and the converge applies it.
    // Ends early when Git goes back instead (the rule broken).
    await eventually(
      async () =>
        (await live()).data?.mode === "pushed-while-unnamed" ||
        !(await inGit()).includes("pushed-while-unnamed"),
      { timeoutMs: 90_000, description: "the pushed value on the cluster, or gone from Git" },
    );
    for (const [commit, content] of await env.git.versionsSince("state", pushed, file))
      assert.match(content, /mode: pushed-while-unnamed/, `at ${commit}`);
    assert.equal((await live()).data?.mode, "pushed-while-unnamed", "the pushed value on the cluster");
    assert.notEqual((await operationOf())?.commit, base, "the claim applied a newer commit");
    assert.deepEqual(await eventsNaming("PushedChangeOverridden", pushed.slice(0, 12)), []);
  });
});
