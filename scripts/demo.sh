#!/usr/bin/env bash
# The main job, from a fresh machine: installs the dependencies, builds, and trains
# examples/custom_loop on its built-in synthetic data with the lifecycle core. Press Ctrl+C to
# stop gracefully (a checkpoint is written), run the same command again to resume, Ctrl+Z to
# pause and suspend, `fg` to continue. Arguments are passed to custom_loop (defaults below).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
bash "$root/scripts/install-deps.sh"
BUILD_DIR=$build bash "$root/scripts/build.sh" >/dev/null
if [ $# -eq 0 ]; then
  set -- --dir "$root/runs/custom_loop" --steps 3000 --save-every-steps 500 --save-interval-s 60
fi
echo "custom_loop $*"
exec "$build/examples/custom_loop" "$@"
