#!/usr/bin/env python3
"""Move YOLOv8 detection weights between Ultralytics and yolotrain (safetensors).

Needs `pip install ultralytics safetensors`; not run in yolotrain's CI.

  # Ultralytics -> yolotrain: write the model's state dict with Ultralytics' names.
  python3 scripts/export_ultralytics_weights.py export yolov8n.pt yolov8n.safetensors
  #   then in C++: yolotrain::nn::load_weights(*model, "yolov8n.safetensors", true);

  # yolotrain -> Ultralytics: build the same model from its YAML, load the tensors, save a .pt.
  python3 scripts/export_ultralytics_weights.py import yolov8n.safetensors yolov8n_from_cpp.pt \
      --model yolov8n.yaml --nc 80
"""
import argparse
import json


def export(args):
    from safetensors.torch import save_file
    from ultralytics import YOLO

    model = YOLO(args.source).model.float().eval()  # the DetectionModel; checkpoints hold FP16
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    metadata = {
        "format": "pt",
        "source": str(args.source),
        "nc": str(model.nc),
        "names": json.dumps({int(k): v for k, v in model.names.items()}),
        "yaml": model.yaml.get("yaml_file", ""),
        # whose construction the network follows (yolotrain's DetectionModelOptions::ultralytics):
        # SPPF's cv1 has a SiLU up to Ultralytics 8.3, none since 8.4.0
        "ultralytics": "8.3" if any(type(m).__name__ == "SPPF" and type(m.cv1.act).__name__ == "SiLU"
                                    for m in model.modules()) else "8.4",
    }
    save_file(tensors, args.target, metadata=metadata)
    print(f"wrote {len(tensors)} tensors to {args.target}")


def import_(args):
    import copy

    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file
    from ultralytics.nn.tasks import DetectionModel

    model = DetectionModel(args.model, nc=args.nc, verbose=False)  # "yolov8n.yaml" = yolov8.yaml, scale n
    model.load_state_dict(load_file(args.source), strict=True)  # same names, shapes and order
    with safe_open(args.source, framework="pt") as f:
        names = (f.metadata() or {}).get("names")
    if names:
        model.names = {int(k): v for k, v in json.loads(names).items()}
    # The checkpoint layout Ultralytics' attempt_load_one_weight reads (YOLO(target) works).
    ckpt = {"epoch": -1, "best_fitness": None, "model": copy.deepcopy(model).half(), "ema": None,
            "updates": None, "optimizer": None, "train_args": {}}
    torch.save(ckpt, args.target)
    print(f"loaded {args.source} into {args.model} (nc={model.nc}) and saved {args.target}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export", help="Ultralytics .pt -> .safetensors")
    e.add_argument("source", help="an Ultralytics checkpoint or model YAML, e.g. yolov8n.pt")
    e.add_argument("target", help="the .safetensors file to write")
    e.set_defaults(run=export)
    i = sub.add_parser("import", help=".safetensors (from yolotrain) -> Ultralytics .pt")
    i.add_argument("source", help="a .safetensors file written by yolotrain::nn::save_weights")
    i.add_argument("target", help="the Ultralytics .pt file to write")
    i.add_argument("--model", default="yolov8n.yaml", help="model YAML with the scale, e.g. yolov8s.yaml")
    i.add_argument("--nc", type=int, default=None, help="number of classes (default: the YAML's)")
    i.set_defaults(run=import_)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
