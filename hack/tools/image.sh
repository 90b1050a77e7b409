#!/usr/bin/env bash
# The operator's image as a root filesystem (hack/image/rootfs.ts), as tools.sh names its steps.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec node --import "$here/../register.ts" "$here/../image/rootfs.ts" "$@"
