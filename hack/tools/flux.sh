#!/usr/bin/env bash
# Builds one of the real Flux controllers the tests run out of cluster (source-controller,
# kustomize-controller, notification-controller) from Go modules, at the version in versions.env,
# and caches it outside the repository next to the CRDs of the same module, keyed by version, as
# gotool.sh does.
#   flux.sh <tool>               build (or reuse) the binary and its CRDs
#   flux.sh <tool> --print-path  print where the binary is (or will be), build nothing
# The CRDs land in crds/ beside the binary: the module's own config/crd/bases, so the tests
# install exactly the API the binary serves.
#
# Why not gotool.sh's `go install pkg@version`: each controller's go.mod replaces its api
# module with the local path ./api, and go install refuses a module with replace directives. So
# this builds inside a throwaway wrapper module instead: the controller's own go.mod (same
# requirements, hence the same build list as its release) renamed, requiring the controller
# itself, with the ./api replace turned into the published api module of the version the
# controller requires. Its other replaces are kept, since only the main module's count.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

# shellcheck source=../lib/gobuild.sh
source "$here/../lib/gobuild.sh"
jobs=${TESTENV_BUILD_JOBS:-2}

tool=${1:?usage: flux.sh <source-controller|kustomize-controller|notification-controller> [--print-path]}
case "$tool" in
  source-controller) version=$SOURCE_CONTROLLER_VERSION ;;
  kustomize-controller) version=$KUSTOMIZE_CONTROLLER_VERSION ;;
  notification-controller) version=$NOTIFICATION_CONTROLLER_VERSION ;;
  *) echo "flux.sh: unknown tool \"$tool\" (source-controller, kustomize-controller or notification-controller)" >&2; exit 2 ;;
esac
module=github.com/fluxcd/$tool

cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/gitops-reverser/tools
dest="$cache_root/$tool-$version"

if [[ "${2:-}" == "--print-path" ]]; then
  echo "$dest/$tool"
  exit 0
fi

cached() { [[ -x "$dest/$tool" && -d "$dest/crds" ]]; }
if download_only; then
  cached && exit 0
  require_go "$tool"
else
  reuse_or_lock "$tool" "$dest" "$cache_root"
fi

download_only || echo "$tool: building $module@$version (once per machine)"
partial="$dest.partial"
work=$(mktemp -d)
if download_only; then
  trap 'rm -rf "$work"' EXIT
else
  trap 'rm -rf "$partial" "$work"' EXIT
  rm -rf "$partial"
  mkdir -p "$partial/crds"
fi
start=$(date +%s)

# The module's source, for its go.mod, go.sum and CRDs. `go mod download -json` prints where
# the module cache keeps it.
module_dir=$(cd "$work" && go mod download -json "$module@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[[ -d "$module_dir" ]] || { echo "$tool: go mod download gave no directory for $module@$version" >&2; exit 1; }

cp "$module_dir/go.mod" "$module_dir/go.sum" "$work/"
chmod u+w "$work/go.mod" "$work/go.sum"
edits=(-module=gitops-reverser.local/build/"$tool" -require="$module@$version")
# Each replace with a local path (`=> ./api`) becomes the published module at the version the
# controller's go.mod requires of it: Flux tags api/vX with each controller release.
while read -r path; do
  required=$(awk -v p="$path" '($1 == p && $2 != "=>") { print $2 } ($1 == "require" && $2 == p) { print $3 }' "$work/go.mod")
  [[ -n "$required" ]] || { echo "$tool: $path is replaced locally but not required" >&2; exit 1; }
  edits+=(-dropreplace="$path" -replace="$path=$path@$required")
done < <(awk '$0 ~ /=> *\.\.?\// { sub(/^replace[ \t]+/, ""); print $1 }' "$work/go.mod")
(cd "$work" && go mod edit "${edits[@]}")
if download_only; then
  (cd "$work" && go list -deps "$module" >/dev/null)
  fetched "$tool" $(( $(date +%s) - start ))
  exit 0
fi
# The wrapper has no package of its own; this builds the controller's main package from the
# module cache with the wrapper's build list. -mod=mod (gobuild.sh) records the checksums the
# controller's go.sum lacks (its own and its api module's).
(cd "$work" && go build -p "$jobs" -trimpath -ldflags "-s -w" -o "$partial/$tool" "$module")

cp "$module_dir"/config/crd/bases/*.yaml "$partial/crds/"
chmod -R u+w "$partial/crds"

rm -rf "$dest"
mv "$partial" "$dest"
echo "$tool: built into $dest in $(( $(date +%s) - start ))s"
