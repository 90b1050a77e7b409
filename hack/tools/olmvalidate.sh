#!/usr/bin/env bash
# Builds hack/olm/validate, the bundle validator (the operator-framework's validation library,
# at OPERATOR_FRAMEWORK_API_VERSION in versions.env, in a small program of ours), and caches it
# outside the repository the way gotool.sh caches its tools: keyed by the library's version and
# a hash of the program's source, so an edit to it builds again and nothing else does.
#   olmvalidate.sh               build (or reuse) the binary
#   olmvalidate.sh --print-path  print where the binary is (or will be), build nothing
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
# shellcheck source=../lib/gobuild.sh
source "$here/../lib/gobuild.sh"
jobs=${TESTENV_BUILD_JOBS:-2}

src=$(cd "$here/../olm/validate" && pwd)
version=$OPERATOR_FRAMEWORK_API_VERSION
source_hash=$(cat "$src/go.mod" "$src/go.sum" "$src"/*.go | sha256sum | cut -c1-12)
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/gitops-reverser/tools
dest="$cache_root/olm-validate-$version-$source_hash"

if [[ "${1:-}" == "--print-path" ]]; then
  echo "$dest/olm-validate"
  exit 0
fi

if ! grep -qE "^require github.com/operator-framework/api $version\$" "$src/go.mod"; then
  echo "olm-validate: hack/olm/validate/go.mod does not require github.com/operator-framework/api $version (versions.env)" >&2
  exit 1
fi

cached() { [[ -x "$dest/olm-validate" ]]; }
if download_only; then
  cached && exit 0
  require_go olm-validate
  start=$(date +%s)
  (cd "$src" && go list -mod=readonly -deps . >/dev/null)
  fetched olm-validate $(( $(date +%s) - start ))
  exit 0
fi
reuse_or_lock olm-validate "$dest" "$cache_root"

echo "olm-validate: building with github.com/operator-framework/api@$version (once per machine and source)"
partial="$dest.partial"
trap 'rm -rf "$partial"' EXIT
rm -rf "$partial"
mkdir -p "$partial"
start=$(date +%s)
# -mod=readonly: go.mod and go.sum are committed whole, so the build never rewrites them.
(cd "$src" && go build -mod=readonly -p "$jobs" -trimpath -ldflags "-s -w" -o "$partial/olm-validate" .)

rm -rf "$dest"
mv "$partial" "$dest"
echo "olm-validate: built into $dest in $(( $(date +%s) - start ))s"
