# Ultralytics 8.4.117's CopyPaste (mode "flip") on a fixed sample: yolotrain's reference for
# data::copy_paste (tests/unit/data/copy_paste_test.cpp). Run with Ultralytics importable
# (../shared/tools/ultralytics84/README.md):
#   python3 scripts/ultralytics84_copy_paste.py tests/unit/data/data/ultralytics84_copy_paste.json
# The image is a formula both sides compute: pixel (y, x) channel c = (7 x + 13 y + 29 c) % 256 (BGR,
# 96 x 128); the instances are polygons of 8 points in pixels, their boxes their extents. Mode
# "mixup" pastes from a second such sample (its dataset a stub holding it, its random draw fixed).
import hashlib, json, sys
import cv2
import numpy as np
from ultralytics.data.augment import CopyPaste
from ultralytics.utils.instance import Instances

H, W = 96, 128
def octagon(x1, y1, x2, y2):
    w, h = x2 - x1, y2 - y1
    return [[x1 + w * .3, y1], [x1 + w * .7, y1], [x2, y1 + h * .3], [x2, y1 + h * .7], [x1 + w * .7, y2],
            [x1 + w * .3, y2], [x1, y1 + h * .7], [x1, y1 + h * .3]]


# Mirrored: the first, third and fourth land where nothing is (the fourth covering 5 % of the second's
# box), the second on itself.
polys = [octagon(3.5, 6.25, 38.75, 46.5), octagon(48.2, 48.6, 76.4, 74.1), octagon(88.3, 60.7, 118.9, 86.2),
         octagon(70.6, 4.4, 86.1, 52.3)]
cls = [0, 1, 2, 3]


# Mode "mixup"'s other sample: pixel (y, x) channel c = (11 x + 5 y + 47 c) % 256, these instances (the
# first covers the sample's first instance: not pasted; the others land apart).
source_polys = [octagon(5.5, 8.25, 30.75, 40.5), octagon(40.1, 70.2, 60.3, 90.4), octagon(92.2, 30.6, 110.8, 50.9)]
source_cls = [2, 0, 1]


def sample(formula=(7, 13, 29), shapes=None, classes=None):
    y, x = np.mgrid[0:H, 0:W]
    a, b, c3 = formula
    img = np.stack([(a * x + b * y + c3 * c) % 256 for c in range(3)], -1).astype(np.uint8)
    segs = np.array(polys if shapes is None else shapes, dtype=np.float32)
    boxes = np.stack([segs[..., 0].min(1), segs[..., 1].min(1), segs[..., 0].max(1), segs[..., 1].max(1)], 1)
    inst = Instances(boxes, segments=segs, bbox_format="xyxy", normalized=False)
    return {"img": img, "cls": np.array(cls if classes is None else classes, dtype=np.float32)[:, None],
            "instances": inst}


class OneSample:  # the dataset mode "mixup" draws its other sample from
    def __init__(self, labels):
        self.labels = labels

    def __len__(self):
        return 1

    def get_image_and_label(self, index):
        return self.labels


def mixup_mode(p):
    cp = CopyPaste(dataset=OneSample(sample((11, 5, 47), source_polys, source_cls)), p=p, mode="mixup")
    import random
    random.uniform = lambda a, b: 0.0  # applied: the probability is the caller's in yolotrain
    return cp(sample())


out = {"ultralytics": "8.4.117", "opencv": cv2.__version__, "height": H, "width": W, "polygons": polys, "cls": cls,
       "source_polygons": source_polys, "source_cls": source_cls, "cases": []}
for mode, p in (("flip", 0.5), ("flip", 1.0), ("flip", 0.3), ("mixup", 1.0), ("mixup", 0.5)):
    labels = CopyPaste(p=p, mode="flip")(sample()) if mode == "flip" else mixup_mode(p)
    inst = labels["instances"]
    inst.convert_bbox("xyxy")
    out["cases"].append({
        "mode": mode,
        "p": p,
        "boxes": inst.bboxes.tolist(),
        "cls": labels["cls"].reshape(-1).tolist(),
        "first_points": inst.segments[:, 0, :].tolist(),
        "image_sha256": hashlib.sha256(np.ascontiguousarray(labels["img"]).tobytes()).hexdigest(),
        "changed_pixels": int((labels["img"] != sample()["img"]).any(-1).sum()),
    })
json.dump(out, open(sys.argv[1], "w"), indent=1)
print([(c["mode"], c["p"], len(c["boxes"]), c["changed_pixels"]) for c in out["cases"]])
