#!/usr/bin/env bash
# Everything a fresh machine needs, in one go: Debian's packages, the npm dependencies, and the
# test environment, kustomize, sops, the bundle validator and the Flux controllers built from Go
# modules. make test does each of these steps itself when it is missing (make demo all but Flux),
# so this is optional; .ci/run calls it to set up in one step.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash hack/prerequisites.sh
npm ci --no-audit --no-fund
bash hack/testenv/build.sh
bash hack/tools/gotool.sh kustomize
bash hack/tools/gotool.sh sops
bash hack/tools/olmvalidate.sh
bash hack/tools/flux.sh source-controller
bash hack/tools/flux.sh kustomize-controller
