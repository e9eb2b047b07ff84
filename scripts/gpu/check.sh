#!/usr/bin/env bash
# The GPU check, for a lent CUDA machine that has PyTorch (and so libtorch) but no Debian packages
# and no network (scripts/gpu/README.md). Two phases, each well inside a 10-minute command:
#   scripts/gpu/check.sh build    preflight, build against that PyTorch, the [cuda] tests, then
#                                 yolo_train on CUDA: SIGTERM mid-epoch and resume, a pause with
#                                 each pause_release
#   scripts/gpu/check.sh bench    the step at 640 for yolov8n, yolo11n, yolo26n, batch 16 and 64, amp
#                                 off and on: the model-bound ceiling (step_bench: one batch on the
#                                 device, eager and as a CUDA graph, GPU time by CUDA events) and the
#                                 trainer (train_bench, cuda_graph=false and true)
#   scripts/gpu/check.sh more     coco128 at 640 with amp=true/false/bf16 (3 epochs), AutoBatch, the
#                                 loader curve (data_bench)
# Needs, beside the checkout: .gpudeps/{sysroot.tar.xz,env.sh} (scripts/gpu/gather-deps.sh) and
# .gpudata/datasets/{coco128,bccd} (copies of ../shared/datasets/...). Writes figures to $OUT/summary-<phase>.txt
# and every log to $OUT/logs-<phase>.tar.gz. YT_DEVICE=cpu rehearses it on a CPU machine
# (YT_GPU_DEPS: another gathered folder; YT_GPU_BUILD, YT_GPU_WORK: where to build and run;
# YT_BENCH_IMGSZ, YT_BENCH_BATCHES, YT_BENCH_STEPS: smaller bench sizes for a CPU).
set -uo pipefail
phase=${1:?usage: check.sh build|bench|more}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-/tmp/yolotrain-gpu-out}
work=${YT_GPU_WORK:-/tmp/yolotrain-gpu}
build=${YT_GPU_BUILD:-$root/build-gpu}
device=${YT_DEVICE:-cuda}
jobs=$(nproc)
mkdir -p "$out" "$work/logs"
summary=$out/summary-$phase.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
step() { echo; say "=== $* ($(date +%T), ${SECONDS}s)"; }
finish() { tar -C "$work" -czf "$out/logs-$phase.tar.gz" logs 2>/dev/null; say "=== $phase done in ${SECONDS}s"; }
trap finish EXIT
cd "$root"

# --- environment -------------------------------------------------------------------------------
deps=${YT_GPU_DEPS:-$root/.gpudeps}
if [ ! -d "$deps/sysroot" ]; then tar -C "$deps" -xJf "$deps/sysroot.tar.xz" || { say "no .gpudeps/sysroot.tar.xz"; exit 2; }; fi
# shellcheck disable=SC1091
source "$deps/env.sh"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/nvidia/lib:${LD_LIBRARY_PATH:-}
# YT_TORCH_PREFIX: a libtorch's CMake folder where PyTorch's own has none (Debian's python3-torch;
# its libtorch-dev's /usr/share/cmake/Torch then), as in the CPU rehearsal.
torch_prefix=${YT_TORCH_PREFIX:-$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)' 2>/dev/null)}
# A CUDA PyTorch's c10d headers include <nccl.h>, which the CUDA toolkit does not ship: the
# nvidia-nccl wheel beside torch does.
nccl_inc=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "include"))' 2>/dev/null)
[ -n "$nccl_inc" ] && export CPATH=$nccl_inc:$CPATH
data=$root/.gpudata/datasets/coco128/data.yaml
yt=$build/examples/yolo_train
gpu_apps() { nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>/dev/null | tr '\n' ' '; }
status_field() {  # status_field RUN_DIR PYTHON_EXPR_ON_d
  python3 -c "import json;d=json.load(open('$1/status.json'));print($2)" 2>/dev/null
}
wait_step() {  # wait_step RUN_DIR STEP: until status.json says step >= STEP (or 180 s)
  for _ in $(seq 1 900); do
    python3 -c "import json,sys;d=json.load(open('$1/status.json'));sys.exit(0 if d['step']>=$2 else 1)" 2>/dev/null && return 0
    sleep 0.2
  done; return 1
}
wait_state() {  # wait_state RUN_DIR STATE
  for _ in $(seq 1 900); do grep -q "\"state\": \"$2\"" "$1/status.json" 2>/dev/null && return 0; sleep 0.2; done; return 1
}

