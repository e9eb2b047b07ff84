# Ultralytics 8.4.117's own oriented boxes from labels: yolotrain's reference for data::outline_xywhr
# and the loader's LoaderOptions::obb (tests/unit/data/obb_data_test.cpp). utils/ops.py xyxyxyxy2xywhr
# (cv2.minAreaRect) of fixed outlines (rectangles in every orientation, one given with w < h, a polygon
# of 7 points, a degenerate line), and the validation samples of shapes-obb as its YOLODataset(task="obb")
# gives them without augmentation at imgsz 160 (LetterBox, Format with return_obb: bboxes [n, 5]
# normalized xywhr). Run with Ultralytics 8.4.117 importable, on shapes-obb written by
# `yolo_dataset shapes DIR --obb` (docs/data.md):
#   python3 scripts/ultralytics84_obb_labels.py DIR tests/unit/data/data/ultralytics84_obb_labels.json
import json, math, sys

import numpy as np
import torch
from ultralytics.data.dataset import YOLODataset
from ultralytics.utils.ops import xyxyxyxy2xywhr

root, out = sys.argv[1], sys.argv[2]


def turned_rect(cx, cy, w, h, a):
    c, s = math.cos(a), math.sin(a)
    return [v for dx, dy in ((w / 2, h / 2), (-w / 2, h / 2), (-w / 2, -h / 2), (w / 2, -h / 2))
            for v in (cx + dx * c - dy * s, cy + dx * s + dy * c)]


outlines = [turned_rect(50, 40, 30, 12, a) for a in (0.0, 0.4, 1.2, math.pi / 2, 2.5, -0.3, 3.0)]
outlines.append([10, 10, 10, 40, 30, 40, 30, 10])  # upright, given with w < h
outlines.append([5.5, 3.25, 20, 2, 31, 14, 28.5, 30, 12, 33.75, 4, 22, 3, 11])  # 7 points
outlines.append([0, 0, 10, 10, 20, 20, 30, 30])  # a line
result = {"ultralytics": "8.4.117", "outlines": outlines,
          "xywhr": [xyxyxyxy2xywhr(np.array([o], dtype=np.float32).reshape(1, -1, 2))[0].tolist() for o in outlines]}
ds = YOLODataset(img_path=f"{root}/images/val", imgsz=160, augment=False, rect=False, batch_size=1, stride=32,
                 pad=0.0, data={"names": {0: "rectangle", 1: "ellipse", 2: "triangle", 3: "cross"}, "nc": 4},
                 task="obb", cache=False)
samples = []
for i in range(8):
    s = ds[i]
    samples.append({"im_file": s["im_file"].split("/")[-1], "cls": s["cls"].view(-1).tolist(),
                    "bboxes": s["bboxes"].tolist(), "shape": list(s["img"].shape[1:])})
result["samples"] = samples
json.dump(result, open(out, "w"), indent=1)
print(result["xywhr"][:3], samples[0])
