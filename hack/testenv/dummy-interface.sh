#!/usr/bin/env bash
# kube-apiserver must advertise a non-loopback address of the host. A sandbox with only
# loopback can get one from a dummy interface. Needs root and iproute2. The address is in
# TEST-NET-2 (RFC 5737), which no real network routes, and nothing ever connects to it.
set -euo pipefail
name=${1:-gr-testenv0}
address=${2:-198.51.100.10/32}
if ip link show "$name" >/dev/null 2>&1; then
  echo "dummy interface $name exists"
  exit 0
fi
ip link add "$name" type dummy
ip addr add "$address" dev "$name"
ip link set "$name" up
echo "dummy interface $name has $address"
