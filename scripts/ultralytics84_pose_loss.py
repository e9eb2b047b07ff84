# Ultralytics 8.4.117's own pose losses on a fixed batch: yolotrain's reference for loss::PoseLoss
# (v8PoseLoss of yolov8n-pose with kpt_shape [5, 3] and of yolo11n-pose with COCO's [17, 3], whose
# OKS sigmas it then uses; E2ELoss(model, PoseLoss26) of yolo26n-pose with [17, 3]: the RLE term
# through the head's RealNVP, with 8.4's RLE weights; and yolov8n-pose with [5, 2], no visibility).
# The models carry scripts/ultralytics84_pose_outputs.py's formula weights (nc 2) and run in train
# mode on a formula image. Run with Ultralytics 8.4.117 importable (docs/loss-and-metrics.md):
#   python3 scripts/ultralytics84_pose_loss.py tests/unit/loss/data/ultralytics84_pose_loss.json
import json, math, os, sys
from types import SimpleNamespace

import torch
torch.set_num_threads(2)
from ultralytics.nn.tasks import PoseModel
from ultralytics.utils.loss import E2ELoss, PoseLoss26, v8PoseLoss

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ultralytics84_pose_outputs import formula, skipped  # noqa: E402  the weights' formula

out = sys.argv[1]
B, H, W, EPOCHS = 2, 160, 192, 10
b, c, y, x = torch.meshgrid(*(torch.arange(n, dtype=torch.float64) for n in (B, 3, H, W)), indexing="ij")
img = (0.5 + 0.5 * torch.sin(0.05 * x + 0.07 * y + 1.3 * c + 2.1 * b)).float()

# Boxes per image (class, normalized cx cy w h); each box's keypoints follow from it (pose_keypoints).
boxes = [[[0, 0.30, 0.35, 0.30, 0.40], [1, 0.70, 0.60, 0.25, 0.50], [0, 0.55, 0.20, 0.12, 0.10]],
         [[1, 0.50, 0.50, 0.60, 0.70], [0, 0.15, 0.80, 0.10, 0.15]]]


def pose_keypoints(box, n, dims, seed):
    """n keypoints spread over the box (some outside it), every third one invisible for dims 3."""
    _, cx, cy, w, h = box
    pts = []
    for j in range(n):
        px = cx + w * 0.6 * math.sin(1.7 * j + seed)
        py = cy + h * 0.6 * math.cos(1.1 * j + 0.5 * seed)
        v = 0.0 if (j + seed) % 3 == 0 else 2.0
        pts.append([min(max(px, 0.0), 1.0), min(max(py, 0.0), 1.0)] + ([v] if dims == 3 else []))
    return pts


def batch_of(n, dims):
    idx, cls, xywh, kpts = [], [], [], []
    for i, rows in enumerate(boxes):
        for k, r in enumerate(rows):
            idx.append(i)
            cls.append(r[0])
            xywh.append(r[1:])
            kpts.append(pose_keypoints(r, n, dims, 3 * i + k))
    return {"batch_idx": torch.tensor(idx, dtype=torch.float32), "cls": torch.tensor(cls, dtype=torch.float32).view(-1, 1),
            "bboxes": torch.tensor(xywh, dtype=torch.float32), "keypoints": torch.tensor(kpts, dtype=torch.float32)}


def model_of(yaml, kpt_shape):
    torch.manual_seed(0)
    m = PoseModel(yaml, nc=2, data_kpt_shape=kpt_shape, verbose=False)
    sd = m.state_dict()
    names = sorted(k for k in sd if not skipped(k))
    with torch.no_grad():
        for k, name in enumerate(names):
            sd[name].copy_(formula(name, sd[name], k))
    m.args = SimpleNamespace(box=7.5, cls=0.5, dfl=1.5, pose=12.0, kobj=1.0, rle=1.0, epochs=EPOCHS)
    m.train()
    return m


def figures(loss, items):
    return {"total": float(loss.sum()), "items": [float(v) for v in items.values()], "names": list(items)}


result = {"ultralytics": "8.4.117", "batch": B, "imgsz": [H, W], "epochs": EPOCHS, "boxes": boxes}
# (YOLO26-pose with 2-dim keypoints is not among them: 8.4.117's calculate_rle_loss indexes with the float
# mask torch.full_like(gt_kpt[..., 0], True) and raises IndexError; yolotrain takes every keypoint as visible.)
cases = [("yolov8n-pose.yaml", (5, 3)), ("yolo11n-pose.yaml", (17, 3)), ("yolo26n-pose.yaml", (17, 3)),
         ("yolov8n-pose.yaml", (5, 2))]
for yaml, shape in cases:
    key = f"{yaml}:{shape[0]}x{shape[1]}"
    batch = batch_of(*shape)
    m = model_of(yaml, shape)
    with torch.no_grad():
        preds = m(img)
        if m.end2end:
            crit = E2ELoss(m, PoseLoss26)
            parsed = crit.one2many.parse_output(preds)
            r = {"one2many": figures(*crit.one2many.loss(parsed["one2many"], batch)),
                 "one2one": figures(*crit.one2one.loss(parsed["one2one"], batch)),
                 "e2e": figures(*crit(preds, batch))}
        else:
            r = {"loss": figures(*v8PoseLoss(m).loss(v8PoseLoss(m).parse_output(preds), batch))}
    r["keypoints"] = batch["keypoints"].flatten().tolist()
    result[key] = r
# YOLO26n-pose [5, 3] on a 64 x 64 batch, its train-mode head outputs kept: the loss on those very tensors
# (PoseLoss26's terms alone, free of the forward's float differences, which the cls and RLE sums amplify).
key = "yolo26n-pose.yaml:5x3:given"
small = img[:, :, :64, :64].contiguous()
batch = batch_of(5, 3)
m = model_of("yolo26n-pose.yaml", (5, 3))
with torch.no_grad():
    preds = m(small)
    crit = E2ELoss(m, PoseLoss26)
    parsed = crit.one2many.parse_output(preds)
    r = {"one2many": figures(*crit.one2many.loss(parsed["one2many"], batch)),
         "one2one": figures(*crit.one2one.loss(parsed["one2one"], batch)),
         "e2e": figures(*crit(preds, batch)), "keypoints": batch["keypoints"].flatten().tolist(),
         "levels": [list(f.shape[2:]) for f in parsed["one2many"]["feats"]]}
    for branch in ("one2many", "one2one"):
        r[branch]["outputs"] = {k: {"shape": list(v.shape), "values": [float(f"{e:.9g}") for e in v.flatten().tolist()]}
                                for k, v in parsed[branch].items() if k in ("boxes", "scores", "kpts", "kpts_sigma")}
result[key] = r
json.dump(result, open(out, "w"))
print({k: {b: v[b]["items"] for b in ("loss", "one2many", "one2one", "e2e") if b in v} for k, v in result.items() if ":" in k})
