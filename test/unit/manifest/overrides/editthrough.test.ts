import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { parse } from "yaml";
import {
  editThrough,
  renderImage,
  type ChainLink,
  type ImageEntry,
} from "../../../../internal/manifest/overrides/editthrough.ts";

const image = "ghcr.io/stefanprodan/podinfo";

// apps/base/podinfo/deployment.yaml, as the document holds it.
const deployment = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "podinfo", labels: { app: "podinfo" } as Record<string, string> },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: "podinfo" } },
    template: {
      metadata: { labels: { app: "podinfo" } },
      spec: {
        containers: [
          {
            name: "podinfo",
            image: `${image}:6.5.0`,
            ports: [{ name: "http", containerPort: 9898 }],
            env: [{ name: "PODINFO_UI_COLOR", value: "#34577c" }],
          },
        ],
      },
    },
  },
};

const base: ChainLink = {
  path: "apps/base/podinfo/kustomization.yaml",
  source: [
    "apiVersion: kustomize.config.k8s.io/v1beta1",
    "kind: Kustomization",
    "resources:",
    "  - deployment.yaml",
    "",
  ].join("\n"),
};

const production: ChainLink = {
  path: "apps/production/kustomization.yaml",
  source: [
    "# Production overlay: pinned versions and capacity for podinfo.",
    "apiVersion: kustomize.config.k8s.io/v1beta1",
    "kind: Kustomization",
    "resources:",
    "  - ../base/podinfo",
    "images:",
    "  # Bumped by the release pipeline.",
    `  - name: ${image}`,
    '    newTag: "6.6.0" # promoted after staging soak',
    "replicas:",
    "  - name: podinfo",
    "    count: 2 # one per zone",
    "",
  ].join("\n"),
};

const chain = [base, production];

type Deployment = typeof deployment;
const podinfoContainer = deployment.spec.template.spec.containers[0]!;

/** The deployment as the cluster runs it, with `change` applied to a copy. */
function liveDeployment(change: (live: Deployment) => void = () => {}): Deployment {
  const live = structuredClone(deployment);
  live.spec.replicas = 2;
  live.spec.template.spec.containers[0]!.image = `${image}:6.6.0`;
  change(live);
  return live;
}

function containerOf(object: unknown, index = 0): { image: string } {
  return (object as Deployment).spec.template.spec.containers[index]!;
}

function frozen<T>(value: T): T {
  if (typeof value === "object" && value !== null) Object.values(value).forEach(frozen);
  return Object.freeze(value);
}

/** editThrough on frozen inputs, so any mutation of them throws. */
function split(documentObject: unknown, live: unknown, links: ChainLink[] = chain) {
  return editThrough(
    frozen(structuredClone(documentObject)),
    frozen(structuredClone(live)),
    frozen(structuredClone(links)),
  );
}

function overlay(lines: string[]): ChainLink {
  return { path: "apps/production/kustomization.yaml", source: [...lines, ""].join("\n") };
}

// Image tags (the OCI grammar), biased towards those YAML would read as something else.
const tags = fc.oneof(
  fc.constantFrom(..."yes No on OFF y null true 1.27 1e3 0x1F 010 0o17 1_000 6".split(" ")),
  fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,15}$/),
);