build_it() {
  step configure
  # PyTorch's include folder carries its own protobuf and oneDNN headers (other versions than the
  # libraries yolotrain links); -I folders come before -isystem ones, so the gathered headers of
  # every library found in both win, while libtorch's own (and the gloo it was built with) stay.
  local torch_inc first=$work/include-first
  torch_inc=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "include"))')
  rm -rf "$first" && mkdir -p "$first"
  for e in "$YT_DEPS_PREFIX"/include/*; do
    case $(basename "$e") in ATen | c10 | torch | caffe2 | gloo) continue ;; esac
    [ -e "$torch_inc/$(basename "$e")" ] && ln -s "$e" "$first/$(basename "$e")"
  done
  say "headers taken from the gathered libraries before PyTorch's: $(ls "$first" | tr '\n' ' ')"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DYOLOTRAIN_BUILD_BENCH=ON \
    -DCMAKE_PREFIX_PATH="$YT_DEPS_PREFIX;$torch_prefix" -DOPENSSL_ROOT_DIR="$YT_DEPS_PREFIX" \
    -DOPENSSL_INCLUDE_DIR="$YT_DEPS_PREFIX/include" \
    -DOPENSSL_CRYPTO_LIBRARY="$YT_DEPS_PREFIX/lib/x86_64-linux-gnu/libcrypto.so" \
    -DYOLOTRAIN_SHARED_DIR="$root/.gpudata" -DCMAKE_CXX_FLAGS="-I$first" >"$work/logs/configure.log" 2>&1 ||
    { tail -30 "$work/logs/configure.log" | tee -a "$summary"; exit 1; }
  say "$(grep YOLOTRAIN_WITH_CUDA "$build/CMakeCache.txt")"
  step build
  cmake --build "$build" -j"$jobs" --target yolo_train yolo_dataset yolotrain_cuda_tests yolotrain_unit_tests \
    train_bench step_bench data_bench >"$work/logs/build.log" 2>&1 ||
    { grep -E "error|Error" -A3 "$work/logs/build.log" | head -80 | tee -a "$summary"; exit 1; }
  say "built in ${SECONDS}s"
}

build_phase() {
  step preflight
  say "host: $(nproc) cores, $(free -g | awk '/Mem/ {print $2}') GiB; $(. /etc/os-release; echo "$PRETTY_NAME"); glibc $(ldd --version | head -1 | awk '{print $NF}')"
  say "gpu: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1)"
  say "torch: $(python3 -c 'import torch;print(torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' 2>&1)"
  say "compilers: $(c++ --version | head -1); $(nvcc --version 2>/dev/null | tail -1); cmake $(cmake --version | head -1 | awk '{print $3}'); ninja $(ninja --version)"
  say "nccl.h: ${nccl_inc:-not found}"
  if [ -z "${YT_GPU_SKIP_BUILD:-}" ]; then build_it; fi

  step "[cuda] tests"
  for t in "$build/tests/unit/cuda/yolotrain_cuda_tests" "$build/tests/yolotrain_unit_tests"; do
    "$t" "[cuda]" -s -r compact >"$work/logs/$(basename "$t")-cuda.log" 2>&1
    say "$(basename "$t") [cuda]: exit $? — $(grep -v "^\s*$" "$work/logs/$(basename "$t")-cuda.log" | tail -1)"
    grep -E "failed|FAILED|skipped|with expansion|batch 2:|items" "$work/logs/$(basename "$t")-cuda.log" | head -20 >>"$summary"
  done

  step "yolo_train on $device: SIGTERM mid-epoch, then resume"
  "$build/examples/yolo_dataset/yolo_dataset" shapes "$work/shapes" --train 512 --val 64 --imgsz 320 >/dev/null
  local targs=(data="$work/shapes/data.yaml" epochs=3 imgsz=320 batch=32 workers=8 device="$device"
               project="$work/runs" exist_ok=true save_interval=0)
  "$yt" "${targs[@]}" name=term >"$work/logs/term.log" 2>&1 &
  local pid=$! run=$work/runs/term
  wait_step "$run" 5; say "training: step $(status_field "$run" "d['step']"), memory $(status_field "$run" "d['memory']"); nvidia-smi apps: $(gpu_apps)"
  local t0=$SECONDS; kill -TERM $pid; wait $pid; local code=$?
  say "SIGTERM: exit $code in $((SECONDS - t0))s; after exit nvidia-smi apps: [$(gpu_apps)]"
  grep -iE "cuda|stopp|checkpoint" "$work/logs/term.log" | tail -4 >>"$summary"
  local stopped_at; stopped_at=$(status_field "$run" "d['step']")
  "$yt" "${targs[@]}" name=term resume=true >"$work/logs/resume.log" 2>&1; code=$?
  say "resume from step $stopped_at: exit $code; $(grep -iE "resum" "$work/logs/resume.log" | head -2 | tr '\n' ' ')"
  tail -3 "$work/logs/resume.log" >>"$summary"

  for mode in cache offload exit; do
    step "yolo_train on $device: pause with pause_release=$mode"
    run=$work/runs/p_$mode
    "$yt" "${targs[@]}" name=p_$mode pause_release=$mode >"$work/logs/p_$mode.log" 2>&1 &
    pid=$!; wait_step "$run" 5
    say "running: step $(status_field "$run" "d['step']"), memory $(status_field "$run" "d['memory']"); nvidia-smi apps: $(gpu_apps)"
    kill -USR1 $pid
    if [ $mode = exit ]; then
      wait $pid; code=$?; say "pause_release=exit: exit $code; nvidia-smi apps after: [$(gpu_apps)]"
      "$yt" "${targs[@]}" name=p_exit resume=true epochs=3 >"$work/logs/p_exit_resume.log" 2>&1
      say "resumed after exit: exit $?; $(grep -iE "resum" "$work/logs/p_exit_resume.log" | head -1)"
      continue
    fi
    wait_state "$run" paused; sleep 2
    say "paused: step $(status_field "$run" "d['step']"), memory $(status_field "$run" "d['memory']"); nvidia-smi apps: $(gpu_apps)"
    local paused_step; paused_step=$(status_field "$run" "d['step']")
    kill -USR2 $pid; wait_step "$run" $((paused_step + 3))
    say "resumed: step $(status_field "$run" "d['step']") (paused at $paused_step), state $(status_field "$run" "d['state']"), memory $(status_field "$run" "d['memory']")"
    kill -TERM $pid; wait $pid; say "stopped: exit $?"
  done
}

# eager vs graph vs the ceiling, in one call (issue 51): step_bench's 24 configurations, then the
# trainer's (train_bench: the loader, EMA, tally and progress line included) with cuda_graph off and on.
bench_phase() {
  local imgsz=${YT_BENCH_IMGSZ:-640} batches=${YT_BENCH_BATCHES:-16 64} steps=${YT_BENCH_STEPS:-30}
  step "the step alone on one batch on $device (step_bench: eager, graph; GPU time by CUDA events)"
  timeout 240 "$build/bench/step_bench" data="$data" device="$device" imgsz="$imgsz" steps="$steps" \
    batches="${batches// /,}" 2>&1 | tee "$work/logs/step_bench.log" | tee -a "$summary"
  step "the trainer (train_bench, coco128, imgsz $imgsz, $((steps + 10)) steps, workers 14): cuda_graph=false, true"
  local graphs="false true"
  [ "$device" = cpu ] && graphs=false  # the rehearsal: cuda_graph=true refuses a CPU run
  for model in yolov8n.yaml yolo11n.yaml yolo26n.yaml; do
    for batch in $batches; do
      for amp in false true; do
        for graph in $graphs; do
          local line; line=$(timeout 60 "$build/bench/train_bench" data="$data" model=$model imgsz="$imgsz" batch=$batch \
            steps=$((steps + 10)) workers=14 device="$device" amp=$amp cuda_graph=$graph 2>&1 | grep '^imgsz')
          say "$model batch $batch amp=$amp cuda_graph=$graph: ${line:-failed}"
        done
      done
    done
  done
}

more_phase() {
  local gpu_log=$work/logs/nvidia-smi-dmon.log
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -lms 500 >"$gpu_log" 2>/dev/null &
  local smi=$!
  step "yolo_train coco128 imgsz=640 on $device: amp=true, false, bf16 (3 epochs, batch 16)"
  for amp in true false bf16; do
    local t0=$SECONDS
    timeout 150 "$yt" data="$data" model=yolov8n.yaml epochs=3 imgsz=640 batch=16 workers=12 device="$device" amp=$amp \
      project="$work/runs" name=coco_amp_$amp exist_ok=true >"$work/logs/coco_amp_$amp.log" 2>&1
    say "amp=$amp: exit $? in $((SECONDS - t0))s"
    cut -d, -f1-9 "$work/runs/coco_amp_$amp/results.csv" 2>/dev/null | tee -a "$summary"
    grep -iE "skipped|nan|inf |cuda_graph" "$work/logs/coco_amp_$amp.log" | head -3 >>"$summary"
  done
  step "AutoBatch (batch=-1) on $device, yolov8n at 640, 1 epoch"
  timeout 150 "$yt" data="$data" model=yolov8n.yaml epochs=1 imgsz=640 batch=-1 device="$device" workers=14 \
    project="$work/runs" name=autobatch exist_ok=true >"$work/logs/autobatch.log" 2>&1
  say "batch=-1: exit $?"; grep -E "AutoBatch" "$work/logs/autobatch.log" | head -6 | tee -a "$summary"
  step "the loader alone (data_bench, coco128): 1 to 16 worker threads"
  timeout 150 "$build/bench/data_bench" "$root/.gpudata" 1 2 4 8 14 16 2>&1 | tee "$work/logs/data_bench.log" | head -30 >>"$summary"
  kill $smi 2>/dev/null
}

case $phase in
  build) build_phase ;;
  bench) bench_phase ;;
  more) more_phase ;;
  *) echo "usage: check.sh build|bench|more" >&2; exit 2 ;;
esac
