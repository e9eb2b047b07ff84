#!/usr/bin/env bash
# Ultralytics' training speed on the lent GPU, to set beside train_bench's (scripts/gpu/README.md).
# Needs .gpuref/ultralytics (the package folder of Ultralytics 8.4.117's source) and .gpuref/polars
# (../shared/tools/ultralytics84/shims/polars); writes $OUT/ultralytics-speed.txt.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-/tmp/yolotrain-gpu-out}; mkdir -p "$out"
export PYTHONPATH=$root/.gpuref YOLO_OFFLINE=True YOLO_CONFIG_DIR=/tmp/u84cfg MPLBACKEND=Agg
mkdir -p /tmp/u84cfg/Ultralytics
font=$(python3 -c 'import matplotlib, os; print(os.path.join(os.path.dirname(matplotlib.__file__), "mpl-data/fonts/ttf/DejaVuSans.ttf"))')
cp "$font" /tmp/u84cfg/Ultralytics/Arial.ttf 2>/dev/null
data=$root/.gpudata/datasets/coco128/data.yaml
for cfg in "yolov8n.yaml 16 true" "yolov8n.yaml 64 true" "yolov8n.yaml 64 false" "yolo11n.yaml 16 true" "yolo11n.yaml 64 true"; do
  set -- $cfg
  timeout 60 python3 "$root/scripts/gpu/ultralytics_speed.py" "$data" "$1" "$2" "$3" 14 >"$out/u84-$1-$2-$3.log" 2>&1
  grep '^ultralytics ' "$out/u84-$1-$2-$3.log" || { echo "$cfg: failed:"; tail -5 "$out/u84-$1-$2-$3.log"; }
done | tee "$out/ultralytics-speed.txt"
