# Ultralytics 8.4.117's own predictor over the bccd val images: yolotrain's reference for YOLO26n.
import json, sys, torch
torch.set_num_threads(2)
from pathlib import Path
from ultralytics import YOLO
# An optional fourth argument end2end=False takes YOLO26's one-to-many branch with NMS instead.
weights, images, out = sys.argv[1:4]
extra = dict(a.split("=") for a in sys.argv[4:])
end2end = extra.get("end2end", "True") == "True"
model = YOLO(weights)
ref = {}
for r in model.predict(source=images, imgsz=320, conf=0.01, device="cpu", verbose=False, stream=True,
                       **({} if end2end else {"end2end": False})):
    b = r.boxes
    ref[Path(r.path).name] = [[*map(float, xyxy), float(c), int(k)] for xyxy, c, k in
                              zip(b.xyxy.tolist(), b.conf.tolist(), b.cls.tolist())]
json.dump({"ultralytics": "8.4.117", "weights": "bccd_yolo26n/best.pt", "imgsz": 320, "conf": 0.01,
           **({} if end2end else {"end2end": False}), "boxes": ref}, open(out, "w"), indent=None, separators=(",", ":"))
print(len(ref), sum(len(v) for v in ref.values()))
