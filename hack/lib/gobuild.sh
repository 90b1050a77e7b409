# Sourced by the scripts that build a tool from Go modules into the cache outside the
# repository (hack/testenv/build.sh, hack/tools/gotool.sh, flux.sh, olmvalidate.sh): the Go build environment, one
# lock per tool so two builds of one tool started at once take turns, and Go found where some
# machines keep it outside the default PATH.

export GOTOOLCHAIN=local
# No DWARF from the compiler: every tool is linked with -s -w, which drops it anyway, and not
# writing it made an empty-cache build of sops 8-18 % faster (84.1 s and 94.6 s against 77.0 s
# and 77.5 s, alternating, 2 cores).
export GOFLAGS="-mod=mod -gcflags=all=-dwarf=false"
export CGO_ENABLED=0

# build_lock NAME CACHE_ROOT: waits for any other build of NAME into CACHE_ROOT to finish. The
# lock is held until the calling script exits; the caller checks its cache again afterwards,
# since the build it waited for may have made what it wanted. One lock a tool, not one a cache
# root: tools.sh builds one tool while another step fetches (Argo CD's CRDs), and that step must
# not hold the build up.
build_lock() {
  mkdir -p "$2"
  exec {build_lock_fd}>"$2/.build-${1// /-}.lock"
  if ! flock -n "$build_lock_fd"; then
    echo "$1: another build is running; waiting for it"
    flock "$build_lock_fd"
  fi
}

# reuse_or_lock NAME DEST CACHE_ROOT: exits the calling script when `cached` (the caller's
# function) says DEST already holds the build, before and after waiting for the lock; returns
# holding the lock, with Go on PATH, when the caller must build.
reuse_or_lock() {
  if cached; then
    echo "$1: cached binary in $2"
    exit 0
  fi
  build_lock "$1" "$3"
  if cached; then
    echo "$1: cached binary in $2"
    exit 0
  fi
  require_go "$1"
}

# download_only: true under GOTOOL_DOWNLOAD_ONLY=1, where a script fetches into the module
# cache every module its build needs and builds nothing, taking no lock (the module cache has
# its own). hack/tools/tools.sh runs every missing tool's download at once, then the builds one at
# a time: the downloads wait on the network, the builds on the two cores.
download_only() { [[ "${GOTOOL_DOWNLOAD_ONLY:-}" == 1 ]]; }

# fetched NAME SECONDS: what a download-only run prints as it ends.
fetched() { echo "$1: modules downloaded in $2s"; }

# require_go NAME: puts /usr/local/go/bin on PATH when go is not found, or fails with why.
require_go() {
  if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
    export PATH="$PATH:/usr/local/go/bin"
  fi
  command -v go >/dev/null || { echo "$1: Go 1.26 or newer is required to build it" >&2; exit 1; }
}
