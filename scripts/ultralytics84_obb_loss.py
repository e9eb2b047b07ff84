# Ultralytics' own OBB losses on fixed head outputs: yolotrain's reference for loss::OBBLoss and
# E2EOBBLoss. 8.4.117's v8OBBLoss (yolov8n-obb: DFL, reg_max 16) and E2ELoss(model, v8OBBLoss)
# (yolo26n-obb: reg_max 1, the L1 term), and 8.3.58's three-term v8OBBLoss: its loss, RotatedBboxLoss
# and RotatedTaskAlignedAssigner.select_candidates_in_gts copied below verbatim from 8.3.58 (upstream
# 00aefd79, ultralytics/utils/loss.py and tal.py) and run on 8.4.117's other pieces, which 8.3 shares.
# The head outputs are a formula (obb_outputs below; loss test reproduces it), nc 2, three levels of an
# image of 64 x 96. Run with Ultralytics 8.4.117 importable (docs/loss-and-metrics.md):
#   python3 scripts/ultralytics84_obb_loss.py tests/unit/loss/data/ultralytics84_obb_loss.json
import json, math, sys
from types import SimpleNamespace

import torch
torch.set_num_threads(2)
from ultralytics.nn.tasks import OBBModel
from ultralytics.utils.loss import E2ELoss, v8OBBLoss, RotatedBboxLoss
from ultralytics.utils.metrics import probiou
from ultralytics.utils.ops import xywh2xyxy, xywhr2xyxyxyxy
from ultralytics.utils.tal import RotatedTaskAlignedAssigner, bbox2dist, make_anchors

out = sys.argv[1]
B, H, W, NC, EPOCHS = 2, 64, 96, 2, 10
# Boxes per image: class, normalized x y w h (x, w over the width; y, h over the height), angle (radians).
# The last of image 0 is under 2 px wide: the loss drops it.
boxes = [[[0, 0.30, 0.35, 0.30, 0.40, 0.30], [1, 0.70, 0.60, 0.25, 0.50, -0.60], [0, 0.55, 0.20, 0.40, 0.15, 1.2],
          [1, 0.10, 0.10, 0.015, 0.2, 0.0]],
         [[1, 0.50, 0.50, 0.60, 0.30, 2.2], [0, 0.15, 0.80, 0.12, 0.30, -0.7]]]


def batch():
    idx, cls, xywhr = [], [], []
    for i, rows in enumerate(boxes):
        for r in rows:
            idx.append(i), cls.append(r[0]), xywhr.append(r[1:])
    return {"batch_idx": torch.tensor(idx, dtype=torch.float32), "cls": torch.tensor(cls, dtype=torch.float32).view(-1, 1),
            "bboxes": torch.tensor(xywhr, dtype=torch.float32)}


