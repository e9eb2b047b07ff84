#!/usr/bin/env bash
# The whole test suite from a fresh machine: installs the dependencies, builds, runs every test.
# Quick variant without the SIGKILL chaos test: CTEST_ARGS="-LE chaos" scripts/test.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
bash "$root/scripts/install-deps.sh"
BUILD_DIR=$build bash "$root/scripts/build.sh"
cd "$build"
# shellcheck disable=SC2086
ctest --output-on-failure -j"$(nproc)" --timeout 900 ${CTEST_ARGS:-}
