#!/usr/bin/env bash
# What `make deploy` and `make undeploy` apply: a kustomization of config/ rendered by kubectl,
# with the operator's image replaced when IMG is given, without changing the repository (the
# image is set by a kustomization in a temporary folder that names the chosen one as its base).
#
#   render.sh OVERLAY [IMG]
# OVERLAY: default (config/default), a folder name under config/overlays, or a kustomization's
# path. IMG: registry/name, registry/name:tag or registry/name@sha256:<digest>.
# KUBECTL names the kubectl to run (default: kubectl). UNDEPLOY=1: the objects are only deleted,
# so the image may be the placeholder below.
set -euo pipefail

overlay=${1:?usage: render.sh OVERLAY [IMG]}
img=${2:-}
kubectl=${KUBECTL:-kubectl}
root=$(cd "$(dirname "$0")/../.." && pwd)

if [ "$overlay" = default ]; then
  dir=$root/config/default
elif [ -d "$root/config/overlays/$overlay" ]; then
  dir=$root/config/overlays/$overlay
elif [ -f "$overlay/kustomization.yaml" ]; then
  dir=$(cd "$overlay" && pwd)
else
  echo "OVERLAY=$overlay: not default, a folder of config/overlays ($(ls "$root/config/overlays" | tr '\n' ' ')), nor a kustomization's folder" >&2
  exit 2
fi

# config/overlays/production commits a digest that pulls nothing, to be replaced by the release's.
placeholder=sha256:0000000000000000000000000000000000000000000000000000000000000000
refuse_placeholder() {
  local rendered
  rendered=$(cat)
  if [ "${UNDEPLOY:-}" != 1 ] && grep -q "@$placeholder" <<<"$rendered"; then
    echo "OVERLAY=$overlay pins the image by a placeholder digest: give the release's, IMG=ghcr.io/configbutler/gitops-reverser-ts@sha256:<digest>" >&2
    exit 3
  fi
  printf '%s\n' "$rendered"
}

if [ -z "$img" ]; then
  $kubectl kustomize "$dir" | refuse_placeholder
  exit
fi

# kustomize's images: entry for IMG: a digest, or else a tag after the last path segment's colon
# (a registry's port is not a tag).
name=$img
pin=""
if [[ $img == *@* ]]; then
  name=${img%%@*}
  pin="    digest: ${img#*@}"
elif [[ ${img##*/} == *:* ]]; then
  name=${img%:*}
  pin="    newTag: ${img##*:}"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# kustomize takes a base's path only relative to the kustomization.
cat >"$tmp/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $(realpath --relative-to="$tmp" "$dir")
images:
  - name: ghcr.io/configbutler/gitops-reverser-ts
    newName: $name
$pin
YAML
$kubectl kustomize "$tmp" | refuse_placeholder
