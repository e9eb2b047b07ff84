#!/usr/bin/env bash
# The main job, from a fresh machine: installs the dependencies, builds, and trains a YOLOv8n on the
# built-in synthetic "shapes" dataset (written on first use to runs/detect/.shapes-v2). Ctrl+C stops
# with a checkpoint (exit 130); running this script again resumes exactly where it stopped. Ctrl+Z
# pauses (fg resumes). Arguments replace the defaults below (yolo_train key=value ...).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
bash "$root/scripts/install-deps.sh"
BUILD_DIR=$build bash "$root/scripts/build.sh" >/dev/null
cd "$root"
if [ $# -eq 0 ]; then
  set -- data=shapes epochs=30 imgsz=160 batch=16 name=shapes resume=true
fi
echo "yolo_train $*"
exec "$build/examples/yolo_train" "$@"
