#!/usr/bin/env bash
# What the tests and the demo need from the machine itself: Debian's packages (git with its
# http-backend, openssl, redis-server, util-linux, procps, iproute2, make, npm, OpenSSH's
# client and server for the SSH transport, age, whose identities read back what the
# operator encrypts, and mmdebstrap, which builds the operator's image without a container
# engine) and an address
# kube-apiserver can advertise. As root it installs what is missing; otherwise it stops and
# prints the one command to run. Every make target that starts a test environment runs it
# first, so a fresh machine needs nothing typed beforehand.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

declare -A wanted=(
  [git]=git [openssl]=openssl [redis-server]=redis-server [setpriv]=util-linux [flock]=util-linux
  [pgrep]=procps [ip]=iproute2 [make]=make [npm]=npm [ssh]=openssh-client [ssh-keygen]=openssh-client
  [age]=age [age-keygen]=age [mmdebstrap]=mmdebstrap [unshare]=util-linux [chroot]=coreutils
)
missing=()
for cmd in "${!wanted[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${wanted[$cmd]}")
done
[[ -x /usr/lib/git-core/git-http-backend ]] || missing+=(git)
# The SSH transport's tests run a real sshd on loopback (test/support/sshserver.ts).
[[ -x /usr/sbin/sshd ]] || missing+=(openssh-server)
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u | sed '/^$/d')

if ((${#missing[@]} > 0)); then
  if ((EUID != 0)); then
    echo "prerequisites: these Debian packages are missing; install them, then run make again:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  echo "prerequisites: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# kube-apiserver advertises a non-loopback address; give a loopback-only sandbox one.
if ! ip -4 -o addr show scope global | grep -q inet; then
  if ((EUID != 0)); then
    echo "prerequisites: this machine has no non-loopback IPv4 address for kube-apiserver to advertise; run:" >&2
    echo "  sudo bash hack/testenv/dummy-interface.sh" >&2
    exit 1
  fi
  bash hack/testenv/dummy-interface.sh
fi