def obb_outputs(reg_max, obb26):
    """Level l's raw output [B, 4 reg_max + NC, H/s, W/s]: 2.5 sin(0.37 i + 0.9 l + 0.3), i the flat index, in
    float64 then float32; the angle [B, 1, A]: 1.3 sin(0.23 i + 0.5) raw, OBB's (sigmoid - 0.25) pi of it."""
    feats = []
    for l, s in enumerate((8, 16, 32)):
        n = B * (4 * reg_max + NC) * (H // s) * (W // s)
        v = 2.5 * torch.sin(0.37 * torch.arange(n, dtype=torch.float64) + 0.9 * l + 0.3)
        feats.append(v.float().view(B, 4 * reg_max + NC, H // s, W // s))
    a = sum(f.shape[2] * f.shape[3] for f in feats)
    raw = (1.3 * torch.sin(0.23 * torch.arange(B * a, dtype=torch.float64) + 0.5)).float().view(B, 1, a)
    angle = raw if obb26 else (raw.sigmoid() - 0.25) * math.pi
    flat = torch.cat([f.view(B, 4 * reg_max + NC, -1) for f in feats], 2)
    boxes_, scores = flat.split((4 * reg_max, NC), 1)
    return {"boxes": boxes_, "scores": scores, "angle": angle, "feats": feats}


def model_of(yaml):
    m = OBBModel(yaml, nc=NC, verbose=False)
    m.args = SimpleNamespace(box=7.5, cls=0.5, dfl=1.5, angle=1.0, epochs=EPOCHS)
    return m


def figures(loss, items):
    items = items if isinstance(items, dict) else dict(zip(("box_loss", "cls_loss", "dfl_loss"), items))
    return {"total": float(loss.sum()), "items": [float(v) for v in items.values()], "names": list(items)}


# --- 8.3.58's v8OBBLoss.__call__ (after parsing), RotatedBboxLoss.forward and the rotated candidates
def select_candidates_83(self, xy_centers, gt_bboxes, mask_gt=None):
    corners = xywhr2xyxyxyxy(gt_bboxes)
    a, b, _, d = corners.split(1, dim=-2)
    ab = b - a
    ad = d - a
    ap = xy_centers - a
    norm_ab = (ab * ab).sum(dim=-1)
    norm_ad = (ad * ad).sum(dim=-1)
    ap_dot_ab = (ap * ab).sum(dim=-1)
    ap_dot_ad = (ap * ad).sum(dim=-1)
    return (ap_dot_ab >= 0) & (ap_dot_ab <= norm_ab) & (ap_dot_ad >= 0) & (ap_dot_ad <= norm_ad)


def rotated_bbox_loss_83(self, pred_dist, pred_bboxes, anchor_points, target_bboxes, target_scores, target_scores_sum,
                         fg_mask, *unused):
    weight = target_scores.sum(-1)[fg_mask].unsqueeze(-1)
    iou = probiou(pred_bboxes[fg_mask], target_bboxes[fg_mask])
    loss_iou = ((1.0 - iou) * weight).sum() / target_scores_sum
    target_ltrb = bbox2dist(anchor_points, xywh2xyxy(target_bboxes[..., :4]), self.dfl_loss.reg_max - 1)
    loss_dfl = self.dfl_loss(pred_dist[fg_mask].view(-1, self.dfl_loss.reg_max), target_ltrb[fg_mask]) * weight
    loss_dfl = loss_dfl.sum() / target_scores_sum
    return loss_iou, loss_dfl


def obb_loss_83(self, preds, batch):
    loss = torch.zeros(3, device=self.device)  # box, cls, dfl
    feats, pred_angle = preds["feats"], preds["angle"]
    batch_size = pred_angle.shape[0]
    pred_scores = preds["scores"].permute(0, 2, 1).contiguous()
    pred_distri = preds["boxes"].permute(0, 2, 1).contiguous()
    pred_angle = pred_angle.permute(0, 2, 1).contiguous()
    dtype = pred_scores.dtype
    imgsz = torch.tensor(feats[0].shape[2:], device=self.device, dtype=dtype) * self.stride[0]  # image size (h,w)
    anchor_points, stride_tensor = make_anchors(feats, self.stride, 0.5)
    batch_idx = batch["batch_idx"].view(-1, 1)
    targets = torch.cat((batch_idx, batch["cls"].view(-1, 1), batch["bboxes"].view(-1, 5)), 1)
    rw, rh = targets[:, 4] * imgsz[0].item(), targets[:, 5] * imgsz[1].item()
    targets = targets[(rw >= 2) & (rh >= 2)]  # filter rboxes of tiny size to stabilize training
    targets = self.preprocess(targets.to(self.device), batch_size, scale_tensor=imgsz[[1, 0, 1, 0]])
    gt_labels, gt_bboxes = targets.split((1, 5), 2)  # cls, xywhr
    mask_gt = gt_bboxes.sum(2, keepdim=True).gt_(0.0)
    pred_bboxes = self.bbox_decode(anchor_points, pred_distri, pred_angle)  # xyxy, (b, h*w, 4)
    bboxes_for_assigner = pred_bboxes.clone().detach()
    bboxes_for_assigner[..., :4] *= stride_tensor
    _, target_bboxes, target_scores, fg_mask, _ = self.assigner(
        pred_scores.detach().sigmoid(), bboxes_for_assigner.type(gt_bboxes.dtype), anchor_points * stride_tensor,
        gt_labels, gt_bboxes, mask_gt)
    target_scores_sum = max(target_scores.sum(), 1)
    loss[1] = self.bce(pred_scores, target_scores.to(dtype)).sum() / target_scores_sum  # BCE
    if fg_mask.sum():
        target_bboxes[..., :4] /= stride_tensor
        loss[0], loss[2] = self.bbox_loss(pred_distri, pred_bboxes, anchor_points, target_bboxes, target_scores,
                                          target_scores_sum, fg_mask)
    else:
        loss[0] += (pred_angle * 0).sum()
    loss[0] *= self.hyp.box  # box gain
    loss[1] *= self.hyp.cls  # cls gain
    loss[2] *= self.hyp.dfl  # dfl gain
    return loss.sum() * batch_size, loss.detach()  # loss(box, cls, dfl)


result = {"ultralytics": "8.4.117", "batch": B, "imgsz": [H, W], "nc": NC, "epochs": EPOCHS, "boxes": boxes}
b = batch()
with torch.no_grad():
    crit = v8OBBLoss(model_of("yolov8n-obb.yaml"))
    result["yolov8n-obb:8.4"] = figures(*crit.loss(obb_outputs(16, False), b))
    crit = E2ELoss(model_of("yolo26n-obb.yaml"), v8OBBLoss)
    preds = obb_outputs(1, True)
    result["yolo26n-obb:8.4"] = {"one2many": figures(*crit.one2many.loss(preds, b)),
                                 "one2one": figures(*crit.one2one.loss(preds, b)),
                                 "o2m": crit.o2m, "o2o": crit.o2o}
    RotatedTaskAlignedAssigner.select_candidates_in_gts = select_candidates_83
    RotatedBboxLoss.forward = rotated_bbox_loss_83
    crit = v8OBBLoss(model_of("yolov8n-obb.yaml"))
    result["yolov8n-obb:8.3"] = figures(*obb_loss_83(crit, obb_outputs(16, False), b))
json.dump(result, open(out, "w"), indent=1)
print({k: v for k, v in result.items() if ":" in k})
