#!/usr/bin/env bash
# The main job, from a fresh machine: installs the dependencies, builds yolo_train (only it, with
# the build's progress), and trains a YOLOv8n on the built-in synthetic "shapes" dataset (written
# on first use to runs/detect/.shapes-v2): 20 epochs at 160 px, about 3 minutes on 2 cores, ending
# near mAP50 0.86. Ctrl+C stops with a checkpoint (exit 130); running this script again resumes
# exactly where it stopped. Ctrl+Z pauses (fg resumes). Arguments replace the defaults below
# (yolo_train key=value ...); `task=segment` alone keeps them for segmentation: a YOLOv8n-seg on
# the polygon variant "shapes-seg" (runs/segment/shapes, about 2 minutes, mask mAP50 near 0.8).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
bash "$root/scripts/install-deps.sh"
echo "building yolo_train in $build (the first build takes several minutes; each line is one step)"
BUILD_DIR=$build BUILD_TARGETS=yolo_train bash "$root/scripts/build.sh" | grep --line-buffered -v "^-- "
cd "$root"
if [ $# -eq 0 ]; then
  set -- data=shapes epochs=20 imgsz=160 batch=16 name=shapes resume=true
elif [ $# -eq 1 ] && [ "$1" = task=segment ]; then
  set -- task=segment epochs=20 imgsz=160 batch=16 name=shapes resume=true
fi
echo "yolo_train $*"
exec "$build/examples/yolo_train" "$@"