describe("kustomize edit-through", () => {
  it("kubectl set image rewrites the images override and keeps the base's value", () => {
    const live = liveDeployment((d) => (d.spec.template.spec.containers[0]!.image = `${image}:6.7.1`));
    const result = split(deployment, live);

    const expected = production.source.replace('newTag: "6.6.0"', 'newTag: "6.7.1"');
    assert.deepEqual(result.kustomizations, [{ path: production.path, source: expected }]);
    const before = production.source.split("\n");
    const changedLines = expected.split("\n").filter((line, index) => line !== before[index]);
    assert.deepEqual(changedLines, ['    newTag: "6.7.1" # promoted after staging soak']);
    assert.deepEqual(result.desired, deployment);
  });

  it("a live object equal to the render changes nothing", () => {
    const result = split(deployment, liveDeployment());
    assert.deepEqual(result, { desired: deployment, kustomizations: [] });
  });

  it("scaling rewrites the replicas override's count and keeps the base's replicas", () => {
    const result = split(
      deployment,
      liveDeployment((d) => (d.spec.replicas = 5)),
    );
    assert.deepEqual(result.kustomizations, [
      { path: production.path, source: production.source.replace("count: 2 #", "count: 5 #") },
    ]);
    assert.deepEqual(result.desired, deployment);
  });

  it("a change the entry cannot express falls back to the live value in the document", () => {
    const moved = "registry.example.com/podinfo:6.6.0";
    const result = split(
      deployment,
      liveDeployment((d) => (d.spec.template.spec.containers[0]!.image = moved)),
    );
    assert.deepEqual(result.kustomizations, []);
    assert.equal(containerOf(result.desired).image, moved);
    assert.equal((result.desired as Deployment).spec.replicas, 1);
  });

  it("non-image, non-replica changes pass through to desired untouched", () => {
    const live = liveDeployment((d) => {
      d.metadata.labels = { app: "podinfo", tier: "frontend" };
      d.spec.template.spec.containers[0]!.env = [{ name: "PODINFO_UI_COLOR", value: "#ff0000" }];
      d.spec.template.spec.containers[0]!.image = `${image}:6.7.1`;
    });
    const result = split(deployment, live);
    const expected = structuredClone(live);
    expected.spec.replicas = 1;
    expected.spec.template.spec.containers[0]!.image = `${image}:6.5.0`;
    assert.deepEqual(result.desired, expected);
    assert.equal(result.kustomizations.length, 1);
  });

  it("image fields outside containers and initContainers are not rendered by the images override", () => {
    const runner = {
      apiVersion: "ci.example.com/v1",
      kind: "Runner",
      metadata: { name: "podinfo" },
      spec: { plugins: [{ name: "scan", image: `${image}:6.5.0` }] },
    };
    const live = structuredClone(runner);
    live.spec.plugins[0]!.image = `${image}:6.7.1`;
    assert.deepEqual(split(runner, live), { desired: live, kustomizations: [] });
  });

  it("rewrites the outermost entries when the base kustomization has entries for the same image and name too", () => {
    const pinnedBase = {
      ...base,
      source: `${base.source}images:\n  - name: ${image}\n    newTag: 6.5.1\nreplicas:\n  - name: podinfo\n    count: 3\n`,
    };
    const live = liveDeployment((d) => {
      d.spec.replicas = 12;
      d.spec.template.spec.containers[0]!.image = `${image}:6.10.1`;
    });
    const result = split(deployment, live, [pinnedBase, production]);
    const expected = production.source.replace('"6.6.0"', '"6.10.1"').replace("count: 2", "count: 12");
    assert.deepEqual(result.kustomizations, [{ path: production.path, source: expected }]);
    assert.deepEqual(result.desired, deployment);
  });

  it("rewrites newName when the entry declares only newName and the live image differs only in name", () => {
    const mirrored = overlay(["images:", `  - name: ${image}`, "    newName: mirror.example.com/podinfo"]);
    const live = liveDeployment((d) => {
      d.spec.replicas = 1;
      d.spec.template.spec.containers[0]!.image = "proxy.example.com/podinfo:6.5.0";
    });
    const result = split(deployment, live, [base, mirrored]);
    assert.deepEqual(result.kustomizations, [
      { path: mirrored.path, source: mirrored.source.replace("mirror.example.com", "proxy.example.com") },
    ]);
    assert.deepEqual(result.desired, deployment);
  });

  it("quotes a new plain tag that YAML would read as another type or that would break a flow map, and keeps other quoting", () => {
    const plain = overlay(["images:", `  - {name: ${image}, newTag: v6.6}`]);
    const single = overlay(["images:", `  - name: ${image}`, "    newTag: 'v6.6'"]);
    const to = (tag: string) =>
      liveDeployment((d) => (d.spec.template.spec.containers[0]!.image = `${image}:${tag}`));
    const sourceOf = (link: ChainLink, tag: string) =>
      split(deployment, to(tag), [link]).kustomizations[0]?.source;
    assert.equal(sourceOf(plain, "1.27"), `images:\n  - {name: ${image}, newTag: "1.27"}\n`);
    assert.equal(sourceOf(plain, "1e3"), `images:\n  - {name: ${image}, newTag: "1e3"}\n`);
    assert.equal(sourceOf(plain, "yes"), `images:\n  - {name: ${image}, newTag: "yes"}\n`);
    assert.equal(sourceOf(plain, "v{BUILD}"), `images:\n  - {name: ${image}, newTag: "v{BUILD}"}\n`);
    assert.equal(sourceOf(plain, "v6.7"), `images:\n  - {name: ${image}, newTag: v6.7}\n`);
    assert.equal(sourceOf(single, "1.27"), `images:\n  - name: ${image}\n    newTag: '1.27'\n`);
  });

  it("containers of one image that changed to different tags fall back, as one entry cannot hold both", () => {
    const twoContainers = structuredClone(deployment);
    twoContainers.spec.template.spec.containers.push({ ...podinfoContainer, name: "sidecar" });
    const live = liveDeployment((d) => {
      d.spec.template.spec.containers.push({ ...d.spec.template.spec.containers[0]!, name: "sidecar" });
      d.spec.template.spec.containers[0]!.image = `${image}:6.7.1`;
      d.spec.template.spec.containers[1]!.image = `${image}:6.8.0`;
    });
    const result = split(twoContainers, live);
    assert.deepEqual(result.kustomizations, []);
    assert.deepEqual(
      [containerOf(result.desired, 0).image, containerOf(result.desired, 1).image],
      [`${image}:6.7.1`, `${image}:6.8.0`],
    );
  });

  it("an entry shared with a container whose image did not change is not rewritten for those that did", () => {
    const names = ["podinfo", "sidecar", "warmer"];
    const threeContainers = structuredClone(deployment);
    threeContainers.spec.template.spec.containers = names.map((name) => ({ ...podinfoContainer, name }));
    const live = liveDeployment((d) => {
      d.spec.template.spec.containers = names.map((name) => ({
        ...podinfoContainer,
        name,
        image: `${image}:6.7.1`,
      }));
      d.spec.template.spec.containers[0]!.image = `${image}:6.6.0`;
    });
    const result = split(threeContainers, live);
    assert.deepEqual(result.kustomizations, []);
    assert.deepEqual(
      [0, 1, 2].map((index) => containerOf(result.desired, index).image),
      [`${image}:6.5.0`, `${image}:6.7.1`, `${image}:6.7.1`],
    );
  });

  it("a field set to the empty string is unset, as in kustomize, so it is not one to rewrite", () => {
    const emptyTag = overlay([
      "images:",
      `  - name: ${image}`,
      "    newName: mirror.example.com/podinfo",
      '    newTag: ""',
    ]);
    const live = liveDeployment((d) => {
      d.spec.replicas = 1;
      d.spec.template.spec.containers[0]!.image = "mirror.example.com/podinfo:6.7.1";
    });
    assert.deepEqual(split(deployment, live, [emptyTag]), { desired: live, kustomizations: [] });
  });

  it("a block scalar renders like any other value but is not rewritten in place", () => {
    const block = overlay([
      "images:",
      `  - name: ${image}`,
      "    newTag: |-",
      "      6.6.0",
      "    newName: mirror.example.com/podinfo",
    ]);
    const rendered = liveDeployment((d) => {
      d.spec.replicas = 1;
      d.spec.template.spec.containers[0]!.image = "mirror.example.com/podinfo:6.6.0";
    });
    assert.deepEqual(split(deployment, rendered, [block]), { desired: deployment, kustomizations: [] });

    const bumped = structuredClone(rendered);
    bumped.spec.template.spec.containers[0]!.image = "mirror.example.com/podinfo:6.7.1";
    assert.deepEqual(split(deployment, bumped, [block]), { desired: bumped, kustomizations: [] });

    const renamed = structuredClone(rendered);
    renamed.spec.template.spec.containers[0]!.image = "proxy.example.com/podinfo:6.6.0";
    assert.deepEqual(split(deployment, renamed, [block]).kustomizations, [
      { path: block.path, source: block.source.replace("mirror.example.com", "proxy.example.com") },
    ]);
  });

  it("a live image that lacks a part the entry declares falls back", () => {
    const renamed = overlay([
      "images:",
      `  - name: ${image}`,
      "    newName: mirror.example.com/podinfo",
      "    newTag: 6.6.0",
    ]);
    const untagged = structuredClone(deployment);
    untagged.spec.template.spec.containers[0]!.image = image;
    const live = structuredClone(untagged);
    live.spec.template.spec.containers[0]!.image = "mirror.example.com/podinfo";
    assert.deepEqual(split(untagged, live, [base, renamed]), { desired: live, kustomizations: [] });
  });

  it("pairs containers by name, not position, and covers initContainers deep in a CronJob", () => {
    const cronJob = {
      apiVersion: "batch/v1",
      kind: "CronJob",
      metadata: { name: "report" },
      spec: {
        schedule: "0 * * * *",
        jobTemplate: {
          spec: {
            template: {
              spec: {
                initContainers: [{ name: "migrate", image: "migrate:1.0" }],
                containers: [
                  { name: "a", image: `${image}:6.5.0` },
                  { name: "b", image: "busybox:1.36" },
                ],
              },
            },
          },
        },
      },
    };
    const links = [
      overlay([
        "images:",
        "  - name: migrate",
        "    newTag: '1.1'",
        `  - name: ${image}`,
        "    newTag: 6.6.0",
      ]),
    ];
    const live = structuredClone(cronJob);
    const spec = live.spec.jobTemplate.spec.template.spec;
    spec.initContainers[0]!.image = "migrate:1.2";
    spec.containers = [
      { name: "b", image: "busybox:1.36" },
      { name: "a", image: `${image}:6.6.0` },
    ];
    const result = split(cronJob, live, links);
    assert.deepEqual(result.kustomizations, [
      { path: links[0]!.path, source: links[0]!.source.replace("'1.1'", "'1.2'") },
    ]);
    const expected = structuredClone(live);
    expected.spec.jobTemplate.spec.template.spec.initContainers[0]!.image = "migrate:1.0";
    expected.spec.jobTemplate.spec.template.spec.containers[1]!.image = `${image}:6.5.0`;
    assert.deepEqual(result.desired, expected);
  });

  it("ignores entries that are not well formed", () => {
    const malformed = overlay([
      "images:",
      `  - name: ${image}`,
      "    newTag: 6.6",
      "replicas:",
      "  - name: podinfo",
      "    count: -1",
    ]);
    const live = liveDeployment((d) => (d.spec.template.spec.containers[0]!.image = `${image}:6.6`));
    assert.deepEqual(split(deployment, live, [malformed]), { desired: live, kustomizations: [] });

    // One field that is not a string spoils the whole entry, not just that field.
    const mixed = overlay([
      "images:",
      `  - name: ${image}`,
      "    newName: mirror.example.com/podinfo",
      "    newTag: 6.6",
    ]);
    const mirrored = liveDeployment((d) => {
      d.spec.replicas = 1;
      d.spec.template.spec.containers[0]!.image = "mirror.example.com/podinfo:6.5.0";
    });
    assert.deepEqual(split(deployment, mirrored, [mixed]), { desired: mirrored, kustomizations: [] });

    // kustomize reads YAML 1.1, where a plain yes is a boolean, not a tag.
    const boolean = overlay(["images:", `  - name: ${image}`, "    newTag: yes"]);
    const yes = liveDeployment((d) => (d.spec.template.spec.containers[0]!.image = `${image}:yes`));
    assert.deepEqual(split(deployment, yes, [boolean]), { desired: yes, kustomizations: [] });
  });

  it("a document without replicas keeps none, and a live object without replicas falls back", () => {
    const { replicas: _replicas, ...unscaledSpec } = deployment.spec;
    const unscaled = { ...deployment, spec: unscaledSpec };
    const scaled = liveDeployment((d) => (d.spec.replicas = 5));
    assert.deepEqual(split(unscaled, scaled).desired, unscaled);

    const { replicas: _liveReplicas, ...liveSpec } = liveDeployment().spec;
    const live = { ...deployment, spec: liveSpec };
    const result = split(deployment, live);
    assert.deepEqual(result.kustomizations, []);
    assert.equal("replicas" in (result.desired as Deployment).spec, false);
  });

  it("applies replicas only to a Deployment, StatefulSet or ReplicaSet of the entry's name", () => {
    const daemonSet = { ...structuredClone(deployment), kind: "DaemonSet" };
    const other = structuredClone(deployment);
    other.metadata.name = "frontend";
    for (const object of [daemonSet, other]) {
      const live = structuredClone(object);
      live.spec.replicas = 3;
      assert.deepEqual(split(object, live, [overlay(["replicas:", "  - name: podinfo", "    count: 2"])]), {
        desired: live,
        kustomizations: [],
      });
    }
  });

  it("written tags render back to the live image and read as strings in YAML 1.1 and 1.2", () => {
    fc.assert(
      fc.property(tags, (tag) => {
        fc.pre(tag !== "6.6.0");
        const live = liveDeployment((d) => (d.spec.template.spec.containers[0]!.image = `${image}:${tag}`));
        const [edit] = split(deployment, live).kustomizations;
        for (const version of ["1.1", "1.2"] as const) {
          const parsed = parse(edit?.source ?? "", { version }) as {
            images: { name: string; newTag: unknown }[];
          };
          assert.deepEqual(
            parsed.images.map((entry) => typeof entry.newTag),
            ["string"],
          );
          const images = parsed.images as ImageEntry[];
          assert.equal(renderImage(`${image}:6.5.0`, [{ images }]), `${image}:${tag}`);
        }
      }),
    );
  });
});

