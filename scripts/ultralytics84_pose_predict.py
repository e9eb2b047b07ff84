# Compares `yolo_train predict ... save_txt=true save_conf=true` of a pose model with Ultralytics
# 8.4.117's own PosePredictor on the same images (a check to run by hand, with Ultralytics importable:
# ../shared/tools/ultralytics84/README.md):
#   yolo_train predict model=W source=DIR imgsz=N conf=0.01 save_txt=true save_conf=true project=P name=yt
#   python3 scripts/ultralytics84_pose_predict.py W DIR N P/yt/labels
# Every detection of each image is matched with Ultralytics' (same class, nearest box centre); the
# largest differences are printed in pixels of the original image (boxes, keypoints) and in
# confidence; exit 1 when a box or keypoint differs by more than 0.1 px, a visibility or confidence
# by more than 1e-3, or the detections are not the same set.
import sys
from pathlib import Path

import torch
torch.set_num_threads(2)
from ultralytics import YOLO

weights, source, imgsz, labels = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
model = YOLO(weights)
worst = {"box px": 0.0, "keypoint px": 0.0, "visibility": 0.0, "conf": 0.0}
unmatched = 0
for image in sorted(p for p in source.iterdir() if p.suffix.lower() in {".jpg", ".jpeg", ".png"}):
    r = model.predict(str(image), imgsz=imgsz, conf=0.01, device="cpu", verbose=False)[0]
    h, w = r.orig_shape
    theirs = []
    kd = r.keypoints.data.cpu()
    for j in range(len(r.boxes)):
        theirs.append((int(r.boxes.cls[j]), r.boxes.xywh[j].tolist(), kd[j].tolist(), float(r.boxes.conf[j])))
    mine = []
    txt = labels / (image.stem + ".txt")
    for line in (txt.read_text().splitlines() if txt.exists() else []):
        v = [float(x) for x in line.split()]
        k = v[5:-1]
        dims = kd.shape[-1]
        pts = [[k[i] * w, k[i + 1] * h] + ([k[i + 2]] if dims == 3 else []) for i in range(0, len(k), dims)]
        mine.append((int(v[0]), [v[1] * w, v[2] * h, v[3] * w, v[4] * h], pts, v[-1]))
    if len(mine) != len(theirs):
        unmatched += abs(len(mine) - len(theirs))
    for c, box, pts, conf in mine:
        same = [t for t in theirs if t[0] == c]
        if not same:
            unmatched += 1
            continue
        t = min(same, key=lambda t: (t[1][0] - box[0]) ** 2 + (t[1][1] - box[1]) ** 2)
        worst["box px"] = max(worst["box px"], max(abs(a - b) for a, b in zip(box, t[1])))
        for p, q in zip(pts, t[2]):
            worst["keypoint px"] = max(worst["keypoint px"], abs(p[0] - q[0]), abs(p[1] - q[1]))
            if len(p) == 3:
                worst["visibility"] = max(worst["visibility"], abs(p[2] - q[2]))
        worst["conf"] = max(worst["conf"], abs(conf - t[3]))
print({k: round(v, 5) for k, v in worst.items()}, "unmatched", unmatched)
ok = unmatched == 0 and worst["box px"] <= 0.1 and worst["keypoint px"] <= 0.1 and worst["visibility"] <= 1e-3 \
    and worst["conf"] <= 1e-3
sys.exit(0 if ok else 1)
