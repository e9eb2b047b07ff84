#!/bin/bash
# Data-parallel training on one machine: N processes launched by torchrun, c10d Gloo on the CPU.
# Ctrl+C or SIGTERM to torchrun: every rank stops at the same step, rank 0 writes one checkpoint,
# and the same command (resume=true) continues. A lost rank: the others exit 69 naming it, and
# --max_restarts restarts the group, which resumes from the newest checkpoint.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
ranks=${RANKS:-2}
exec "$here/scripts/torchrun" --nproc_per_node="$ranks" --max_restarts=3 --no_python \
  "$here/build/examples/yolo_train" data=shapes epochs=30 imgsz=160 batch=16 name=ddp resume=true "$@"
