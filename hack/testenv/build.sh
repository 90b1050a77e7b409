#!/usr/bin/env bash
# Builds kube-apiserver, kubectl and etcd from Go modules at the versions in
# versions.env, and caches them outside the repository, keyed by version.
# A second run with the same versions builds nothing. See README.md beside this file.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

# shellcheck source=../lib/gobuild.sh
source "$here/../lib/gobuild.sh"
jobs=${TESTENV_BUILD_JOBS:-2}

cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/gitops-reverser/testenv
dest="$cache_root/kube-$KUBE_VERSION-etcd-$ETCD_VERSION"

if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$dest"
  exit 0
fi

cached() { [[ -x "$dest/kube-apiserver" && -x "$dest/kubectl" && -x "$dest/etcd" ]]; }
if download_only; then
  cached && exit 0
else
  if cached; then
    echo "testenv: cached binaries in $dest"
    exit 0
  fi
  # Two builds started at once (two terminals, two CI jobs) take turns: the second waits, then
  # finds the first one's binaries and builds nothing.
  build_lock testenv "$cache_root"
  if cached; then
    echo "testenv: cached binaries in $dest"
    exit 0
  fi
fi
require_go testenv

download_only || echo "testenv: building kube-apiserver, kubectl and etcd from Go modules (about 4 minutes on 2 cores, once per machine)"
work=$(mktemp -d)
partial="$dest.partial"
if download_only; then
  trap 'rm -rf "$work"' EXIT
else
  trap 'rm -rf "$work" "$partial"' EXIT
  rm -rf "$partial"
  mkdir -p "$partial"
fi
start=$(date +%s)

# The staging modules k8s.io/kubernetes replaces with ./staging/... paths, as
# they appear in its own go.mod; each becomes a replace to the published v0.x.
kube_minor_patch=${KUBE_VERSION#v1.}
kube_gomod=$(cd "$work" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
mapfile -t staging < <(awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "$kube_gomod")
(( ${#staging[@]} > 0 )) || { echo "testenv: found no staging modules in $kube_gomod" >&2; exit 1; }

ldflags_kube=(
  "-s" "-w"
  "-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION"
  "-X k8s.io/component-base/version.gitMajor=1"
  "-X k8s.io/component-base/version.gitMinor=${kube_minor_patch%%.*}"
  "-X k8s.io/component-base/version.gitTreeState=clean"
  "-X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"
)

build_kube() {
  local mod="$work/kube"
  mkdir -p "$mod"
  (
    cd "$mod"
    go mod init gitops-reverser.local/testenv/kube >/dev/null 2>&1
    for m in "${staging[@]}"; do
      go mod edit -replace "$m=$m@v0.$kube_minor_patch"
    done
    go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@$KUBE_VERSION" "k8s.io/kubernetes/cmd/kubectl@$KUBE_VERSION"
    download_only && exec go list -deps k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl >/dev/null
    for cmd in kube-apiserver kubectl; do
      echo "testenv: building $cmd $KUBE_VERSION"
      go build -p "$jobs" -trimpath -ldflags "${ldflags_kube[*]}" -o "$partial/$cmd" "k8s.io/kubernetes/cmd/$cmd"
    done
  )
}

build_etcd() {
  local mod="$work/etcd"
  mkdir -p "$mod"
  (
    cd "$mod"
    go mod init gitops-reverser.local/testenv/etcd >/dev/null 2>&1
    go get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    download_only && exec go list -deps go.etcd.io/etcd/server/v3 >/dev/null
    echo "testenv: building etcd $ETCD_VERSION"
    go build -p "$jobs" -trimpath -ldflags "-s -w" -o "$partial/etcd" go.etcd.io/etcd/server/v3
  )
}

if download_only; then
  build_etcd &
  build_kube
  wait $!
  fetched testenv $(( $(date +%s) - start ))
  exit 0
fi
build_etcd
build_kube

rm -rf "$dest"
mv "$partial" "$dest"
echo "testenv: built into $dest in $(( $(date +%s) - start ))s"
