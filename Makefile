# Every target runs Node 24 from node_modules (the `node` devDependency), whatever node the
# machine has on its PATH.
SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)

# Test files run side by side, each in its own process with its own control plane, Git server,
# ports and folders: most of an end-to-end file's time is a wait on a control plane, so waits
# overlap. TEST_CONCURRENCY files at once: chosen by measurement on 2 cores (README). test/run.ts
# starts the longest files first (the times this machine measured last, else
# test/durations.json), prints the spec reporter's output, then each file's time and every test
# past a quarter of its timeout.
TEST_CONCURRENCY ?= 5
NODE_TEST := TEST_CONCURRENCY=$(TEST_CONCURRENCY) node --import ./hack/register.ts test/run.ts
UNIT_TESTS := 'test/unit/**/*.test.ts'
E2E_TESTS := 'test/e2e/**/*.test.ts'
# make test FILES='test/e2e/flux/*.test.ts' runs only those files (a glob, quoted, or paths).
FILES ?=

.PHONY: help
help: ## List the targets.
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: setup
setup: ## Optional: everything below in one go (missing Debian packages, npm ci, the test environment).
	bash hack/setup.sh

.PHONY: prerequisites
prerequisites: ## Install the Debian packages the tests need (as root; otherwise print the apt-get line).
	@bash hack/prerequisites.sh

node_modules: package.json package-lock.json | prerequisites
	npm ci
	@touch node_modules

.PHONY: build
build: node_modules ## Type-check and compile everything into dist/, and bundle the operator the image runs (dist/operator.mjs).
	tsc -p tsconfig.json
	node hack/bundle.ts

.PHONY: lint
lint: node_modules ## Type-check, run eslint, check formatting with prettier, and check the imports against the rooms of hack/layers.ts.
	tsc -p tsconfig.json --noEmit
	eslint .
	prettier --check .
	node --import ./hack/register.ts hack/imports.ts

.PHONY: format
format: node_modules ## Rewrite files in prettier's format.
	prettier --write .

.PHONY: generate
generate: node_modules ## Write the CRD manifests and the TypeScript API from the OpenAPI sources in api/v1alpha3.
	node --import ./hack/register.ts hack/generate/main.ts

.PHONY: manifests
manifests: generate ## An alias of generate.

GENERATED_PATHS := generated config/crd charts/gitops-reverser/files/crds bundle bundle.Dockerfile
.PHONY: verify-generated
verify-generated: generate bundle ## Fail if the committed generated files differ from what make generate and make bundle write.
	@stale=$$(git diff --name-only -- $(GENERATED_PATHS); git ls-files --others --exclude-standard -- $(GENERATED_PATHS)); \
	if [ -n "$$stale" ]; then \
	  echo "$$stale"; echo "generated files are stale: run make generate and make bundle, and commit the result" >&2; exit 1; \
	fi

# The operator's image: the Helm chart's (image.repository at its tag or the chart's appVersion)
# unless IMG names another; make bundle writes it into the CSV. The bundle's image is named after it.
IMG ?= $(shell node --import ./hack/register.ts hack/olm/main.ts --print-image)
BUNDLE_VERSION ?= $(shell node --import ./hack/register.ts hack/olm/main.ts --print-version)
BUNDLE_IMG ?= $(shell echo '$(IMG)' | sed 's/:[^:/]*$$//')-bundle:v$(BUNDLE_VERSION)
CONTAINER_TOOL ?= docker
OLM_VALIDATE = $$(bash hack/tools/olmvalidate.sh --print-path)

.PHONY: bundle
bundle: node_modules olm-validate ## Write the OLM bundle (bundle/, bundle.Dockerfile) from config/ and the chart, then validate it with the operator-framework's library (docs/install.md).
	node --import ./hack/register.ts hack/olm/main.ts --image=$(IMG)
	$(OLM_VALIDATE) bundle >/dev/null || { $(OLM_VALIDATE) bundle; exit 1; }

