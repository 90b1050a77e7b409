#!/usr/bin/env bash
# Fetches Argo CD's Application CRD, as Argo CD publishes it (manifests/crds of the
# github.com/argoproj/argo-cd/v3 module), at the versions in versions.env, and caches it outside
# the repository keyed by version, as flux.sh caches Flux's CRDs. The application-controller
# itself cannot be built here (its gitops-engine module passes neither go get nor go mod tidy on
# this machine's module proxy), so the tests play its documented part (test/support/argocd.ts).
#   argocd.sh                          fetch (or reuse) both CRDs
#   argocd.sh --print-path [current|old]   print the CRD file's path, fetch nothing
# "current" is ARGOCD_VERSION; "old" is ARGOCD_OLD_VERSION, the newest Argo CD without
# syncPolicy.automated.enabled, for the claim's ArgoCDVersionNotSupported.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
# shellcheck source=../lib/gobuild.sh
source "$here/../lib/gobuild.sh"

cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/gitops-reverser/tools
dest_of() { echo "$cache_root/argocd-crds-$1"; }

if [[ "${1:-}" == "--print-path" ]]; then
  case "${2:-current}" in
    current) echo "$(dest_of "$ARGOCD_VERSION")/application-crd.yaml" ;;
    old) echo "$(dest_of "$ARGOCD_OLD_VERSION")/application-crd.yaml" ;;
    *) echo "argocd.sh: --print-path takes current or old" >&2; exit 2 ;;
  esac
  exit 0
fi

cached() { [[ -f "$(dest_of "$ARGOCD_VERSION")/application-crd.yaml" && -f "$(dest_of "$ARGOCD_OLD_VERSION")/application-crd.yaml" ]]; }
# Its whole build is a download, so tools.sh's download pass does it; that pass says nothing of
# what is cached.
if cached && download_only; then exit 0; fi
reuse_or_lock "argocd CRDs" "$cache_root" "$cache_root"

fetch() {
  local version=$1 dest work module_dir
  dest=$(dest_of "$version")
  [[ -f "$dest/application-crd.yaml" ]] && return
  work=$(mktemp -d)
  module_dir=$(cd "$work" && go mod download -json "github.com/argoproj/argo-cd/v3@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  rm -rf "$work"
  [[ -d "$module_dir" ]] || { echo "argocd.sh: go mod download gave no directory for argo-cd $version" >&2; exit 1; }
  rm -rf "$dest.partial"
  mkdir -p "$dest.partial"
  cp "$module_dir/manifests/crds/application-crd.yaml" "$dest.partial/"
  chmod -R u+w "$dest.partial"
  rm -rf "$dest"
  mv "$dest.partial" "$dest"
  echo "argocd CRDs $version: fetched into $dest"
}

fetch "$ARGOCD_VERSION"
fetch "$ARGOCD_OLD_VERSION"
