# Ultralytics 8.4.117's warm-up, step by step: the learning rate of each parameter group, the
# momentum and `accumulate` each global iteration trains with, and whether it steps the optimizer.
# Its own BaseTrainer._get_warmup_iterations, build_optimizer (groups weight, bn, bias) and
# _setup_scheduler (LambdaLR, stepped at every epoch's start) on a tiny Conv+BN model; the loop's
# warm-up lines (engine/trainer.py:466-484, 542-544) transcribed, as nothing else exposes them.
# Run with Ultralytics 8.4.117 importable (../shared/tools/ultralytics84/README.md):
#   python3 scripts/ultralytics84_warmup.py > tests/unit/engine/data/warmup84.tsv
import warnings
from types import SimpleNamespace

import numpy as np
import torch
from ultralytics.engine.trainer import BaseTrainer
from ultralytics.utils import LOGGER

LOGGER.setLevel(40)  # the optimizer's line would land in the table
warnings.simplefilter("ignore")  # as the trainer: 'lr_scheduler.step() before optimizer.step()'

CASES = [(1, 1), (1, 2), (1, 100), (16, 1), (16, 2), (16, 100), (500, 1), (500, 2), (500, 100)]


def trainer(epochs):
    t = BaseTrainer.__new__(BaseTrainer)
    t.args = SimpleNamespace(warmup_epochs=3.0, warmup_momentum=0.8, warmup_bias_lr=0.1, momentum=0.937, lr0=0.01,
                             lrf=0.01, cos_lr=False, nbs=64, optimizer="SGD")
    t.epochs, t.batch_size = epochs, 16
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    t.optimizer = BaseTrainer.build_optimizer(t, model, "SGD", lr=0.01, momentum=0.937, decay=0.0005)
    BaseTrainer._setup_scheduler(t)
    t.scheduler.last_epoch = -1  # as _setup_train sets it (start_epoch - 1)
    return t


def rows(nb, epochs):
    t = trainer(epochs)
    nw = t._get_warmup_iterations(nb)
    t.accumulate = max(round(t.args.nbs / t.batch_size), 1)
    last_opt_step = -1
    keep = set(range(0, min(nw + nb + 3, nb * epochs), max(1, (nw + nb) // 40)))
    keep |= {ni for ni in range(nw - 2, nw + 2)} | {nb * epochs - 1} | {e * nb for e in range(epochs)}
    for epoch in range(epochs):
        t.scheduler.step()
        for i in range(nb):
            ni = i + nb * epoch
            if ni < nw:
                xi = [0, nw]
                t.accumulate = max(1, int(np.interp(ni, xi, [1, t.args.nbs / t.batch_size]).round()))
                for x in t.optimizer.param_groups:
                    x["lr"] = float(np.interp(ni, xi, [t.args.warmup_bias_lr if x.get("param_group") == "bias" else 0.0,
                                                       x["initial_lr"] * t.lf(epoch)]))
                    if "momentum" in x:
                        x["momentum"] = float(np.interp(ni, xi, [t.args.warmup_momentum, t.args.momentum]))
            steps = ni - last_opt_step >= t.accumulate
            if steps:
                last_opt_step = ni
            if ni in keep:
                g = {x["param_group"]: x for x in t.optimizer.param_groups}
                yield (nb, epochs, ni, nw, g["weight"]["lr"], g["bn"]["lr"], g["bias"]["lr"], g["weight"]["momentum"],
                       t.accumulate, int(steps))


print("nb\tepochs\tni\tnw\tlr_weight\tlr_bn\tlr_bias\tmomentum\taccumulate\tsteps")
for nb, epochs in CASES:
    for r in rows(nb, epochs):
        print("\t".join(f"{v:.12g}" if isinstance(v, float) else str(v) for v in r))