.PHONY: bundle-validate
bundle-validate: olm-validate ## Validate bundle/ as it is, printing every validator's findings as JSON.
	$(OLM_VALIDATE) bundle

.PHONY: bundle-build
bundle-build: node_modules ## Build the bundle image BUNDLE_IMG from bundle.Dockerfile (needs a container engine: CONTAINER_TOOL).
	$(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: bundle-push
bundle-push: node_modules ## Push the bundle image BUNDLE_IMG.
	$(CONTAINER_TOOL) push $(BUNDLE_IMG)

.PHONY: docker-build
docker-build: node_modules ## Build the operator's image IMG from the Dockerfile (needs a container engine: CONTAINER_TOOL; without one, make image).
	@command -v $(CONTAINER_TOOL) >/dev/null || { echo "docker-build: no $(CONTAINER_TOOL) here; make image builds the same final stage as a root filesystem (hack/image)" >&2; exit 1; }
	$(CONTAINER_TOOL) build -t $(IMG) .

.PHONY: image
image: node_modules prerequisites ## Build the Dockerfile's final stage as a root filesystem, without a container engine or a registry (hack/image; as root): what the image test runs.
	node --import ./hack/register.ts hack/image/rootfs.ts

.PHONY: docker-push
docker-push: node_modules ## Push the operator's image IMG.
	$(CONTAINER_TOOL) push $(IMG)

KUBECTL ?= kubectl
RUN_ARGS ?= --log-format=text

.PHONY: run
run: node_modules kustomize ## Run the operator against the current kubeconfig with the pinned kustomize (RUN_ARGS adds flags; see --help).
	node --import ./hack/register.ts cmd/operator.ts --kustomize-path=$$(bash hack/tools/gotool.sh kustomize --print-path) --author-attribution=false $(RUN_ARGS)


.PHONY: install
install: ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUBECTL) apply --server-side -k config/crd

.PHONY: uninstall
uninstall: ## Remove the CRDs, and with them every object of their kinds, from the current kubeconfig's cluster.
	$(KUBECTL) delete --ignore-not-found -k config/crd

# make deploy OVERLAY=production IMG=registry/name@sha256:… : which kustomization (default,
# a folder of config/overlays, or a path), and the operator's image (a tag or a digest).
OVERLAY ?= default
IMG ?=
DEPLOY_RENDER = KUBECTL="$(KUBECTL)" bash hack/deploy/render.sh $(OVERLAY) $(IMG)

.PHONY: deploy
deploy: ## Install the CRDs, RBAC and the operator (config/default; OVERLAY=production etc., IMG=… sets the image) into the current kubeconfig's cluster.
	set -o pipefail; $(DEPLOY_RENDER) | $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: ## Remove what deploy installed (the same OVERLAY), the CRDs (and every object of their kinds) included.
	set -o pipefail; UNDEPLOY=1 $(DEPLOY_RENDER) | $(KUBECTL) delete --ignore-not-found -f -

HELM = $$(bash hack/tools/gotool.sh helm --print-path)
.PHONY: helm-install
helm-install: helm ## Install (or upgrade) the Helm chart into the current kubeconfig's cluster (make testenv-up's after `source .testenv/env`); HELM_ARGS adds flags such as --set image.tag=….
	$(HELM) upgrade --install gitops-reverser charts/gitops-reverser --namespace gitops-reverser-system --create-namespace $(HELM_ARGS)

.PHONY: helm-uninstall
helm-uninstall: ## Remove the Helm release (its CRDs stay, as Helm leaves crds/ in place).
	$(HELM) uninstall gitops-reverser --namespace gitops-reverser-system

.PHONY: testenv
testenv: prerequisites ## Build kube-apiserver, kubectl and etcd from Go modules, or reuse the cached build.
	bash hack/testenv/build.sh

.PHONY: kustomize
kustomize: prerequisites ## Build the pinned kustomize (hack/tools/versions.env) from Go modules, or reuse the cached build.
	bash hack/tools/gotool.sh kustomize

