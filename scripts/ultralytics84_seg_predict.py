# Ultralytics 8.4.117's own SegmentationPredictor over a few images: yolotrain's reference for
# predicted masks (tests/unit/predict/segment_predict_test.cpp). Run with Ultralytics importable
# (../shared/tools/ultralytics84/README.md):
#   python3 scripts/ultralytics84_seg_predict.py WEIGHTS.pt OUT.json IMGSZ RETINA IMAGE...
# Per detection: xyxy, conf, cls, its outline (masks.xy) and its mask in the original image's pixels
# as Annotator.masks makes it (ops.scale_masks of masks.data, > 0.5; retina: masks.data itself),
# run-length encoded over the flattened mask: [gap, length, gap, length, ...], each gap counted from
# the previous run's end.
import json, sys, torch
torch.set_num_threads(2)
from pathlib import Path
from ultralytics import YOLO
from ultralytics.utils import ops

weights, out, imgsz, retina = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "True"
images = sys.argv[5:]


def rle(mask):
    flat = mask.flatten().to(torch.uint8).tolist()
    runs, start, end = [], None, 0
    for i, v in enumerate(flat + [0]):
        if v and start is None:
            start = i
        elif not v and start is not None:
            runs += [start - end, i - start]
            start, end = None, i
    return runs


model = YOLO(weights)
ref = []
for image in images:  # one at a time: a list would be one batch, letterboxed to the full imgsz
    r = model.predict(source=image, imgsz=imgsz, conf=0.01, device="cpu", verbose=False, retina_masks=retina)[0]
    dets = []
    if r.masks is not None:
        data = r.masks.data.float()
        full = data if retina else ops.scale_masks(data[None], r.orig_shape[:2])[0]
        for xyxy, c, k, m, xy in zip(r.boxes.xyxy.tolist(), r.boxes.conf.tolist(), r.boxes.cls.tolist(),
                                     full > 0.5, r.masks.xy):
            dets.append({"xyxy": [round(v, 4) for v in xyxy], "conf": round(c, 6), "cls": int(k), "mask": rle(m), "xy": [round(v, 3) for v in xy.reshape(-1).tolist()]})
    ref.append({"file": Path(image).name, "shape": list(r.orig_shape[:2]), "detections": dets})
json.dump({"ultralytics": "8.4.117", "weights": weights, "imgsz": imgsz, "conf": 0.01, "retina_masks": retina,
           "images": ref}, open(out, "w"), separators=(",", ":"))
print(len(ref), sum(len(v["detections"]) for v in ref))
