# Ultralytics 8.4.117's own validation of a segmentation, pose, classification or OBB checkpoint:
# yolotrain's reference for `yolo_train val` of seg, pose, -cls and -obb models
# (tests/unit/engine/validation_test.cpp).
# Run with Ultralytics 8.4.117 importable (../shared/tools/ultralytics84/README.md):
#   python3 scripts/ultralytics84_val.py BEST.pt DATA.yaml IMGSZ OUT.json
# (a classification dataset is its folder: DATA is then the folder of class folders).
# The checkpoints it was run on are trained by scripts/ultralytics84_train.py.
import hashlib, json, sys

import torch
torch.set_num_threads(2)
from ultralytics import YOLO

pt, data, imgsz, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
r = YOLO(pt).val(data=data, imgsz=imgsz, batch=16, device="cpu", plots=False, project="/tmp/u84val", name="val",
                 exist_ok=True)


def figures(m):
    return {"all": [float(m.mp), float(m.mr), float(m.map50), float(m.map)],
            "p": [float(v) for v in m.p], "r": [float(v) for v in m.r],
            "ap50": [float(v) for v in m.ap50], "ap": [float(v) for v in m.ap]}


result = {"ultralytics": "8.4.117", "checkpoint_sha256": hashlib.sha256(open(pt, "rb").read()).hexdigest(),
          "imgsz": imgsz, "batch": 16}
if hasattr(r, "top1"):  # ClassifyMetrics
    result |= {"top1": float(r.top1), "top5": float(r.top5)}
    print(result["top1"], result["top5"])
else:
    result["box"] = figures(r.box)
    second = "pose" if hasattr(r, "pose") else "mask" if hasattr(r, "seg") else None  # OBBMetrics: boxes only
    if second:  # PoseMetrics' keypoints, SegmentMetrics' masks
        result[second] = figures(r.pose if second == "pose" else r.seg)
    print(result["box"]["all"], result[second]["all"] if second else "")
json.dump(result, open(out, "w"), indent=1)
