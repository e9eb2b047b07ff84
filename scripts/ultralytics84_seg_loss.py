# Ultralytics 8.4.117's own segmentation losses and masks on a fixed batch: yolotrain's reference for
# loss::SegmentationLoss (v8SegmentationLoss of the coco128seg YOLOv8n-seg and YOLO11n-seg best.pt,
# E2ELoss(model, v8SegmentationLoss) with the semantic term of YOLO26n-seg) and for the masks the
# data pipeline builds (polygons2masks_overlap / polygons2masks, mask_ratio 4, as Format does).
# Run with Ultralytics 8.4.117 importable (docs/loss-and-metrics.md, "Ultralytics 8.4's losses"):
#   python3 scripts/ultralytics84_seg_loss.py ../shared/weights/ultralytics tests/unit/loss/data/ultralytics84_seg_loss.json
import json, math, sys
from types import SimpleNamespace

import numpy as np
import torch
torch.set_num_threads(2)
from ultralytics.data.utils import polygons2masks, polygons2masks_overlap
from ultralytics.utils.loss import E2ELoss, v8SegmentationLoss
from ultralytics.utils.ops import segments2boxes

weights_dir, out = sys.argv[1:3]
B, H, W, RATIO, EPOCHS = 2, 320, 320, 4, 10
b, c, y, x = torch.meshgrid(*(torch.arange(n, dtype=torch.float64) for n in (B, 3, H, W)), indexing="ij")
img = (0.5 + 0.5 * torch.sin(0.05 * x + 0.07 * y + 1.3 * c + 2.1 * b)).float()


def ellipse(cx, cy, rx, ry, n=24):
    return [v for k in range(n) for v in (cx + rx * math.cos(2 * math.pi * k / n), cy + ry * math.sin(2 * math.pi * k / n))]


# Polygons per image (class, normalized x y pairs); overlapping ones so the overlap mask's order matters.
polygons = [
    [[0, [0.2, 0.2, 0.7, 0.25, 0.6, 0.7, 0.15, 0.6]], [5, ellipse(0.5, 0.5, 0.2, 0.12)],
     [2, [0.70, 0.70, 0.95, 0.72, 0.80, 0.95]], [7, ellipse(0.3, 0.8, 0.03, 0.025, 12)]],
    [[1, ellipse(0.4, 0.45, 0.3, 0.25, 32)], [3, [0.55, 0.1, 0.9, 0.1, 0.9, 0.3, 0.55, 0.3]],
     [0, [0.1, 0.75, 0.2, 0.9, 0.05, 0.95]]],
]


def batch_of(overlap):
    """Format._format_segments per image (pixels, mask_ratio 4), then collate: masks, boxes, classes."""
    idx, cls, boxes, masks, sem = [], [], [], [], []
    for i, rows in enumerate(polygons):
        segs = [(np.array(p, dtype=np.float32).reshape(-1, 2) * np.array([W, H], dtype=np.float32)) for _, p in rows]
        k = np.array([r[0] for r in rows], dtype=np.float32)
        if overlap:
            m, order = polygons2masks_overlap((H, W), segs, downsample_ratio=RATIO)
            m = torch.from_numpy(m[None])
            segs, k = [segs[j] for j in order], k[order]
            kt = torch.from_numpy(k)
            sem.append(kt[m[0].long() - 1].float())
        else:
            m = torch.from_numpy(polygons2masks((H, W), segs, color=1, downsample_ratio=RATIO))
            kt = torch.from_numpy(k)
            s = (m * kt[:, None, None]).max(0).values
            over = m.sum(dim=0) > 1
            if over.any():
                wts = m.sum(axis=(1, 2))
                wm = m * wts[:, None, None]
                wm[m == 0] = wts.max() + 1
                s[over] = kt[wm.argmin(dim=0)[over]]
            sem.append(s.float())
        xywh = segments2boxes(segs) / np.array([W, H, W, H], dtype=np.float32)
        idx += [i] * len(segs)
        cls += k.tolist()
        boxes.append(torch.from_numpy(xywh))
        masks.append(m)
    return {"batch_idx": torch.tensor(idx, dtype=torch.float32), "cls": torch.tensor(cls).view(-1, 1),
            "bboxes": torch.cat(boxes), "masks": torch.cat(masks) if not overlap else torch.cat(masks, 0),
            "sem_masks": torch.stack(sem)}


def load(name, overlap):
    ckpt = torch.load(f"{weights_dir}/{name}/best.pt", map_location="cpu", weights_only=False)
    model = (ckpt.get("ema") or ckpt["model"]).float()
    model.args = SimpleNamespace(box=7.5, cls=0.5, dfl=1.5, epochs=EPOCHS, overlap_mask=overlap)
    model.train()
    return model


def figures(loss, items):
    return {"total": float(loss.sum()), "items": [float(v) for v in items.values()], "names": list(items)}


result = {"ultralytics": "8.4.117", "batch": B, "imgsz": [H, W], "mask_ratio": RATIO, "epochs": EPOCHS,
          "polygons": polygons}
for overlap in (True, False):
    key = "overlap" if overlap else "separate"
    batch = batch_of(overlap)
    result[key] = {"batch_idx": batch["batch_idx"].tolist(), "cls": batch["cls"].view(-1).tolist(),
                   "bboxes": batch["bboxes"].tolist(), "masks_shape": list(batch["masks"].shape),
                   "masks": batch["masks"].flatten().int().tolist(), "sem_masks": batch["sem_masks"].flatten().int().tolist()}
    with torch.no_grad():
        for name in ("coco128seg_yolov8n-seg", "coco128seg_yolo11n-seg"):
            m = load(name, overlap)
            result[key][name] = figures(*v8SegmentationLoss(m).loss(m(img), batch))
        m = load("coco128seg_yolo26n-seg", overlap)
        preds = m(img)
        crit = E2ELoss(m, v8SegmentationLoss)
        result[key]["coco128seg_yolo26n-seg"] = {
            "one2many": figures(*crit.one2many.loss(preds["one2many"], batch)),
            "one2one": figures(*crit.one2one.loss(preds["one2one"], batch)),
            "e2e": figures(*crit(preds, batch))}
json.dump(result, open(out, "w"))
print({k: {n: v for n, v in r.items() if n.startswith("coco")} for k, r in result.items() if k in ("overlap", "separate")})
