// The rooms of the house and which may import which, as data: hack/imports.ts checks the tree
// against it in `make lint` (docs/architecture.md, "The shape holds by check"). A room is a
// folder of TypeScript under one of the roots, unless `carved` puts a file in a room of its own.
// A new folder, or an import that goes up, is a change to this table, made on purpose.

export interface Layers {
  /** Where the checked sources live, relative to the repository: every .ts file under these. */
  roots: readonly string[];
  /** Files that are not their folder's room, by path: the room each sits in instead. */
  carved: Readonly<Record<string, string>>;
  /**
   * Every room, bottom up: a room imports only the rooms listed before it, so no two rooms
   * import each other and the house reads from the first line down.
   */
  order: readonly string[];
  /** Imports the order would let through that the design forbids, each with why. */
  forbidden: readonly Rule[];
  /** Folders reached from outside through one file only, each with why. */
  faces: readonly Face[];
  /** Rooms whose files may import each other in a circle: the whole circle inside one of them. */
  allowedCircles: readonly string[];
}

/**
 * A room, or `x/**` for the room x and every room under it. In `to`, a pattern matches any
 * imported file, checked or not, by its room (an unchecked file's room is its folder: test/**).
 */
export type Pattern = string;

export interface Rule {
  from: readonly Pattern[];
  to: readonly Pattern[];
  /** The rule in a sentence: it ends the message that names the import. */
  why: string;
}

export interface Face {
  /** The folder, and every room under it, that the face speaks for. */
  folder: string;
  /** The one file of the folder that files outside it import. */
  face: string;
  /** Rooms outside the folder that may import any file of it. */
  except: readonly Pattern[];
  why: string;
}

