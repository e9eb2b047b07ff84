# Ultralytics 8.4.117's MuSGD (optim/muon.py), two steps on fixed parameters and gradients:
# yolotrain's reference for its MuSGD (src/engine/musgd.cpp). Groups as Ultralytics' trainer
# builds them for optimizer=MuSGD (muon=0.2, sgd=1.0, Nesterov): a Muon+SGD group of matrices and
# conv filters with decay, an SGD group of vectors without. Run with Ultralytics 8.4.117 importable:
#   python3 scripts/ultralytics84_musgd.py tests/unit/engine/data/ultralytics84_musgd.json
import json, sys

import torch
from ultralytics.optim.muon import MuSGD

SHAPES = {"conv1": [16, 8, 3, 3], "conv2": [32, 16, 1, 1], "linear": [10, 24], "tall": [40, 12],
          "bias": [16], "bn": [16]}
MUON = ["conv1", "conv2", "linear", "tall"]


def values(shape, k):  # sin(0.37 i + k) / 10 in float64, stored as float32
    n = 1
    for s in shape:
        n *= s
    return (torch.sin(torch.arange(n, dtype=torch.float64) * 0.37 + k) * 0.1).float().reshape(shape)


params = {name: torch.nn.Parameter(values(shape, i)) for i, (name, shape) in enumerate(SHAPES.items())}
opt = MuSGD([{"params": [params[n] for n in MUON], "lr": 0.03, "momentum": 0.9, "nesterov": True,
              "weight_decay": 5e-4, "use_muon": True},
             {"params": [params[n] for n in SHAPES if n not in MUON], "lr": 0.01, "momentum": 0.9,
              "nesterov": True, "weight_decay": 0.0, "use_muon": False}], muon=0.2, sgd=1.0)
steps = []
for step in range(2):
    for i, (name, p) in enumerate(params.items()):
        p.grad = values(SHAPES[name], i + 10 * (step + 1)) * (step + 1)
    opt.step()
    steps.append({name: p.detach().flatten().tolist() for name, p in params.items()})
json.dump({"ultralytics": "8.4.117", "torch": torch.__version__, "shapes": SHAPES, "muon": MUON, "steps": steps},
          open(sys.argv[1], "w"))
print("ok", torch.__version__)
