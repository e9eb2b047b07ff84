# Compares `yolo_train predict ... save_txt=true save_conf=true` of an OBB model with Ultralytics
# 8.4.117's own OBBPredictor on the same images (a check to run by hand, with Ultralytics importable:
# ../shared/tools/ultralytics84/README.md):
#   yolo_train predict model=W source=DIR imgsz=N conf=0.01 save_txt=true save_conf=true project=P name=yt
#   python3 scripts/ultralytics84_obb_predict.py W DIR N P/yt/labels
# Every detection of each image is matched with Ultralytics' (same class, nearest centre); the largest
# differences are printed, corners in pixels of the original image and confidence; exit 1 when a corner
# differs by more than 0.1 px, a confidence by more than 1e-3, or the detections are not the same set.
import sys
from pathlib import Path

import torch
torch.set_num_threads(2)
from ultralytics import YOLO

weights, source, imgsz, labels = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
model = YOLO(weights)
worst = {"corner px": 0.0, "conf": 0.0}
unmatched = detections = 0
for image in sorted(p for p in source.iterdir() if p.suffix.lower() in {".jpg", ".jpeg", ".png"}):
    r = model.predict(str(image), imgsz=imgsz, conf=0.01, device="cpu", verbose=False)[0]
    h, w = r.orig_shape
    corners = r.obb.xyxyxyxy.cpu()
    theirs = [(int(r.obb.cls[j]), corners[j].reshape(-1).tolist(), float(r.obb.conf[j])) for j in range(len(r.obb))]
    mine = []
    txt = labels / (image.stem + ".txt")
    for line in (txt.read_text().splitlines() if txt.exists() else []):
        v = [float(x) for x in line.split()]
        mine.append((int(v[0]), [c * (w if i % 2 == 0 else h) for i, c in enumerate(v[1:9])], v[9]))
    detections += len(theirs)
    if len(mine) != len(theirs):
        unmatched += abs(len(mine) - len(theirs))
    centre = lambda k: (sum(k[0::2]) / 4, sum(k[1::2]) / 4)
    for c, k, conf in mine:
        same = [t for t in theirs if t[0] == c]
        if not same:
            unmatched += 1
            continue
        t = min(same, key=lambda t: (centre(t[1])[0] - centre(k)[0]) ** 2 + (centre(t[1])[1] - centre(k)[1]) ** 2)
        worst["corner px"] = max(worst["corner px"], max(abs(a - b) for a, b in zip(k, t[1])))
        worst["conf"] = max(worst["conf"], abs(conf - t[2]))
print({k: round(v, 5) for k, v in worst.items()}, "detections", detections, "unmatched", unmatched)
sys.exit(0 if unmatched == 0 and worst["corner px"] <= 0.1 and worst["conf"] <= 1e-3 else 1)
