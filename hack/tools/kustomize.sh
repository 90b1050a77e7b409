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

export GOTOOLCHAIN=local
export GOFLAGS=-mod=mod
export CGO_ENABLED=0
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

# Two builds started at once take turns on one lock: the second waits, then finds the first
# one's binary and builds nothing.
mkdir -p "$cache_root"
exec {lock}>"$cache_root/.build.lock"
if ! flock -n "$lock"; then
  echo "kustomize: another build of kustomize is running; waiting for it"
  flock "$lock"
fi
if cached; then
  echo "kustomize: cached binary in $dest"
  exit 0
fi

# Some machines keep Go outside the default PATH.
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="$PATH:/usr/local/go/bin"
fi
command -v go >/dev/null || { echo "kustomize: Go 1.26 or newer is required to build kustomize" >&2; exit 1; }

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
