# Ultralytics 8.4.117's own oriented-box overlap and NMS on seeded boxes, written with the boxes as JSON
# for yolotrain's test (tests/unit/metrics/obb_test.cpp): batch_probiou, probiou (plain, CIoU, with a
# floor), the rotated NMS (TorchNMS.fast_nms with batch_probiou, as non_max_suppression calls it) and
# non_max_suppression(rotated=True) of an OBB head's output.
# Run with Ultralytics 8.4.117 importable (../shared/tools/ultralytics84/README.md):
#   python3 scripts/ultralytics84_obb_metrics.py tests/unit/metrics/data/ultralytics84_obb_metrics.json
import json, math, sys

import torch
from ultralytics.utils.metrics import batch_probiou, probiou
from ultralytics.utils.nms import TorchNMS, non_max_suppression


def boxes(n, g):
    xy = torch.rand(n, 2, generator=g, dtype=torch.float64) * 100
    wh = torch.rand(n, 2, generator=g, dtype=torch.float64) * 40 + 2
    r = (torch.rand(n, 1, generator=g, dtype=torch.float64) - 0.25) * math.pi
    return torch.cat([xy, wh, r], 1).float()


def values(t):
    return {"shape": list(t.shape), "values": [float(f"{v:.9g}") for v in t.reshape(-1).tolist()]}


g = torch.Generator().manual_seed(0)
a, b = boxes(12, g), boxes(9, g)
c = a[:9] + torch.tensor([1.0, -2.0, 3.0, 1.0, 0.2]) * torch.rand(9, 1, generator=g)  # near a's first nine
crowd = boxes(300, g) * torch.tensor([0.3, 0.3, 1.0, 1.0, 1.0])  # crowded: many overlaps
scores = torch.rand(300, generator=g)
result = {
    "ultralytics": "8.4.117", "a": values(a), "b": values(b), "c": values(c), "crowd": values(crowd),
    "scores": values(scores), "batch_probiou": values(batch_probiou(a, b)),
    "probiou": values(probiou(a[:9], c)), "probiou_ciou": values(probiou(a[:9], c, CIoU=True)),
    "probiou_floor": values(probiou(a[:9], c, floor=1.0)),
    "nms_05": TorchNMS.fast_nms(crowd, scores, 0.5, iou_func=batch_probiou).tolist(),
    "nms_07": TorchNMS.fast_nms(crowd, scores, 0.7, iou_func=batch_probiou).tolist(),
}
# An OBB head's output [2, 4 + 3 + 1, 200] (xywh, 3 class scores, angle) through non_max_suppression with
# rotated=True, as OBBValidator (multi-label, conf 0.01) and OBBPredictor (best class, conf 0.25) call it.
head = torch.cat([boxes(400, g).view(2, 200, 5)[..., :4] * torch.tensor([1.0, 1.0, 0.5, 0.5]),
                  torch.rand(2, 200, 3, generator=g) ** 3, boxes(400, g).view(2, 200, 5)[..., 4:]], -1).transpose(1, 2)
result["head"] = values(head.contiguous())
for name, conf, multi in (("nms_val", 0.01, True), ("nms_predict", 0.25, False)):
    out = non_max_suppression(head.clone(), conf, 0.7, multi_label=multi, nc=3, rotated=True)
    result[name] = [values(o) for o in out]
json.dump(result, open(sys.argv[1], "w"))
print([len(o["values"]) // 7 for o in result["nms_val"]], [len(o["values"]) // 7 for o in result["nms_predict"]])
print(len(result["nms_05"]), len(result["nms_07"]), "kept of 300")
