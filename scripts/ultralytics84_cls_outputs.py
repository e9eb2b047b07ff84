# Ultralytics 8.4.117's own ClassificationModel (yolov8n-cls, yolo11n-cls, yolo26n-cls, nc 3 as a dataset
# would give it) with every weight set by a formula (set_formula_weights: tests/support/formula_weights.hpp,
# the same formula the pose test uses), run on a formula input of two images (the second dimmer, its
# left half lifted): in eval mode the softmax
# Classify returns ("probs") and the raw linear output beside it ("logits"), then in train mode, where
# BatchNorm uses the batch's statistics and Dropout has p=0, the raw linear output ("train_logits"),
# written as JSON for yolotrain's test. Run with Ultralytics 8.4.117 importable (docs/nn.md, "Checked
# against Ultralytics"):
#   python3 scripts/ultralytics84_cls_outputs.py tests/unit/nn/data/ultralytics84_cls_outputs.json
import json, sys

import torch
from ultralytics.nn.tasks import ClassificationModel

from ultralytics84_pose_outputs import set_formula_weights  # the formula weights, one definition (this folder)


def run(yaml):
    torch.manual_seed(0)
    m = ClassificationModel(yaml, nc=3, verbose=False)
    names = set_formula_weights(m)
    i = torch.arange(2 * 3 * 64 * 64, dtype=torch.float64)
    x = torch.sin(0.11 * i).abs().to(torch.float32).view(2, 3, 64, 64)
    x[1] = x[1] * 0.25 + 0.5 * (torch.arange(64) < 32)  # a dimmer second image, its left half lifted
    m.eval()
    with torch.no_grad():
        probs, logits = m(x.clone())  # eval Classify returns (softmax, raw linear output)
    m.train()  # BatchNorm uses batch statistics (and updates its running stats, after the eval outputs are taken)
    with torch.no_grad():
        train_logits = m(x.clone())  # train Classify returns the raw linear output only
    head = m.model[-1]
    out = {"probs": probs, "logits": logits, "train_logits": train_logits}
    return {k: {"shape": list(v.shape), "values": [float(f"{e:.8g}") for e in v.reshape(-1).tolist()]}
            for k, v in out.items()} | {
        "tensors_set": len(names), "head": type(head).__name__,
        "layers": sum(1 for _ in m.modules() if not list(_.children()))}  # 8.4's summary: the leaves


if __name__ == "__main__":
    result = {"ultralytics": "8.4.117", "input": "sin(0.11 * i) abs, [2, 3, 64, 64]; x[1] = x[1] * 0.25 + 0.5 * (column < 32)"}
    for yaml in ["yolov8n-cls.yaml", "yolo11n-cls.yaml", "yolo26n-cls.yaml"]:
        result[yaml] = run(yaml)
    with open(sys.argv[1], "w") as f:
        json.dump(result, f)
