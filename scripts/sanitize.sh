#!/usr/bin/env bash
# The test suite under sanitizers, for developers before a change that touches threads or memory
# (CI runs the plain suite). Two builds beside the normal one:
#   build-asan/  AddressSanitizer + UndefinedBehaviorSanitizer: every unit and integration test
#                (real processes and signals included; the packaging test is left out: its consumer
#                is built without the sanitizer runtime)
#   build-tsan/  ThreadSanitizer: the threaded parts' tests (lifecycle: control token, signal
#                binding, checkpoint writer, run status, pause; data: the loader; dist: watchdog,
#                peer monitor, process group)
#   bash scripts/sanitize.sh          # both
#   bash scripts/sanitize.sh asan     # or tsan
# Libtorch, OpenMP and OpenBLAS are not instrumented: scripts/sanitizers/*.supp silence what is
# theirs (each entry says why). Times on this 2-core machine: see the README.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
supp=$root/scripts/sanitizers
which=${1:-all}
common=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -g1" -DYOLOTRAIN_BUILD_BENCH=OFF)

if [ "$which" = all ] || [ "$which" = asan ]; then
  BUILD_DIR=$root/build-asan bash "$root/scripts/build.sh" -DYOLOTRAIN_SANITIZE=address,undefined "${common[@]}"
  (cd "$root/build-asan" &&
   ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0" \
   LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0" \
   UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp" \
   ctest --output-on-failure -j"$(nproc)" --timeout 1800 -LE packaging)
fi
if [ "$which" = all ] || [ "$which" = tsan ]; then
  BUILD_DIR=$root/build-tsan cmake -S "$root" -B "$root/build-tsan" -G Ninja -DYOLOTRAIN_SANITIZE=thread "${common[@]}"
  cmake --build "$root/build-tsan" -j"$(nproc)" --target yolotrain_unit_tests yolotrain_data_tests yolotrain_dist_tests
  cat "$supp/tsan.supp" "$supp/tsan-dist.supp" > "$root/build-tsan/tsan-dist.supp"
  (cd "$root/build-tsan" &&
   TSAN_OPTIONS="suppressions=$supp/tsan.supp:halt_on_error=1:second_deadlock_stack=1" \
   ctest --output-on-failure -j"$(nproc)" --timeout 1800 -L "unit|data" &&
   TSAN_OPTIONS="suppressions=$root/build-tsan/tsan-dist.supp:halt_on_error=1:second_deadlock_stack=1" \
   ctest --output-on-failure -j"$(nproc)" --timeout 1800 -L "dist")
fi
