#!/usr/bin/env python3
# Learning curves of yolotrain and Ultralytics 8.4.117 side by side: the same model trained on the
# same files with the same arguments by both trainers for several seeds, then each epoch's training
# losses and the task's metric (mean over the seeds, with their spread) printed as a Markdown table,
# and the final metric's means compared. Used for docs/performance.md "Learning as Ultralytics 8.4".
#
# Needs Ultralytics 8.4.117 importable by /usr/bin/python3 (../shared/tools/ultralytics84/README.md:
# PYTHONPATH=<shims>:<its source>, YOLO_OFFLINE=True, YOLO_CONFIG_DIR=...) and a built yolo_train.
#   python3 scripts/compare_learning.py --model yolov8n.yaml --data /tmp/sets/shapes/data.yaml \
#       --out /tmp/curves/yolov8n --seeds 0,1,2 --epochs 20 --imgsz 160 --batch 16
# Runs already in --out are reused, so an interrupted comparison continues; --tools u or y runs one
# trainer only (two invocations can share the 2 cores: --threads 1 each). Key=value arguments after
# the options go to both trainers (e.g. auto_augment=None). The data: a data.yaml (a class-folder
# directory for classification) whose `path:` is absolute; make the built-in sets with
# `yolo_dataset shapes DIR [--segments | --keypoints | --classes | --obb]`.
import argparse
import csv
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
METRIC = {"detect": "metrics/mAP50(B)", "obb": "metrics/mAP50(B)", "segment": "metrics/mAP50(M)",
          "pose": "metrics/mAP50(P)", "classify": "metrics/accuracy_top1"}


def task_of(model):
    stem = Path(model).stem if Path(model).stem not in ("best", "last") else Path(model).parent.name
    for suffix, task in (("-seg", "segment"), ("-pose", "pose"), ("-obb", "obb"), ("-cls", "classify")):
        if stem.endswith(suffix):
            return task
    return "detect"


def read_results(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    names = [n.strip() for n in rows[0]]
    return [{n: float(v) for n, v in zip(names, row) if v.strip()} for row in rows[1:] if row]


def run_ultralytics(a, seed, out, extra):
    csv_path = out / Path(a.model).stem / "results.csv"
    if csv_path.exists():
        return csv_path
    env = dict(os.environ, TORCH_THREADS=str(a.threads))
    cmd = [a.python, str(ROOT / "scripts/ultralytics84_train.py"), a.model, a.data, str(out), str(a.epochs),
           f"seed={seed}", f"imgsz={a.imgsz}", f"batch={a.batch}", f"name={Path(a.model).stem}", *extra]
    with open(out.parent / f"{out.name}.log", "w") as log:
        subprocess.run(cmd, check=True, env=env, stdout=log, stderr=subprocess.STDOUT)
    return csv_path


def run_yolotrain(a, seed, out, extra):
    csv_path = out / "run" / "results.csv"
    if csv_path.exists() and "completed" in (out / "run" / "status.json").read_text():
        return csv_path
    cmd = [a.yolo_train, f"model={a.model}", f"data={a.data}", f"epochs={a.epochs}", f"imgsz={a.imgsz}",
           f"batch={a.batch}", f"seed={seed}", f"threads={a.threads}", "workers=2", "device=cpu", "plots=false",
           f"project={out}", "name=run", "exist_ok=true", *extra]
    with open(out.parent / f"{out.name}.log", "w") as log:
        subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT)
    return csv_path


def summary(runs, column, epoch):
    values = [r[epoch][column] for r in runs if epoch < len(r) and column in r[epoch]]
    if not values:
        return None
    return statistics.mean(values), min(values), max(values)


def cell(s):
    return "" if s is None else f"{s[0]:.4f} ({s[1]:.3f}-{s[2]:.3f})"


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--imgsz", type=int, default=160)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--tools", default="u,y", help="u: Ultralytics, y: yolotrain")
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--yolo-train", default=str(ROOT / "build/examples/yolo_train"))
    a, extra = p.parse_known_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    tools = a.tools.split(",")
    curves = {"u": [], "y": []}
    for seed in seeds:
        for tool, run in (("u", run_ultralytics), ("y", run_yolotrain)):
            out = a.out / tool / f"seed{seed}"
            out.mkdir(parents=True, exist_ok=True)
            path = run(a, seed, out, extra) if tool in tools else None
            if path is None:
                path = (out / Path(a.model).stem / "results.csv") if tool == "u" else (out / "run" / "results.csv")
            rows = read_results(path) if path.exists() else []
            if len(rows) >= a.epochs:  # a run still going (or stopped) is left out
                curves[tool].append(rows[: a.epochs])
    if not curves["u"] or not curves["y"]:
        print("both trainers' runs are needed for the table; have: "
              + ", ".join(f"{t} {len(c)}" for t, c in curves.items()))
        return 0
    metric = METRIC[task_of(a.model)]
    losses = [n for n in curves["u"][0][0] if n.startswith("train/")]
    print(f"{a.model} on {a.data}: {a.epochs} epochs at {a.imgsz}, batch {a.batch}, seeds {a.seeds}; "
          f"each cell: mean over seeds (min-max); U Ultralytics 8.4.117, Y yolotrain")
    header = ["epoch"] + [f"{t} {n}" for n in losses + [metric] for t in ("U", "Y")]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    epochs = max(len(r) for c in curves.values() for r in c)
    inside = total = 0
    for e in range(epochs):
        row = [str(e + 1)]
        for n in losses + [metric]:
            u, y = summary(curves["u"], n, e), summary(curves["y"], n, e)
            row += [cell(u), cell(y)]
            if n in losses and u and y and len(curves["u"]) > 1:
                total += 1
                inside += u[1] <= y[0] <= u[2]
        print("| " + " | ".join(row) + " |")
    fu, fy = summary(curves["u"], metric, epochs - 1), summary(curves["y"], metric, epochs - 1)
    print(f"\nfinal {metric}: Ultralytics {fu[0]:.4f} (seeds {len(curves['u'])}), yolotrain {fy[0]:.4f} "
          f"(seeds {len(curves['y'])}), difference {fy[0] - fu[0]:+.4f}")
    if total:
        print(f"yolotrain's per-epoch mean losses inside Ultralytics' range over its seeds: {inside}/{total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
