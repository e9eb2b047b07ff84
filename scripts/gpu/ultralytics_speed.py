"""Ultralytics' own training speed on the same machine and data as bench/train_bench, for the GPU check.

Run beside an Ultralytics source tree (PYTHONPATH), with polars shimmed where it is missing
(../shared/tools/ultralytics84/shims). Trains MODEL on coco128 at imgsz 640 with mosaic on
(close_mosaic=0), no validation and no plots, and prints the median of the wall time between
batch ends after the first 3 — the figure train_bench prints as "median step".
Usage: python3 ultralytics_speed.py DATA_YAML MODEL BATCH AMP(true|false) WORKERS
"""
import os
import statistics
import sys
import tempfile
import time

import yaml

data_yaml, model_name, batch, amp, workers = sys.argv[1:6]
batch = int(batch)
with open(data_yaml) as f:
    data = yaml.safe_load(f)
data["path"] = os.path.dirname(os.path.abspath(data_yaml))  # Ultralytics resolves a relative path elsewhere
tmp = tempfile.mkdtemp(prefix="u84-")
with open(os.path.join(tmp, "data.yaml"), "w") as f:
    yaml.safe_dump(data, f)

from ultralytics import YOLO, __version__  # noqa: E402

ends = []
model = YOLO(model_name)
model.add_callback("on_train_batch_end", lambda trainer: ends.append(time.perf_counter()))
epochs = max(2, (40 * batch + 127) // 128)  # about 40 steps on coco128's 128 images
model.train(data=os.path.join(tmp, "data.yaml"), imgsz=640, batch=batch, epochs=epochs, amp=amp == "true",
            workers=int(workers), val=False, plots=False, close_mosaic=0, project=tmp, name="run", device=os.environ.get("YT_U84_DEVICE", "0"),
            fraction=float(os.environ.get("YT_U84_FRACTION", "1.0")),
            verbose=False, exist_ok=True)
steps = [b - a for a, b in zip(ends, ends[1:])][3:]
med = statistics.median(steps)
print(f"ultralytics {__version__} {model_name} batch {batch} amp={amp}: median step {med:.3f} s = "
      f"{batch / med:.1f} img/s over {len(steps)} steps")
