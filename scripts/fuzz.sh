#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang 14 (AddressSanitizer + UndefinedBehaviorSanitizer)
# and runs each for FUZZ_SECONDS (default 120) from its seed corpus in fuzz/corpus/<target>.
#   bash scripts/fuzz.sh                      # every target
#   FUZZ_SECONDS=600 bash scripts/fuzz.sh fuzz_pickle fuzz_ultralytics_pt
# The parser under test is compiled into its target (instrumented, coverage-guided); everything
# else comes from the Release build's libraries (BUILD_DIR, default build/; built when missing).
# Findings (crash-*, leak-*, oom-*, timeout-*) land in build-fuzz/<target>/; the script exits 1 if any.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
out=${FUZZ_DIR:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-120}
[ -f "$build/src/libyolotrain.so" ] || BUILD_DIR=$build bash "$root/scripts/build.sh"
if ! command -v clang++-14 >/dev/null; then
  sudo_cmd=(); [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends clang-14
fi

declare -A sources=(
  [fuzz_pickle]="src/io/pickle.cpp"
  [fuzz_ultralytics_pt]="src/io/pickle.cpp src/io/torch_archive.cpp src/io/ultralytics_pt.cpp"
  [fuzz_safetensors]="src/lifecycle/files/safetensors.cpp"
  [fuzz_checkpoint]="src/lifecycle/checkpoint/checkpoint_store.cpp src/lifecycle/files/safetensors.cpp"
  [fuzz_labels]="src/data/scan.cpp"
  [fuzz_data_yaml]="src/data/data_config.cpp"
  [fuzz_model_yaml]="src/nn/model_yaml.cpp"
  [fuzz_control_request]="src/endpoint/control_server.cpp src/endpoint/control_requests.cpp src/endpoint/bearer_token.cpp src/endpoint/listen_address.cpp src/endpoint/listen_socket.cpp"
)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_pickle fuzz_ultralytics_pt fuzz_safetensors fuzz_checkpoint fuzz_labels fuzz_data_yaml fuzz_model_yaml
  fuzz_control_request)

flags=(-std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
       -I"$root/include" -I"$root/src/nn" -I"$root/src/data" -I/usr/include/torch/csrc/api/include -I/usr/include/opencv4
       -DYOLOTRAIN_WITH_CUDA=0 -DYOLOTRAIN_MODELS_SOURCE_DIR=\"$root/models\" -DYOLOTRAIN_MODELS_INSTALL_DIR=\"/nonexistent\"
       -DYOLOTRAIN_MODELS_LIB_RELATIVE=\"models\")
libs=(-L"$build/src" -L"$build/src/lifecycle" -L"$build/src/remote" -L"$build/src/endpoint"
      -Wl,-rpath,"$build/src:$build/src/lifecycle:$build/src/remote:$build/src/endpoint"
      -lyolotrain -lyolotrain_remote -lyolotrain_lifecycle -ltorch -ltorch_cpu -lc10 -lyaml-cpp -lcrypto -lmicrohttpd -lpthread)
# Per-target libFuzzer options. fuzz_control_request: the server frees a connection on its own
# thread after the input has returned, which a per-input leak check takes for a leak; the check at
# exit (ASAN_OPTIONS=detect_leaks=1) still runs.
declare -A options=([fuzz_control_request]="-detect_leaks=0")
found=0
mkdir -p "$out/bin"
for t in "${targets[@]}"; do
  [ -n "${sources[$t]:-}" ] || { echo "fuzz.sh: no target $t" >&2; exit 2; }
  echo "== $t: building"
  # shellcheck disable=SC2086
  (cd "$root" && clang++-14 "${flags[@]}" "fuzz/$t.cpp" ${sources[$t]} "${libs[@]}" -o "$out/bin/$t")
  mkdir -p "$out/$t/corpus" && cp -n "$root/fuzz/corpus/$t/"* "$out/$t/corpus/" 2>/dev/null || true
  echo "== $t: fuzzing for ${seconds} s"
  (cd "$out/$t" && TMPDIR=/dev/shm ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS="suppressions=$root/scripts/sanitizers/lsan.supp:print_suppressions=0" ../bin/"$t" ${options[$t]:-} -max_total_time="$seconds" -timeout=10 \
     -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=65536 -print_final_stats=1 corpus 2>&1 | tail -n 12) || true
  if compgen -G "$out/$t/crash-*" >/dev/null || compgen -G "$out/$t/leak-*" >/dev/null ||
     compgen -G "$out/$t/oom-*" >/dev/null || compgen -G "$out/$t/timeout-*" >/dev/null; then
    echo "== $t: FINDINGS in $out/$t"; found=1
  fi
done
exit $found