.PHONY: flux
flux: prerequisites ## Build the pinned Flux source-controller and kustomize-controller the tests run, with their CRDs, or reuse the cached build.
	bash hack/tools/flux.sh source-controller
	bash hack/tools/flux.sh kustomize-controller

.PHONY: flux-notification
flux-notification: prerequisites ## Build the pinned Flux notification-controller (its Receiver takes the webhook applier's signed requests in the tests), with its CRDs, or reuse the cached build.
	bash hack/tools/flux.sh notification-controller

.PHONY: helm
helm: prerequisites ## Build the pinned helm the tests lint, render and install the chart with, or reuse the cached build.
	bash hack/tools/gotool.sh helm

.PHONY: argocd
argocd: prerequisites ## Fetch Argo CD's Application CRD at the pinned versions (the tests play the application-controller's part), or reuse the cached copy.
	bash hack/tools/argocd.sh

.PHONY: sops
sops: prerequisites ## Build the pinned sops the tests read encrypted Secrets back with, or reuse the cached build.
	bash hack/tools/gotool.sh sops

.PHONY: olm-validate
olm-validate: prerequisites ## Build the bundle validator (hack/olm/validate: the operator-framework's validation library at the pinned version), or reuse the cached build.
	bash hack/tools/olmvalidate.sh

# The tools the files to run need (hack/tools/needs.ts), built first: every missing tool's
# modules downloaded at once, then each built in turn (hack/tools/tools.sh).
TEST_FILES = $(if $(FILES),$(FILES),$(UNIT_TESTS) $(E2E_TESTS))
TOOLS_FOR = bash hack/tools/tools.sh $$(node --import ./hack/register.ts hack/tools/needs.ts $(1))

.PHONY: test
test: node_modules prerequisites ## Run every test CI runs, unit and end-to-end, in one runner; FILES='glob' runs only those files (and builds only the tools they need).
	$(call TOOLS_FOR,$(TEST_FILES))
	$(NODE_TEST) $(TEST_FILES)

.PHONY: soak
soak: node_modules testenv flux ## Run the scale scenarios at full size, not the few make test runs: the apply-echo scenario for fifty rounds (SOAK_ROUNDS), thirty-one branches shared by three replicas with the SIGKILL of one among 1,020 edits, 1,000 edits around the durable queue's SIGKILL, 500 during a Git outage, and ten same-second ties of a live edit with an apply.
	SOAK=1 SOAK_ROUNDS=$${SOAK_ROUNDS:-50} $(NODE_TEST) test/e2e/flux/echoes.test.ts test/e2e/operator/shards.test.ts test/e2e/flux/nothinglost.test.ts test/e2e/operator/durablequeue.test.ts test/e2e/git/robustness.test.ts

.PHONY: test-unit
test-unit: node_modules ## Run the unit tests.
	$(NODE_TEST) $(UNIT_TESTS)

.PHONY: test-e2e
test-e2e: node_modules prerequisites ## Run the end-to-end tests against a real control plane, Git server and Redis.
	$(call TOOLS_FOR,$(E2E_TESTS))
	$(NODE_TEST) $(E2E_TESTS)

.PHONY: demo
demo: node_modules testenv kustomize sops ## Run the operator against a local apiserver and Git server, make some changes, and show the commits.
	node --import ./hack/register.ts hack/demo/demo.ts

.PHONY: bench
bench: node_modules testenv build ## Measure snapshot, edit throughput, latency and RSS against native git (BENCH_SIZES=1000,10000; see bench/README.md).
	node --expose-gc --import ./hack/register.ts bench/run.ts

.PHONY: testenv-up
testenv-up: node_modules testenv ## Start a control plane, a Git server and Redis in the background; writes .testenv/env.
	node --import ./hack/register.ts hack/testenv/cli.ts up

.PHONY: testenv-down
testenv-down: node_modules ## Stop what testenv-up started.
	node --import ./hack/register.ts hack/testenv/cli.ts down

.PHONY: clean
clean: ## Remove build output (the cached testenv binaries stay).
	rm -rf dist
