#!/usr/bin/env bash
# Sets up a fresh machine for development and CI: the Debian packages the tests use (only
# those missing; needs root), the npm dependencies, and the test environment binaries.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

declare -A wanted=(
  [git]=git [openssl]=openssl [redis-server]=redis-server [setpriv]=util-linux
  [pgrep]=procps [ip]=iproute2 [make]=make
)
missing=()
for cmd in "${!wanted[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${wanted[$cmd]}")
done
[[ -x /usr/lib/git-core/git-http-backend ]] || missing+=(git)
if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}"
  sudo=()
  ((EUID == 0)) || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Go builds the test environment; some machines keep it outside the default PATH.
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null 2>&1 || { echo "setup: Go 1.26 or newer is needed to build the test environment" >&2; exit 1; }

# kube-apiserver advertises a non-loopback address; give a loopback-only sandbox one.
if ! ip -4 -o addr show scope global | grep -q inet; then
  bash hack/testenv/dummy-interface.sh
fi

npm ci --no-audit --no-fund
bash hack/testenv/build.sh
