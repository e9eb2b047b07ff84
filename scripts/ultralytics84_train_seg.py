# Trains a segmentation model with Ultralytics 8.4.117's own trainer on shapes-seg, so that its
# validation has figures worth comparing (the coco128seg checkpoints in ../shared learned nothing).
# Run with Ultralytics 8.4.117 importable (../shared/tools/ultralytics84/README.md), on a copy of
# ../shared/datasets/shapes-seg whose data.yaml `path:` is absolute:
#   python3 scripts/ultralytics84_train_seg.py yolo11n-seg.yaml /tmp/u84data/shapes-seg/data.yaml /tmp/segruns 30
# -> /tmp/segruns/yolo11n-seg/weights/best.pt (then scripts/ultralytics84_seg_val.py).
import sys, time

import torch
torch.set_num_threads(2)
from ultralytics import YOLO

model_yaml, data, project, epochs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
t = time.time()
YOLO(model_yaml).train(data=data, imgsz=160, batch=16, epochs=epochs, seed=0, deterministic=True, workers=0,
                       device="cpu", amp=False, plots=False, project=project, name=model_yaml.replace(".yaml", ""),
                       exist_ok=True, verbose=False)
print("train wall s", time.time() - t)
