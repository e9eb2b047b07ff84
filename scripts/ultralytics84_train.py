# Trains a model with Ultralytics 8.4.117's own trainer (its task from the YAML: segmentation on
# shapes-seg, pose on shapes-pose), so that its validation has figures worth comparing (the
# coco128seg checkpoints in ../shared learned nothing; ../shared has no pose checkpoint).
# Run with Ultralytics 8.4.117 importable (../shared/tools/ultralytics84/README.md), on a copy of the
# dataset whose data.yaml `path:` is absolute (shapes-pose: `yolo_dataset shapes DIR --keypoints`):
#   python3 scripts/ultralytics84_train.py yolo11n-seg.yaml /tmp/u84data/shapes-seg/data.yaml /tmp/segruns 30
#   python3 scripts/ultralytics84_train.py yolo11n-pose.yaml /tmp/u84data/shapes-pose/data.yaml /tmp/poseruns 20
# Arguments after the epochs are key=value overrides (Python literals; None as such), e.g. for
# classification on shapes-cls (a folder, `yolo_dataset shapes DIR --classes`):
#   python3 scripts/ultralytics84_train.py yolo11n-cls.yaml /tmp/u84data/shapes-cls /tmp/clsruns 20 imgsz=64 \
#     batch=32 auto_augment=None
# -> /tmp/segruns/yolo11n-seg/weights/best.pt (then scripts/ultralytics84_val.py).
import ast, os, sys, time

import torch
torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "2")))  # scripts/compare_learning.py --threads
from ultralytics import YOLO


def literal(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


model_yaml, data, project, epochs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
args = dict(data=data, imgsz=160, batch=16, epochs=epochs, seed=0, deterministic=True, workers=0, device="cpu",
            amp=False, plots=False, project=project, name=model_yaml.replace(".yaml", ""), exist_ok=True, verbose=False)
args.update({k: literal(v) for k, v in (a.split("=", 1) for a in sys.argv[5:])})
t = time.time()
YOLO(model_yaml).train(**args)
print("train wall s", time.time() - t)
