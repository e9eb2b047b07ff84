#!/usr/bin/python3
"""Ultralytics' inference time on this machine, for predict_bench to be compared with.

Ultralytics itself cannot be installed here (no pip), so this times what its predictor's
"inference" figure measures -- the fused model's forward, `model(im)` -- with the library
Ultralytics runs on (Debian's python3-torch 1.13, the same oneDNN) over the very modules pickled in
an Ultralytics checkpoint. torch.load needs Ultralytics' classes: they are stubbed (plain objects
that keep their attributes), and their forward code is transcribed below from Ultralytics 8.2.82
(nn/modules/conv.py Conv.forward_fuse, block.py Bottleneck/C2f/SPPF, head.py Detect.forward and
_inference, nn/tasks.py BaseModel._predict_once and fuse(), utils/torch_utils.py
fuse_conv_and_bn). torch's own Conv2d, SiLU, MaxPool2d and Upsample run as they are.

Inputs have the letterboxed sizes of the same images predict_bench reads (LetterBox with
auto=True: the long side to imgsz, the short one padded to a multiple of 32), batch 1.

Run: /usr/bin/python3 bench/ultralytics_forward.py [model=PATH] [source=DIR] [imgsz=640]
     [threads=2] [images=16] [rounds=3]
"""
import importlib.machinery
import os
import struct
import sys
import time
import types

import torch

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared")


class _Stub:
    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        self.__dict__.update(state if isinstance(state, dict) else {})


class _StubFinder:
    """Makes `ultralytics.*` importable as modules whose every attribute is a _Stub subclass."""

    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "ultralytics":
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = lambda attr: type(attr, (_Stub,), {})
        return module

    def exec_module(self, module):
        pass


def children(m):
    return [c for c in m.__dict__.get("_modules", {}).values() if c is not None]


def run(m, x):
    """forward of one Ultralytics module (fused: Conv is conv + act, as Conv.forward_fuse)."""
    name, d, mods = type(m).__name__, m.__dict__, m.__dict__.get("_modules", {})
    if name == "Conv":
        return mods["act"](mods["conv"](x))
    if name == "Bottleneck":
        y = run(mods["cv2"], run(mods["cv1"], x))
        return x + y if d["add"] else y
    if name == "C2f":
        y = list(run(mods["cv1"], x).chunk(2, 1))
        y.extend(run(b, y[-1]) for b in children(mods["m"]))
        return run(mods["cv2"], torch.cat(y, 1))
    if name == "SPPF":
        x = run(mods["cv1"], x)
        y1 = mods["m"](x)
        y2 = mods["m"](y1)
        return run(mods["cv2"], torch.cat((x, y1, y2, mods["m"](y2)), 1))
    if name == "Sequential":
        for c in children(m):
            x = run(c, x)
        return x
    if name in ("Conv2d", "SiLU", "Upsample", "MaxPool2d"):
        return m(x)
    raise RuntimeError(f"{name} is not transcribed here")


def make_anchors(feats, strides, offset=0.5):
    points, stride_tensor = [], []
    for f, s in zip(feats, strides):
        _, _, h, w = f.shape
        sx = torch.arange(w, dtype=f.dtype) + offset
        sy = torch.arange(h, dtype=f.dtype) + offset
        sy, sx = torch.meshgrid(sy, sx, indexing="ij")
        points.append(torch.stack((sx, sy), -1).view(-1, 2))
        stride_tensor.append(torch.full((h * w, 1), s, dtype=f.dtype))
    return torch.cat(points).transpose(0, 1), torch.cat(stride_tensor).transpose(0, 1)


def detect(m, xs):
    d, mods = m.__dict__, m.__dict__["_modules"]
    for i in range(d["nl"]):
        xs[i] = torch.cat((run(mods["cv2"]._modules[str(i)], xs[i]), run(mods["cv3"]._modules[str(i)], xs[i])), 1)
    b = xs[0].shape[0]
    anchors, strides = make_anchors(xs, d["stride"].tolist())
    x_cat = torch.cat([xi.view(b, d["no"], -1) for xi in xs], 2)
    box, cls = x_cat.split((d["reg_max"] * 4, d["nc"]), 1)
    a = box.shape[2]
    dist = mods["dfl"]._modules["conv"](box.view(b, 4, d["reg_max"], a).transpose(2, 1).softmax(1)).view(b, 4, a)
    lt, rb = dist.chunk(2, 1)
    x1y1, x2y2 = anchors.unsqueeze(0) - lt, anchors.unsqueeze(0) + rb
    dbox = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * strides
    return torch.cat((dbox, cls.sigmoid()), 1)


def forward(model, x):
    """BaseModel._predict_once."""
    y = []
    for m in children(model.__dict__["_modules"]["model"]):
        f = m.__dict__["f"]
        if f != -1:
            x = y[f] if isinstance(f, int) else [x if j == -1 else y[j] for j in f]
        name = type(m).__name__
        if name == "Concat":
            x = torch.cat(x, m.__dict__["d"])
        elif name == "Detect":
            x = detect(m, list(x))
        else:
            x = run(m, x)
        y.append(x if m.__dict__["i"] in model.__dict__["save"] else None)
    return x


def fuse_conv_and_bn(conv, bn):
    fused = torch.nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                            conv.dilation, conv.groups, bias=True).requires_grad_(False)
    w_conv = conv.weight.clone().view(conv.out_channels, -1)
    w_bn = torch.diag(bn.weight.div(torch.sqrt(bn.eps + bn.running_var)))
    fused.weight.copy_(torch.mm(w_bn, w_conv).view(fused.weight.shape))
    b_conv = torch.zeros(conv.weight.shape[0]) if conv.bias is None else conv.bias
    b_bn = bn.bias - bn.weight.mul(bn.running_mean).div(torch.sqrt(bn.running_var + bn.eps))
    fused.bias.copy_(torch.mm(w_bn, b_conv.reshape(-1, 1)).reshape(-1) + b_bn)
    return fused


def load_fused(path):
    sys.meta_path.insert(0, _StubFinder())
    ckpt = torch.load(path, map_location="cpu")
    model = ckpt.get("ema") or ckpt["model"]

    def walk(m):
        if hasattr(m, "training"):
            m.training = False
        for k, v in list(m.__dict__.get("_parameters", {}).items()):
            if v is not None:
                m._parameters[k] = torch.nn.Parameter(v.float(), requires_grad=False)  # AutoBackend's .float()
        for k, v in list(m.__dict__.get("_buffers", {}).items()):
            if v is not None and v.is_floating_point():
                m._buffers[k] = v.float()
        for c in children(m):
            walk(c)
        if type(m).__name__ == "Conv" and "bn" in m._modules:
            m._modules["conv"] = fuse_conv_and_bn(m._modules["conv"], m._modules["bn"])
            del m._modules["bn"]

    with torch.no_grad():
        walk(model)
    return model


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
    model = load_fused(args["model"])
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