describe("renderImage", () => {
  it("keeps a registry port in the name, replaces a tag and digest with a new tag, and leaves unmatched images as written", () => {
    const links = [{ images: [{ name: "registry:5000/team/app", newTag: "2.0" }] }];
    assert.equal(renderImage("registry:5000/team/app:1.0@sha256:abc", links), "registry:5000/team/app:2.0");
    assert.equal(renderImage("registry:5000/team/app", links), "registry:5000/team/app:2.0");
    assert.equal(renderImage("registry:5000/team/other:", links), "registry:5000/team/other:");
  });

  it("replaces the tag with a digest, and keeps both when an entry sets both", () => {
    assert.equal(
      renderImage("registry:5000/app:1.0", [
        { images: [{ name: "registry:5000/app", digest: "sha256:0123" }] },
      ]),
      "registry:5000/app@sha256:0123",
    );
    assert.equal(
      renderImage("app@sha256:0123", [
        { images: [{ name: "app", newName: "mirror/app", newTag: "1.1", digest: "sha256:4567" }] },
      ]),
      "mirror/app:1.1@sha256:4567",
    );
  });

  it("keeps the tag and digest when an entry sets only newName", () => {
    assert.equal(
      renderImage("app:1.0@sha256:0123", [{ images: [{ name: "app", newName: "registry:5000/app" }] }]),
      "registry:5000/app:1.0@sha256:0123",
    );
  });

  it("applies links in order, base link first, so an overlay matches the name the base produced", () => {
    const baseLink = { images: [{ name: "podinfo", newName: image }] };
    const overlayLink = { images: [{ name: image, newTag: "6.6.0" }] };
    assert.equal(renderImage("podinfo:6.5.0", [baseLink, overlayLink]), `${image}:6.6.0`);
    assert.equal(renderImage("podinfo:6.5.0", [overlayLink, baseLink]), `${image}:6.5.0`);
  });
});
