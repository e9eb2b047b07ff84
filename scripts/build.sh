#!/usr/bin/env bash
# Configures and builds yolotrain into ${BUILD_DIR:-build} (Release, Ninja, ccache when present).
# BUILD_TARGETS="a b" builds only those targets (and what they need); extra arguments go to the
# CMake configure step. Ninja prints each step ([12/80] ...), so a long build shows its progress.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
targets=()
for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j"$(nproc)" "${targets[@]}"
