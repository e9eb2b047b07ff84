# Ultralytics 8.4.117's own losses on a fixed batch: yolotrain's reference for E2ELoss (YOLO26n,
# one-to-many + one-to-one, with its per-epoch weights), the L1 term of reg_max 1, and 8.4's
# v8DetectionLoss with STAL (YOLO11n), with and without class weights (cls_pw: the weights made by
# its DetectionTrainer's own compute_class_weights from fixed counts). Run with Ultralytics 8.4.117 importable (see
# docs/loss-and-metrics.md, "Ultralytics 8.4's losses"):
#   python3 scripts/ultralytics84_loss.py ../shared/weights/ultralytics tests/unit/loss/data/ultralytics84_loss.json
import json, math, sys

import numpy as np
from types import SimpleNamespace

import torch
torch.set_num_threads(2)
from ultralytics.models.yolo.detect.train import DetectionTrainer
from ultralytics.utils.loss import E2ELoss, v8DetectionLoss

weights_dir, out = sys.argv[1:3]
B, H, W, EPOCHS = 2, 320, 320, 10
# The image: 0.5 + 0.5 sin(0.05 x + 0.07 y + 1.3 c + 2.1 b), computed in float64, stored as float32.
b, c, y, x = torch.meshgrid(*(torch.arange(n, dtype=torch.float64) for n in (B, 3, H, W)), indexing="ij")
img = (0.5 + 0.5 * torch.sin(0.05 * x + 0.07 * y + 1.3 * c + 2.1 * b)).float()
# Boxes (image, class, normalized xywh): large, medium, and some with a side below 8 px (STAL's
# case; the thin ones hold no anchor centre (4 + 8k px) unless STAL widens them to 16 px).
targets = [
    [0, 0, 0.50, 0.50, 0.40, 0.30], [0, 1, 0.20, 0.30, 0.10, 0.12], [0, 2, 0.71, 0.26, 0.018, 0.022],
    [0, 1, 0.33, 0.80, 0.05, 0.02], [0, 2, 0.725, 0.5, 0.01875, 0.35], [1, 2, 0.60, 0.55, 0.25, 0.45],
    [1, 0, 0.15, 0.85, 0.015, 0.015], [1, 1, 0.85, 0.15, 0.12, 0.08], [1, 0, 0.3, 0.4, 0.35, 0.0175],
]
t = torch.tensor(targets)
batch = {"batch_idx": t[:, 0], "cls": t[:, 1:2], "bboxes": t[:, 2:6]}


def load(name):
    ckpt = torch.load(f"{weights_dir}/{name}/best.pt", map_location="cpu", weights_only=False)
    model = (ckpt.get("ema") or ckpt["model"]).float()
    model.args = SimpleNamespace(box=7.5, cls=0.5, dfl=1.5, epochs=EPOCHS)
    model.train()
    return model


def figures(loss, items):
    return {"total": float(loss.sum()), "items": [float(v) for v in items.values()], "names": list(items)}


result = {"ultralytics": "8.4.117", "batch": B, "imgsz": [H, W], "epochs": EPOCHS, "targets": targets}
with torch.no_grad():
    m = load("bccd_yolo26n")
    preds = m(img)
    crit = E2ELoss(m)
    e2e = {"one2many": figures(*crit.one2many.loss(preds["one2many"], batch)),
           "one2one": figures(*crit.one2one.loss(preds["one2one"], batch)), "updates": []}
    for u in range(0, EPOCHS + 2):
        loss, items = crit(preds, batch)
        e2e["updates"].append({"updates": u, "o2m": crit.o2m, "o2o": crit.o2o, **figures(loss, items)})
        crit.update()
    result["yolo26n_e2e"] = e2e
    m = load("bccd_yolo11n")
    result["yolo11n_v8_stal"] = figures(*v8DetectionLoss(m).loss(m(img), batch))
    # cls_pw: DetectionTrainer.compute_class_weights on fixed counts (a class with none among them),
    # normalised as set_class_weights does, then the loss of a model carrying them.
    counts, power = [412, 0, 57], 0.5
    trainer = SimpleNamespace(args=SimpleNamespace(cls_pw=power))
    w = DetectionTrainer.compute_class_weights(trainer, np.array(counts, dtype=np.float32))
    w = w / w.mean()
    m.class_weights = torch.from_numpy(w)
    result["class_weights"] = {"counts": counts, "power": power, "weights": [float(v) for v in w]}
    result["yolo11n_v8_stal_class_weights"] = figures(*v8DetectionLoss(m).loss(m(img), batch))
json.dump(result, open(out, "w"), indent=1)
print(json.dumps(result)[:1500])
