#!/usr/bin/env bash
# Builds the tools named, each at most once per machine (make test names those its files need:
# hack/tools/needs.ts; hack/setup.sh names them all).
# On a fresh machine most of the first build is module downloads, and one tool after another
# left the network idle while a build ran and the cores idle while a download ran. So every
# missing tool's modules are downloaded at once first (GOTOOL_DOWNLOAD_ONLY, hack/lib/gobuild.sh),
# then the tools are built one at a time, each with both cores, each as soon as its own downloads
# are in, and each step says how far it is.
# The operator's image (hack/image/rootfs.ts, Debian's packages and no Go) is built in the first
# phase, beside the downloads: it is mostly downloads itself.
#   tools.sh [testenv|kustomize|sops|helm|flux|flux-notification|argocd|olm-validate|image ...]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

every=(testenv kustomize sops helm flux flux-notification argocd olm-validate image)
tools=("$@")
((${#tools[@]} > 0)) || exit 0

# The commands that build one tool (a tool may take two, as Flux's two controllers do).
# notification-controller is a tool of its own, flux-notification: only the tests that run it
# (test/support/fluxnotification.ts) should wait for its build, minutes long on a cold machine.
commands() {
  case "$1" in
    testenv) echo "bash $here/../testenv/build.sh" ;;
    kustomize | sops | helm) echo "bash $here/gotool.sh $1" ;;
    flux) echo "bash $here/flux.sh source-controller"; echo "bash $here/flux.sh kustomize-controller" ;;
    flux-notification) echo "bash $here/flux.sh notification-controller" ;;
    argocd) echo "bash $here/argocd.sh" ;;
    olm-validate) echo "bash $here/olmvalidate.sh" ;;
    image) echo "bash $here/image.sh" ;;
    *) echo "tools.sh: unknown tool \"$1\" (${every[*]})" >&2; return 2 ;;
  esac
}

steps=()
for tool in "${tools[@]}"; do
  mapfile -t -O "${#steps[@]}" steps < <(commands "$tool")
  commands "$tool" >/dev/null
done

# 1. Every step's downloads at once; a step whose tool is cached ends at once and says nothing.
# Each writes its exit status beside its log when it ends.
logs=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$logs"' EXIT
for i in "${!steps[@]}"; do
  (
    status=0
    GOTOOL_DOWNLOAD_ONLY=1 ${steps[$i]} >"$logs/$i" 2>&1 || status=$?
    echo "$status" >"$logs/$i.status"
  ) &
done
started=$(date +%s)

# 2. The builds, one at a time (each takes both cores: two at once took as long, measured), each
# started as soon as its own downloads are in, while the other downloads go on: the first
# build no longer waits for the slowest download. Of the steps whose downloads ended, the first
# named goes first.
declare -A built=()
downloaded() {
  local i
  for i in "${!steps[@]}"; do
    [[ -z "${built[$i]:-}" && -f "$logs/$i.status" ]] && { echo "$i"; return 0; }
  done
  return 1
}
count=0
while ((count < ${#steps[@]})); do
  if ! i=$(downloaded); then
    wait -n || true
    continue
  fi
  built[$i]=1
  count=$((count + 1))
  if [[ "$(<"$logs/$i.status")" != 0 ]]; then
    echo "tools: downloading for \`${steps[$i]}\` failed:" >&2
    cat "$logs/$i" >&2
    exit 1
  fi
  [[ -s "$logs/$i" ]] && echo "tools: [downloads of ${steps[$i]##*/} in, $(($(date +%s) - started))s] $(tail -n 1 "$logs/$i")"
  echo "tools: [build $count/${#steps[@]}] ${steps[$i]##*/}"
  ${steps[$i]}
done
