#!/usr/bin/env bash
# Everything a fresh machine needs, in one go: Debian's packages, the npm dependencies, the
# tools built from Go modules (the test environment, kustomize, sops, helm, the three Flux
# controllers, source-, kustomize- and notification-controller, Argo CD's CRDs and the bundle
# validator: every tool's modules downloaded at once, each tool built, one at a time, as soon as
# its own are in) and the operator's
# image as a root filesystem from Debian's packages (hack/image, built beside the downloads). make
# test does each of these steps itself when it is missing (only the tools its files need), so this
# is optional; .ci/run calls it to set up in one step.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash hack/prerequisites.sh
npm ci --no-audit --no-fund
bash hack/tools/tools.sh testenv kustomize sops helm flux flux-notification argocd olm-validate image
