#!/usr/bin/env bash
# Builds kustomize from Go modules at the version in versions.env and caches it outside the
# repository, keyed by version, the way hack/testenv/build.sh builds kube-apiserver.
# A second run with the same version builds nothing.
#   kustomize.sh               build (or reuse) the binary
#   kustomize.sh --print-path  print where the binary is (or will be), build nothing
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

# shellcheck source=../lib/gobuild.sh
source "$here/../lib/gobuild.sh"
jobs=${TESTENV_BUILD_JOBS:-2}

cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/gitops-reverser/tools
dest="$cache_root/kustomize-$KUSTOMIZE_VERSION"

if [[ "${1:-}" == "--print-path" ]]; then
  echo "$dest/kustomize"
  exit 0
fi

cached() { [[ -x "$dest/kustomize" ]]; }
if cached; then
  echo "kustomize: cached binary in $dest"
  exit 0
fi

build_lock kustomize "$cache_root"
if cached; then
  echo "kustomize: cached binary in $dest"
  exit 0
fi
require_go kustomize

echo "kustomize: building sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION (once per machine)"
partial="$dest.partial"
trap 'rm -rf "$partial"' EXIT
rm -rf "$partial"
mkdir -p "$partial"
start=$(date +%s)
# kustomize's go.mod has no replace directives, so `go install pkg@version` builds it with
# exactly the dependency versions its release pins, and stamps the version `kustomize version`
# prints.
GOBIN="$partial" go install -p "$jobs" -trimpath -ldflags "-s -w" \
  "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"

rm -rf "$dest"
mv "$partial" "$dest"
echo "kustomize: built into $dest in $(( $(date +%s) - start ))s"
