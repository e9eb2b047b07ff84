# Ultralytics 8.4.117's own training throughput, for train_bench's figures beside it (docs/performance.md):
# images per second over the batches after the first `skip` of one epoch (its own trainer, CPU, its
# dataloader with `workers`), timed by an on_train_batch_end callback. Run with Ultralytics importable
# (../shared/tools/ultralytics84/README.md):
#   python3 bench/ultralytics_train_speed.py yolo11n-cls.yaml DATA 224 32 [workers=2] [key=value ...]
import ast, sys, time

from ultralytics import YOLO

model_yaml, data, imgsz, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
extra = {k: ast.literal_eval(v) if v[:1].isdigit() or v in ("None", "True", "False") else v
         for k, v in (a.split("=", 1) for a in sys.argv[5:])}
times = []
model = YOLO(model_yaml)
model.add_callback("on_train_batch_end", lambda trainer: times.append(time.perf_counter()))
args = dict(data=data, imgsz=imgsz, batch=batch, epochs=1, device="cpu", workers=2, plots=False, val=False,
            amp=False, project="/tmp/u84speed", name="run", exist_ok=True, verbose=False)
args.update(extra)
model.train(**args)
skip = 3
steps = len(times) - 1 - skip
print(f"ultralytics {model_yaml} imgsz {imgsz} batch {batch}: {steps * batch / (times[-1] - times[skip]):.1f} img/s "
      f"over {steps} batches")
