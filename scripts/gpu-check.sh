#!/usr/bin/env bash
# GPU checks, for a CUDA machine that has PyTorch but no Debian packages (see
# ../shared/gpu/README.md): builds yolotrain against that PyTorch, runs the CUDA tests, then
# custom_loop on CUDA with a SIGTERM and with a pause (--pause-release offload), and prints the
# GPU memory figures. Usage: scripts/gpu-check.sh DEPS_DIR [OUT_DIR]
#   DEPS_DIR: made here by ../shared/gpu/gather-debian-libs.sh, plus libssl-dev/libssl3 unpacked
#             into DEPS_DIR/sysroot (apt-get download libssl-dev libssl3; dpkg -x each).
set -uo pipefail
deps=$(cd "${1:?usage: gpu-check.sh DEPS_DIR [OUT_DIR]}" && pwd)
out=${2:-/tmp/yolotrain-gpu}
mkdir -p "$out"
# shellcheck disable=SC1091
source "$deps/env.sh"
torch_prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
build=build-gpu
step() { echo; echo "=== $* ($(date +%T))"; }

step configure
cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DYOLOTRAIN_BUILD_BENCH=ON \
  -DCMAKE_PREFIX_PATH="$YT_DEPS_PREFIX;$torch_prefix" -DOPENSSL_ROOT_DIR="$YT_DEPS_PREFIX" \
  >"$out/configure.log" 2>&1 || { tail -40 "$out/configure.log"; exit 1; }
grep -E "YOLOTRAIN_WITH_CUDA|Found Torch|CUDA" "$out/configure.log" | head -5
grep YOLOTRAIN_WITH_CUDA $build/CMakeCache.txt
step build
cmake --build $build -j"$(nproc)" >"$out/build.log" 2>&1 || { grep -E "error" -A5 "$out/build.log" | head -60; exit 1; }
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/nvidia/lib:${LD_LIBRARY_PATH:-}

step "CudaGuard tests on the device"
$build/tests/yolotrain_unit_tests "[cuda]" --success 2>&1 | grep -E "with expansion|CudaGuard|passed|failed|reserved|:[0-9]+: " | head -40
$build/tests/yolotrain_unit_tests "[cuda]" -r compact 2>&1 | tail -3

