#!/usr/bin/env bash
# Builds one of the tools we run rather than rewrite from Go modules, at the version in
# versions.env, and caches it outside the repository, keyed by version, the way
# hack/testenv/build.sh builds kube-apiserver. A second run with the same version builds nothing.
#   gotool.sh <tool>               build (or reuse) the binary
#   gotool.sh <tool> --print-path  print where the binary is (or will be), build nothing
# Tools: kustomize (the operator renders folders with it), sops (the tests read back what the
# operator encrypts), helm (the tests lint, render and install the chart with it). The Flux controllers need a wrapper module instead: see flux.sh.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

# shellcheck source=../lib/gobuild.sh
source "$here/../lib/gobuild.sh"
jobs=${TESTENV_BUILD_JOBS:-2}

tool=${1:?usage: gotool.sh <kustomize|sops|helm> [--print-path]}
case "$tool" in
  kustomize) package=sigs.k8s.io/kustomize/kustomize/v5 version=$KUSTOMIZE_VERSION ;;
  sops) package=github.com/getsops/sops/v3/cmd/sops version=$SOPS_VERSION ;;
  helm) package=helm.sh/helm/v4/cmd/helm version=$HELM_VERSION ;;
  *) echo "gotool.sh: unknown tool \"$tool\" (kustomize, sops or helm)" >&2; exit 2 ;;
esac

cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/gitops-reverser/tools
dest="$cache_root/$tool-$version"

if [[ "${2:-}" == "--print-path" ]]; then
  echo "$dest/$tool"
  exit 0
fi

cached() { [[ -x "$dest/$tool" ]]; }
if download_only; then
  cached && exit 0
  require_go "$tool"
  start=$(date +%s)
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # A throwaway module requiring the tool: with no replace directives in the tool's go.mod, its
  # build list is the release's own, so this fetches what `go install pkg@version` will build.
  (cd "$work" && go mod init gitops-reverser.local/download/"$tool" >/dev/null 2>&1 && go get "$package@$version" >/dev/null && go list -deps "$package" >/dev/null)
  fetched "$tool" $(( $(date +%s) - start ))
  exit 0
fi
reuse_or_lock "$tool" "$dest" "$cache_root"

echo "$tool: building $package@$version (once per machine)"
partial="$dest.partial"
trap 'rm -rf "$partial"' EXIT
rm -rf "$partial"
mkdir -p "$partial"
start=$(date +%s)
# Neither go.mod has replace directives, so `go install pkg@version` builds each with exactly
# the dependency versions its release pins, and stamps the version the binary prints.
GOBIN="$partial" go install -p "$jobs" -trimpath -ldflags "-s -w" "$package@$version"

rm -rf "$dest"
mv "$partial" "$dest"
echo "$tool: built into $dest in $(( $(date +%s) - start ))s"
