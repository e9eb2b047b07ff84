# Ultralytics 8.4.117's own ClassificationPredictor on images, as JSON for yolotrain's Predictor test
# (tests/unit/predict/classify_predict_test.cpp): each image's class probabilities and top 5 at each
# imgsz. Run with Ultralytics 8.4.117 importable (../shared/tools/ultralytics84/README.md):
#   python3 scripts/ultralytics84_cls_predict.py BEST.pt OUT.json IMGSZ[,IMGSZ...] IMAGE...
# The images are named in the JSON by file name; the checkpoint by its SHA-256.
import hashlib, json, sys
from pathlib import Path

import torch
torch.set_num_threads(2)
from ultralytics import YOLO

weights, out, sizes, images = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3].split(",")], sys.argv[4:]
model = YOLO(weights)
result = {"ultralytics": "8.4.117", "checkpoint_sha256": hashlib.sha256(open(weights, "rb").read()).hexdigest(),
          "images": {}}
for image in images:
    per_size = {}
    for imgsz in sizes:
        r = model.predict(image, imgsz=imgsz, device="cpu", verbose=False)[0]
        per_size[str(imgsz)] = {"probs": [float(p) for p in r.probs.data.tolist()], "top5": list(r.probs.top5)}
    result["images"][Path(image).name] = per_size
json.dump(result, open(out, "w"), indent=1)
print(len(images), "images,", sizes)