loop=$build/examples/custom_loop
common=(--steps 400000 --batch 256 --fc-width 16384 --device cuda --save-interval-s 0)
wait_step() {  # wait until status.json in $1 shows a step > 0
  for _ in $(seq 1 600); do grep -q '"step": [1-9]' "$1/status.json" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
gpu_mem() { nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>/dev/null | tr '\n' ' '; }

step "custom_loop on CUDA, SIGTERM"
rm -rf "$out/term"
$loop --dir "$out/term" "${common[@]}" >"$out/term.log" 2>&1 &
pid=$!
wait_step "$out/term"; sleep 3
echo "while training: nvidia-smi apps: $(gpu_mem)"
python3 -c "import json;d=json.load(open('$out/term/status.json'));print('status memory while training:', d['memory'])"
t0=$(date +%s.%N); kill -TERM $pid; wait $pid; code=$?; t1=$(date +%s.%N)
echo "exit code $code after $(python3 -c "print(round($t1-$t0,3))") s"
tail -3 "$out/term.log"
echo "after exit: nvidia-smi apps: $(gpu_mem)"
ls -la "$out/term"

step "custom_loop on CUDA, pause with --pause-release offload, then resume and stop"
rm -rf "$out/pause"
$loop --dir "$out/pause" "${common[@]}" --pause-release offload >"$out/pause.log" 2>&1 &
pid=$!
wait_step "$out/pause"; sleep 3
python3 -c "import json;d=json.load(open('$out/pause/status.json'));print('running:', d['state'], d['memory'])"
echo "running: nvidia-smi apps: $(gpu_mem)"
kill -USR1 $pid
for _ in $(seq 1 300); do grep -q '"state": "paused"' "$out/pause/status.json" && break; sleep 0.1; done
sleep 1
python3 -c "import json;d=json.load(open('$out/pause/status.json'));print('paused:', d['state'], d['memory'])"
echo "paused: nvidia-smi apps: $(gpu_mem)"
kill -USR2 $pid; sleep 3
python3 -c "import json;d=json.load(open('$out/pause/status.json'));print('resumed:', d['state'], 'step', d['step'], d['memory'])"
kill -TERM $pid; wait $pid; echo "exit code $?"
tail -4 "$out/pause.log"

step "yolo_train on CUDA: SIGTERM, then a pause with each pause_release"
yt=$build/examples/yolo_train
$build/examples/yolo_dataset/yolo_dataset shapes "$out/shapes" --train 256 --val 32 --imgsz 320 | tail -1
targs=(data="$out/shapes/data.yaml" epochs=3 imgsz=320 batch=32 workers=8 device=cuda project="$out/runs"
       save_interval=0 exist_ok=true)
wait_train() {  # $1 run folder, $2 step
  for _ in $(seq 1 900); do
    python3 -c "import json,sys;d=json.load(open('$1/status.json'));sys.exit(0 if d['step']>=$2 else 1)" 2>/dev/null && return 0
    sleep 0.2
  done; return 1
}
t0=$(date +%s.%N)
$yt "${targs[@]}" name=full epochs=1 >"$out/full.log" 2>&1; echo "one epoch (256 images at 320, batch 32, val 32): exit $? in $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s"
grep -E "epoch 1/1|CudaGuard" "$out/full.log"
$yt "${targs[@]}" name=term >"$out/term_train.log" 2>&1 &
pid=$!; wait_train "$out/runs/term" 5
echo "training: nvidia-smi apps: $(gpu_mem)"
t0=$(date +%s.%N); kill -TERM $pid; wait $pid; code=$?
echo "SIGTERM: exit $code after $(python3 -c "print(round($(date +%s.%N)-$t0,3))") s"; tail -2 "$out/term_train.log"
echo "after exit: nvidia-smi apps: $(gpu_mem)"
for mode in cache offload exit; do
  $yt "${targs[@]}" name=p_$mode pause_release=$mode >"$out/p_$mode.log" 2>&1 &
  pid=$!; wait_train "$out/runs/p_$mode" 5
  python3 -c "import json;d=json.load(open('$out/runs/p_$mode/status.json'));print('$mode running:', d['memory'].get('cuda'))"
  kill -USR1 $pid
  if [ $mode = exit ]; then wait $pid; echo "pause_release=exit: exit $?"; continue; fi
  for _ in $(seq 1 300); do grep -q '"state": "paused"' "$out/runs/p_$mode/status.json" && break; sleep 0.1; done
  sleep 1
  python3 -c "import json;d=json.load(open('$out/runs/p_$mode/status.json'));print('$mode paused:', d['state'], d['memory'].get('cuda'))"
  echo "$mode paused: nvidia-smi apps: $(gpu_mem)"
  kill -TERM $pid; wait $pid; echo "$mode: stopped while paused, exit $?"
done
step "yolo_train on CUDA: throughput at 640, batch 16, with and without AMP; val on CUDA"
for amp in true false bf16; do
  timeout 300 $build/bench/train_bench imgsz=640 batch=16 steps=30 device=cuda workers=8 amp=$amp 2>&1 |
    grep '^imgsz' | sed "s/^/amp=$amp /"
done
$yt val model="$out/runs/full/weights/best.ytckpt" device=cuda | tail -3
step "AutoBatch on CUDA (batch=-1 and batch=0.3), and YOLO11n"
for b in -1 0.3; do
  timeout 300 $yt data=../shared/datasets/coco128/data.yaml model=yolo11n.yaml epochs=1 imgsz=640 batch=$b device=cuda \
    workers=8 project="$out/runs" name=autobatch$b exist_ok=true 2>&1 | grep -E "AutoBatch|training |epoch 1/"
done
timeout 300 $build/bench/train_bench imgsz=640 batch=16 steps=30 device=cuda workers=8 model=yolo11n.yaml 2>&1 |
  grep '^imgsz' | sed "s/^/yolo11n /"
step "loader scaling with worker threads (issue 15's curve to 16 threads), coco128 at 320 and 640"
timeout 300 $build/bench/data_bench "$(pwd)/../shared" 1 2 4 8 16 2>&1 | head -30
[ -n "${YT_GPU_QUICK:-}" ] && exit 0

step "unit and integration tests (CPU paths) on this machine"
(cd $build && ctest -j8 --output-on-failure --timeout 300 >"$out/ctest.log" 2>&1)
grep -E "tests passed|tests failed|Failed|SEGFAULT|Exception|FAILED" "$out/ctest.log" | head -30
step "lifecycle bench"
timeout 120 $build/bench/lifecycle_bench
