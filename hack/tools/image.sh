#!/usr/bin/env bash
# The operator's image as a root filesystem (hack/image/rootfs.ts), as tools.sh names its steps.
# It runs the pinned Node 24 from node_modules, as the Makefile does: hack/setup.sh calls tools.sh
# outside make, where the machine's own node (often older) comes first on the PATH.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH="$here/../../node_modules/.bin:$PATH"
exec node --import "$here/../register.ts" "$here/../image/rootfs.ts" "$@"
