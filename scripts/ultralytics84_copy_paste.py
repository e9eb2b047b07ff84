# Ultralytics 8.4.117's CopyPaste (mode "flip") on a fixed sample: yolotrain's reference for
# data::copy_paste (tests/unit/data/copy_paste_test.cpp). Run with Ultralytics importable
# (../shared/tools/ultralytics84/README.md):
#   python3 scripts/ultralytics84_copy_paste.py tests/unit/data/data/ultralytics84_copy_paste.json
# The image is a formula both sides compute: pixel (y, x) channel c = (7 x + 13 y + 29 c) % 256 (BGR,
# 96 x 128); the instances are polygons of 8 points in pixels, their boxes their extents.
import hashlib, json, sys
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


def sample():
    y, x = np.mgrid[0:H, 0:W]
    img = np.stack([(7 * x + 13 * y + 29 * c) % 256 for c in range(3)], -1).astype(np.uint8)
    segs = np.array(polys, dtype=np.float32)
    boxes = np.stack([segs[..., 0].min(1), segs[..., 1].min(1), segs[..., 0].max(1), segs[..., 1].max(1)], 1)
    inst = Instances(boxes, segments=segs, bbox_format="xyxy", normalized=False)
    return {"img": img, "cls": np.array(cls, dtype=np.float32)[:, None], "instances": inst}


out = {"ultralytics": "8.4.117", "height": H, "width": W, "polygons": polys, "cls": cls, "cases": []}
for p in (0.5, 1.0, 0.3):
    labels = CopyPaste(p=p, mode="flip")(sample())
    inst = labels["instances"]
    inst.convert_bbox("xyxy")
    out["cases"].append({
        "p": p,
        "boxes": inst.bboxes.tolist(),
        "cls": labels["cls"].reshape(-1).tolist(),
        "first_points": inst.segments[:, 0, :].tolist(),
        "image_sha256": hashlib.sha256(np.ascontiguousarray(labels["img"]).tobytes()).hexdigest(),
        "changed_pixels": int((labels["img"] != sample()["img"]).any(-1).sum()),
    })
json.dump(out, open(sys.argv[1], "w"), indent=1)
print([(c["p"], len(c["boxes"]), c["changed_pixels"]) for c in out["cases"]])
