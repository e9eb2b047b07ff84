#!/usr/bin/env bash
# The whole test suite from a fresh machine: installs the dependencies, builds, runs every test.
# Quick variant without the SIGKILL chaos test: CTEST_ARGS="-LE chaos" scripts/test.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
t0=$SECONDS
bash "$root/scripts/install-deps.sh"
t1=$SECONDS
BUILD_DIR=$build bash "$root/scripts/build.sh"
t2=$SECONDS
cd "$build"
rc=0
# shellcheck disable=SC2086
ctest --output-on-failure -j"$(nproc)" --timeout 900 ${CTEST_ARGS:-} || rc=$?
echo "test.sh: dependencies $((t1 - t0)) s, build $((t2 - t1)) s, tests $((SECONDS - t2)) s"
exit "$rc"