export const layers: Layers = {
  roots: ["internal", "controllers", "cmd", "generated", "bench"],

  carved: {
    // The generated typed clients are built on internal/kube's ResourceClient, and the face
    // re-exports them, so both sit above internal/kube; the kinds, schemas and conditions sit at
    // the bottom, where internal/kube reads LabelSelector from kinds.ts.
    "generated/v1alpha3/clients.ts": "generated/v1alpha3/clients",
    "generated/v1alpha3/index.ts": "generated/v1alpha3/clients",
  },

  order: [
    // The floor: the shared nouns, clocks, logs and metrics, what is stripped before Git, the
    // type registry, a webhook body's bound, and the API's generated types. None imports a room.
    "internal/types",
    "internal/timing",
    "internal/telemetry",
    "internal/sanitize",
    "internal/typeset",
    "internal/webhook",
    "generated/v1alpha3",
    // Kubernetes access, the typed clients on it, and our controller runtime.
    "internal/kube",
    "generated/v1alpha3/clients",
    "internal/operator",
    // Small rooms each reconciler or the write path calls: grants, credentials, kubeconfigs,
    // signing keys, compiled rules, commit-message templates, SOPS, Kargo, the push receiver.
    "internal/grants",
    "internal/gitauth",
    "internal/kubeconfig",
    "internal/kubeprovider",
    "internal/signing",
    "internal/rulestore",
    "internal/commitmessage",
    "internal/sops",
    "internal/kargo",
    "internal/receiver",
    // The manifest-aware writer, its rooms bottom up, and the real kustomize that judges it.
    "internal/manifest/document",
    "internal/manifest/inventory",
    "internal/manifest/overrides",
    "internal/manifest/placement",
    "internal/manifest/yamledit",
    "internal/manifest",
    "internal/kustomize",
    // The appliers: the pure decisions (no I/O), what is read of Flux's and Argo CD's objects and
    // the clients that write them, the webhook applier's signed requests and its Secret, the
    // claim holds, and the dispatchers that carry applies out.
    "internal/applier/decide",
    "internal/applier/argocd",
    "internal/applier/flux",
    "internal/applier/webhook",
    "internal/applier/claim",
    "internal/applier/dispatch",
    // The watch side: the stream (the seam), the watch plane, attribution, the rules' decisions,
    // and CommitRequests, which take attribution's facts.
    "internal/stream",
    "internal/watch",
    "internal/attribution",
    "internal/rules",
    "internal/commitrequest",
    // The write path: the Git engine, one folder's writes, the durable queue, one branch's
    // worker, and the process-wide parts with the face.
    "internal/git/engine",
    "internal/git/folder",
    "internal/git/queue",
    "internal/git/worker",
    "internal/git",
    // What stands on the write path: Redis (the durable queue's log among its parts), and the
    // decisions of the reconcilers that start and stop workers.
    "internal/redis",
    "internal/gitprovider",
    "internal/gitbranch",
    "internal/gittarget",
    // The reconcilers, the entry points, and the benchmark, which measures all of it.
    "controllers",
    "cmd",
    "bench",
  ],

  forbidden: [
    {
      from: ["internal/git/engine"],
      to: [
        "internal/manifest/**",
        "internal/kustomize",
        "internal/git",
        "internal/git/folder",
        "internal/git/queue",
        "internal/git/worker",
      ],
      why: "the Git engine runs git and knows no worker, folder or kustomize: what a folder builds from is passed in (CloneOptions.buildsFrom)",
    },
    {
      from: ["internal/applier/decide"],
      to: [
        "internal/kube",
        "generated/v1alpha3/clients",
        "internal/operator",
        "internal/applier/flux",
        "internal/applier/argocd",
        "internal/applier/webhook",
      ],
      why: "the applier's decisions are pure: each is fed what its caller read, so it imports no Kubernetes access, client or controller runtime",
    },
    {
      from: ["internal/stream", "internal/watch"],
      to: ["internal/applier/**"],
      why: "the watch side knows no applier claim: what a stream item says of who applied and wrote an object are nouns of internal/types/applied.ts",
    },
    {
      from: ["internal/stream", "internal/watch"],
      to: ["internal/git/**"],
      why: "the stream is the one seam between watching and writing: the watch side imports nothing of the write path",
    },
    {
      from: ["internal/git/**"],
      to: ["internal/watch"],
      why: "the stream is the one seam between watching and writing: the write path imports nothing of the watch plane",
    },
    {
      from: ["internal/manifest/**"],
      to: ["internal/git/**", "internal/kustomize"],
      why: "the manifest-aware writer works on a file-tree interface and never runs Git; kustomize only judges what it writes",
    },
    {
      from: ["internal/**", "generated/**", "controllers", "cmd"],
      to: ["test/**", "hack/**", "bench"],
      why: "the operator ships without its tests, tools and benchmark: nothing it runs imports them",
    },
  ],

  faces: [
    {
      folder: "internal/git",
      face: "internal/git/index.ts",
      except: ["bench"],
      why: "the write path's face is what the rest of the operator uses of it; the benchmark, which times its insides, is the exception",
    },
    {
      folder: "internal/manifest",
      face: "internal/manifest/index.ts",
      except: ["bench"],
      why: "the manifest room's face is what the write path and the kustomize judge use of it; the benchmark, which times its insides, is the exception",
    },
    {
      folder: "internal/applier/decide",
      face: "internal/applier/decide/index.ts",
      except: [],
      why: "the applier's pure decisions are used through their face, by the claims and dispatchers beside them as by the reconcilers and the branch worker",
    },
    {
      folder: "internal/applier/claim",
      face: "internal/applier/claim/index.ts",
      except: [],
      why: "the claim holds are used through their face: each kind's step per pass, and which operations this process follows",
    },
    {
      folder: "internal/applier/webhook",
      face: "internal/applier/webhook/index.ts",
      except: [],
      why: "the webhook applier's signature, Secret, request and callback are used through their face, so what is sent and what is accepted are signed one way",
    },
    {
      folder: "internal/applier/dispatch",
      face: "internal/applier/dispatch/index.ts",
      except: [],
      why: "the dispatchers are started and heard from through their face alone",
    },
    {
      folder: "internal/manifest/yamledit",
      face: "internal/manifest/yamledit/edit.ts",
      except: [],
      why: "the in-place YAML editor is used through edit.ts alone",
    },
  ],

  // A small interpreter: its evaluator and its functions call each other.
  allowedCircles: ["internal/commitmessage"],
};
