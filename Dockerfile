# The operator's image: the TypeScript bundled by esbuild into one ES module (hack/bundle.ts, what
# `make build` runs after tsc's type check), on Node 24. The bundle holds every dependency it
# uses, tree-shaken, so the image carries no node_modules: loaded whole, the generated
# Kubernetes client alone held about 20 MiB of the process's heap (docs/architecture.md).
#
#   docker build -t ghcr.io/configbutler/gitops-reverser-ts:dev .
#
# No dependency needs an install script (esbuild runs from its platform package, and the `node`
# devDependency is not used here), so the install skips them: the build stage does not download
# a second Node.js.

FROM node:24-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY generated generated
COPY internal internal
COPY cmd cmd
COPY controllers controllers
COPY hack/bundle.ts hack/bundle.ts
# The image's node runs tsc and esbuild directly: node_modules/.bin/node is the `node`
# devDependency's shim, which --ignore-scripts leaves without its binary.
RUN node node_modules/typescript/bin/tsc -p tsconfig.json --noEmit && node hack/bundle.ts

# kustomize judges a folder as it renders (never writes it): built from Go modules at the version
# hack/tools/versions.env pins, as hack/tools/gotool.sh builds it for the tests.
FROM golang:1.26 AS kustomize
COPY hack/tools/versions.env /versions.env
RUN . /versions.env \
  && CGO_ENABLED=0 GOBIN=/out go install -trimpath -ldflags "-s -w" \
    "sigs.k8s.io/kustomize/kustomize/v5@${KUSTOMIZE_VERSION}"

FROM node:24-slim
# The Git engine is the git CLI (internal/git/gitexec.ts); ssh is its SSH transport.
RUN apt-get update \
  && apt-get install -y --no-install-recommends git openssh-client ca-certificates \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
# V8's young generation sized for an operator, not a web server: semi-spaces of 4 MiB keep the
# peak RSS at 146 MiB for 1,000 objects and 180 MiB for 10,000, against 180 and 273 MiB at
# Node's default for this machine size (make bench, phase (p), measured on tsc's output before
# the bundle; docs/architecture.md).
ENV NODE_OPTIONS=--max-semi-space-size=4
# On PATH, where --kustomize-path's default finds it.
COPY --from=kustomize /out/kustomize /usr/local/bin/kustomize
COPY --from=build /src/dist/operator.mjs dist/operator.mjs
# The Kargo observer, its own process (config/kargo-observer runs it with node dist/kargo-observer.mjs).
COPY --from=build /src/dist/kargo-observer.mjs dist/kargo-observer.mjs
# OpenSSH refuses to run for a uid with no passwd entry ("No user exists for uid 65532"), so the
# uid the chart, config/manager and the OLM bundle run as gets one, with a HOME for git and ssh.
RUN groupadd --gid 65532 nonroot \
  && useradd --uid 65532 --gid 65532 --home-dir /home/nonroot --create-home --shell /usr/sbin/nologin nonroot
ENV HOME=/home/nonroot
# Numeric, so the kubelet can check runAsNonRoot; config/manager runs it as 65532 too.
USER 65532:65532
ENTRYPOINT ["node", "dist/operator.mjs"]
