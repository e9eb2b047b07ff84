#!/usr/bin/python3
"""Ultralytics' inference time on this machine, for predict_bench to be compared with.

Ultralytics itself cannot be installed here (no pip), so this times what its predictor's
"inference" figure measures -- the fused model's forward, `model(im)` -- with the library
Ultralytics runs on (Debian's python3-torch 1.13, the same oneDNN) over the very modules pickled in
an Ultralytics checkpoint (YOLOv8 or YOLO11), fused as Ultralytics fuses it: the transcription
of Ultralytics' module code is scripts/ultralytics_reference.py.

Inputs have the letterboxed sizes of the same images predict_bench reads (LetterBox with
auto=True: the long side to imgsz, the short one padded to a multiple of 32), batch 1.

Run: /usr/bin/python3 bench/ultralytics_forward.py [model=PATH] [source=DIR] [imgsz=640]
     [threads=2] [images=16] [rounds=3]
"""
import os
import struct
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from ultralytics_reference import forward, load_model  # noqa: E402

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared")


def jpeg_size(path):
    """(height, width) from a JPEG's SOF marker (no image library on this machine's python)."""
    with open(path, "rb") as f:
        data = f.read()
    i = 2
    while i < len(data):
        marker, length = data[i + 1], struct.unpack(">H", data[i + 2:i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            return struct.unpack(">HH", data[i + 5:i + 9])
        i += 2 + length
    raise ValueError(f"{path}: no SOF marker")


def letterbox_shape(h, w, imgsz, stride=32):
    r = min(imgsz / h, imgsz / w)
    new_w, new_h = int(round(w * r)), int(round(h * r))
    return new_h + (imgsz - new_h) % stride, new_w + (imgsz - new_w) % stride


def main():
    args = {"model": os.path.join(SHARED, "weights/ultralytics/bccd_yolov8n/best.pt"),
            "source": os.path.join(SHARED, "datasets/coco128/images/train"),
            "imgsz": "640", "threads": "2", "images": "16", "rounds": "3"}
    for a in sys.argv[1:]:
        k, _, v = a.partition("=")
        if k not in args:
            sys.exit(f"ultralytics_forward.py: unknown argument {a}; known: {', '.join(args)}")
        args[k] = v
    torch.set_num_threads(int(args["threads"]))
    files = sorted(f for f in os.listdir(args["source"]) if f.lower().endswith((".jpg", ".jpeg")))
    files = files[:int(args["images"])]
    shapes = [letterbox_shape(*jpeg_size(os.path.join(args["source"], f)), int(args["imgsz"])) for f in files]
    model = load_model(args["model"], fuse=True)
    print(f"model {args['model']}, {len(shapes)} letterbox sizes from {args['source']}, "
          f"imgsz {args['imgsz']}, {torch.get_num_threads()} threads, torch {torch.__version__}")
    with torch.inference_mode():
        inputs = [torch.rand(1, 3, h, w) for h, w in shapes]
        for x in inputs:  # warm-up: every size once
            forward(model, x)
        for r in range(1, int(args["rounds"]) + 1):
            total = 0.0
            for x in inputs:
                t = time.perf_counter()
                forward(model, x)
                total += time.perf_counter() - t
            print(f"round {r} Ultralytics forward batch 1: {1000 * total / len(inputs):6.1f} ms inference per image")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
