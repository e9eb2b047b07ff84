# Ultralytics 8.4.117's own PoseModel (yolov8n-pose, yolo11n-pose, yolo26n-pose, nc 2, kpt_shape
# [5, 3] as a dataset would give it) with every weight set by a formula (pose_formula_weights: the
# same in tests/unit/nn/pose_test.cpp), run in eval mode on a formula input: the decoded output
# (Pose._inference / Pose26's end-to-end top-k) and the raw keypoints of each branch, written as
# JSON for yolotrain's test. Run with Ultralytics 8.4.117 importable (docs/nn.md, "Checked against
# Ultralytics"):
#   python3 scripts/ultralytics84_pose_outputs.py tests/unit/nn/data/ultralytics84_pose_outputs.json
import json, math, sys

import torch
from ultralytics.nn.tasks import PoseModel


def formula(name, t, k):
    """The value every tensor gets: a sine over its flat index, scaled to its fan-in."""
    n = t.numel()
    i = torch.arange(n, dtype=torch.float64)
    s = torch.sin(0.37 * i + 1.3 * k)
    if name.endswith("running_var"):
        v = 1 + 0.5 * s.abs()
    elif t.dim() >= 2:
        v = s * math.sqrt(3.0 / (n // t.shape[0]))
    elif name.endswith("bn.weight"):
        v = 1 + 0.1 * s
    else:
        v = 0.1 * s
    return v.to(torch.float32).view(t.shape)


def skipped(name):
    return "dfl" in name or name.endswith("num_batches_tracked") or ".flow_model." in name and name.split(".")[-1] in (
        "loc", "cov", "mask")


def set_formula_weights(m):
    """Every tensor of `m` (by sorted name, the skipped ones left) set by formula(); their names."""
    sd = m.state_dict()
    names = sorted(n for n in sd if not skipped(n))
    with torch.no_grad():
        for k, n in enumerate(names):
            sd[n].copy_(formula(n, sd[n], k))
    return names


def run(yaml):
    torch.manual_seed(0)
    m = PoseModel(yaml, nc=2, data_kpt_shape=(5, 3), verbose=False)
    names = set_formula_weights(m)
    m.eval()
    x = torch.sin(0.11 * torch.arange(3 * 64 * 96, dtype=torch.float64)).abs().to(torch.float32).view(1, 3, 64, 96)
    with torch.no_grad():
        y, raw = m(x)
    head = m.model[-1]
    out = {"inference": y, "keypoints": raw["one2many"]["kpts"] if isinstance(raw, dict) and "one2many" in raw
           else raw["kpts"]}
    if isinstance(raw, dict) and "one2one" in raw:
        out["one2one_keypoints"] = raw["one2one"]["kpts"]
    return {k: {"shape": list(v.shape), "values": [float(f"{e:.8g}") for e in v.reshape(-1).tolist()]}
            for k, v in out.items()} | {
        "tensors_set": len(names), "head": type(head).__name__}


if __name__ == "__main__":
    result = {"ultralytics": "8.4.117", "input": "sin(0.11 * i) abs, [1, 3, 64, 96]"}
    for yaml in ["yolov8n-pose.yaml", "yolo11n-pose.yaml", "yolo26n-pose.yaml"]:
        result[yaml] = run(yaml)
    with open(sys.argv[1], "w") as f:
        json.dump(result, f)
