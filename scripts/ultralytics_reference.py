#!/usr/bin/python3
"""Ultralytics' own forward, transcribed, over the modules pickled in an Ultralytics checkpoint.

Ultralytics cannot be installed here (no pip). torch.load of a .pt needs its classes: they are
stubbed (plain objects that keep their attributes), and their forward code is transcribed below
from Ultralytics 8.3.58 (nn/modules/conv.py Conv.forward / forward_fuse and DWConv; block.py
Bottleneck, C2f, C3k2 (C2f's forward), C3 / C3k, SPPF, Attention, PSABlock, C2PSA; head.py
Detect.forward and _inference; nn/tasks.py BaseModel._predict_once and fuse();
utils/torch_utils.py fuse_conv_and_bn). YOLOv8 (8.2.82) files run through the same code: their
modules are a subset. torch's own Conv2d, BatchNorm2d, SiLU, MaxPool2d and Upsample run as they are.

As a module: bench/ultralytics_forward.py times load_model(path, fuse=True).
As a program (used by tests/unit/nn/yolo11_test.cpp):
  ultralytics_reference.py MODEL.pt INPUT.f32 B H W OUTPUT.f32
reads a float32 [B, 3, H, W] input, runs the unfused eval forward (what `model.val()` runs) and
writes float32: the decoded [B, 4 + nc, A] output, then each level's raw [B, no, h, w] output.
"""
import importlib.machinery
import sys
import types

import torch


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


def conv(m, x):
    """Conv / DWConv: act(bn(conv(x))), or act(conv(x)) once fused (forward_fuse)."""
    mods = m.__dict__["_modules"]
    y = mods["conv"](x)
    if mods.get("bn") is not None:
        y = mods["bn"](y)
    return mods["act"](y)


def attention(m, x):
    d, mods = m.__dict__, m.__dict__["_modules"]
    b, c, h, w = x.shape
    n = h * w
    q, k, v = run(mods["qkv"], x).view(b, d["num_heads"], d["key_dim"] * 2 + d["head_dim"], n).split(
        [d["key_dim"], d["key_dim"], d["head_dim"]], dim=2)
    attn = (q.transpose(-2, -1) @ k) * d["scale"]
    attn = attn.softmax(dim=-1)
    x = (v @ attn.transpose(-2, -1)).view(b, c, h, w) + run(mods["pe"], v.reshape(b, c, h, w))
    return run(mods["proj"], x)


def run(m, x):
    """forward of one Ultralytics module."""
    name, d, mods = type(m).__name__, m.__dict__, m.__dict__.get("_modules", {})
    if name in ("Conv", "DWConv"):
        return conv(m, x)
    if name == "Bottleneck":
        y = run(mods["cv2"], run(mods["cv1"], x))
        return x + y if d["add"] else y
    if name in ("C2f", "C3k2"):
        y = list(run(mods["cv1"], x).chunk(2, 1))
        y.extend(run(b, y[-1]) for b in children(mods["m"]))
        return run(mods["cv2"], torch.cat(y, 1))
    if name in ("C3", "C3k"):
        return run(mods["cv3"], torch.cat((run(mods["m"], run(mods["cv1"], x)), run(mods["cv2"], x)), 1))
    if name == "SPPF":
        x = run(mods["cv1"], x)
        y1 = mods["m"](x)
        y2 = mods["m"](y1)
        return run(mods["cv2"], torch.cat((x, y1, y2, mods["m"](y2)), 1))
    if name == "Attention":
        return attention(m, x)
    if name == "PSABlock":
        x = x + run(mods["attn"], x) if d["add"] else run(mods["attn"], x)
        return x + run(mods["ffn"], x) if d["add"] else run(mods["ffn"], x)
    if name == "C2PSA":
        a, b = run(mods["cv1"], x).split((d["c"], d["c"]), dim=1)
        return run(mods["cv2"], torch.cat((a, run(mods["m"], b)), 1))
    if name == "Sequential":
        for c in children(m):
            x = run(c, x)
        return x
    if name in ("Conv2d", "SiLU", "Upsample", "MaxPool2d", "Identity"):
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
    """Detect.forward in eval mode: (decoded [B, 4 + nc, A], raw levels)."""
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
    return torch.cat((dbox, cls.sigmoid()), 1), xs


def forward_levels(model, x):
    """BaseModel._predict_once: (decoded, raw levels)."""
    y = []
    for m in children(model.__dict__["_modules"]["model"]):
        f = m.__dict__["f"]
        if f != -1:
            x = y[f] if isinstance(f, int) else [x if j == -1 else y[j] for j in f]
        name = type(m).__name__
        if name == "Concat":
            x = torch.cat(x, m.__dict__["d"])
        elif name == "Detect":
            return detect(m, list(x))
        else:
            x = run(m, x)
        y.append(x if m.__dict__["i"] in model.__dict__["save"] else None)
    raise RuntimeError("the model has no Detect layer")


def forward(model, x):
    return forward_levels(model, x)[0]


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


def load_model(path, fuse=False):
    """The checkpoint's model (its EMA when present) in float32 eval mode, fused when asked."""
    if not any(isinstance(f, _StubFinder) for f in sys.meta_path):
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
        if fuse and type(m).__name__ in ("Conv", "DWConv") and "bn" in m._modules:
            m._modules["conv"] = fuse_conv_and_bn(m._modules["conv"], m._modules["bn"])
            del m._modules["bn"]

    with torch.no_grad():
        walk(model)
    return model


def main():
    if len(sys.argv) != 7:
        sys.exit("usage: ultralytics_reference.py MODEL.pt INPUT.f32 B H W OUTPUT.f32")
    path, src, b, h, w, dst = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6]), sys.argv[6]
    with open(src, "rb") as f:
        x = torch.frombuffer(bytearray(f.read()), dtype=torch.float32).view(b, 3, h, w)
    model = load_model(path)
    with torch.no_grad():
        decoded, levels = forward_levels(model, x)
    with open(dst, "wb") as f:
        for t in [decoded] + levels:
            f.write(t.contiguous().numpy().tobytes())


if __name__ == "__main__":
    main()
