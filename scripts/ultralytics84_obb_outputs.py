# Ultralytics 8.4.117's own OBBModel (yolov8n-obb, yolo11n-obb, yolo26n-obb, nc 2) with every weight set
# by a formula (the pose script's: tests/support/formula_weights.hpp), run in eval mode on a formula
# input: the decoded output (OBB._inference: rotated boxes, scores, angle; YOLO26-obb's end-to-end
# top-k rows) and each branch's angles, written as JSON for yolotrain's test. Run with Ultralytics
# 8.4.117 importable (docs/nn.md, "Checked against Ultralytics"):
#   python3 scripts/ultralytics84_obb_outputs.py tests/unit/nn/data/ultralytics84_obb_outputs.json
import json, sys

import torch
from ultralytics.nn.tasks import OBBModel

from ultralytics84_pose_outputs import set_formula_weights  # the formula weights, one definition (this folder)


def run(yaml):
    torch.manual_seed(0)
    m = OBBModel(yaml, nc=2, verbose=False)
    names = set_formula_weights(m)
    m.eval()
    x = torch.sin(0.11 * torch.arange(3 * 64 * 96, dtype=torch.float64)).abs().to(torch.float32).view(1, 3, 64, 96)
    with torch.no_grad():
        y, raw = m(x)
    out = {"inference": y, "angle": raw["one2many"]["angle"] if "one2many" in raw else raw["angle"]}
    if "one2one" in raw:
        out["one2one_angle"] = raw["one2one"]["angle"]
    layers = sum(1 for _ in m.modules() if not list(_.children()))
    return {k: {"shape": list(v.shape), "values": [float(f"{e:.8g}") for e in v.reshape(-1).tolist()]}
            for k, v in out.items()} | {"tensors_set": len(names), "head": type(m.model[-1]).__name__, "layers": layers}


if __name__ == "__main__":
    result = {"ultralytics": "8.4.117", "input": "sin(0.11 * i) abs, [1, 3, 64, 96]"}
    for yaml in ["yolov8n-obb.yaml", "yolo11n-obb.yaml", "yolo26n-obb.yaml"]:
        result[yaml] = run(yaml)
    with open(sys.argv[1], "w") as f:
        json.dump(result, f)
