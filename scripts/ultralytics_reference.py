#!/usr/bin/python3
"""Ultralytics' own forward, transcribed, over the modules pickled in an Ultralytics checkpoint.

Ultralytics cannot be installed here (no pip). torch.load of a .pt needs its classes: they are
stubbed (plain objects that keep their attributes), and their forward code is transcribed below
from Ultralytics 8.3.58 (nn/modules/conv.py Conv.forward / forward_fuse and DWConv; block.py
Bottleneck, C2f, C3k2 (C2f's forward), C3 / C3k, SPPF, Attention, PSABlock, C2PSA; head.py
Detect.forward and _inference; nn/tasks.py BaseModel._predict_once and fuse();
from 8.4.117 for segmentation files: Segment / Segment26 (the mask coefficients, top-k with them),
Proto and Proto26 in eval (head.py, block.py);
and from 8.4.117 for YOLO26 files: SPPF's n and shortcut, C3k2's attention blocks (a Sequential
of Bottleneck and PSABlock), the end-to-end Detect (reg_max 1 without DFL, the one-to-one
branch, xyxy decoding and Detect.postprocess's top-k);
utils/torch_utils.py fuse_conv_and_bn). YOLOv8 (8.2.82) files run through the same code: their
modules are a subset. torch's own Conv2d, BatchNorm2d, SiLU, MaxPool2d and Upsample run as they are.

As a module: bench/ultralytics_forward.py times load_model(path, fuse=True).
As a program (used by tests/unit/nn/yolo11_test.cpp):
  ultralytics_reference.py MODEL.pt INPUT.f32 B H W OUTPUT.f32
reads a float32 [B, 3, H, W] input, runs the unfused eval forward (what `model.val()` runs) and
writes float32: the decoded [B, 4 + nc, A] output, then each level's raw [B, no, h, w] output
(an end-to-end head: the top-k [B, k, 6] output, then the one-to-many levels, then the one-to-one).
  ultralytics_reference.py --yaml MODEL.yaml SCALE NC WEIGHTS INPUT.f32 B H W OUTPUT.f32
does the same for a network built from a model YAML by a transcription of Ultralytics 8.3.58's
parse_model and module constructors (build_model below: the scales no genuine file exists for),
with the weights of WEIGHTS.txt (a state-dict name per line) / WEIGHTS.f32 (their float32 values).
"""
import ast
import importlib.machinery
import math
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
    if name == "SPPF":  # 8.4: n poolings (8.3: 3) and an optional shortcut; cv1.act as pickled
        y = [run(mods["cv1"], x)]
        y.extend(mods["m"](y[-1]) for _ in range(d.get("n", 3)))
        y = run(mods["cv2"], torch.cat(y, 1))
        return y + x if d.get("add", False) else y
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
    if name in ("Conv2d", "ConvTranspose2d", "SiLU", "Upsample", "MaxPool2d", "Identity"):
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


def head_levels(m, xs, box_head, cls_head):
    """One branch of Detect: cat(box, cls) per level."""
    mods = m.__dict__["_modules"]
    return [torch.cat((run(mods[box_head]._modules[str(i)], x), run(mods[cls_head]._modules[str(i)], x)), 1)
            for i, x in enumerate(xs)]


def decode(m, levels, xyxy):
    """Detect._inference: boxes (DFL unless reg_max is 1, 8.4) and sigmoid scores, [B, 4 + nc, A]."""
    d, mods = m.__dict__, m.__dict__["_modules"]
    b = levels[0].shape[0]
    anchors, strides = make_anchors(levels, d["stride"].tolist())
    x_cat = torch.cat([xi.view(b, d["no"], -1) for xi in levels], 2)
    box, cls = x_cat.split((d["reg_max"] * 4, d["nc"]), 1)
    a = box.shape[2]
    if d["reg_max"] > 1:
        box = mods["dfl"]._modules["conv"](box.view(b, 4, d["reg_max"], a).transpose(2, 1).softmax(1)).view(b, 4, a)
    lt, rb = box.chunk(2, 1)
    x1y1, x2y2 = anchors.unsqueeze(0) - lt, anchors.unsqueeze(0) + rb
    dbox = (torch.cat((x1y1, x2y2), 1) if xyxy else torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1)) * strides
    return torch.cat((dbox, cls.sigmoid()), 1)


def top_k(preds, nc, max_det, nm=0):
    """Detect.postprocess / get_topk_index (8.4.117; not agnostic, one group): [B, k, 6]; Segment's
    postprocess gathers the nm mask coefficients too: [B, k, 6 + nm]."""
    batch, anchors, _ = preds.shape
    boxes, scores, coefficients = preds.split([4, nc, nm], dim=-1)
    k = min(max_det, anchors)
    ori_index = scores.max(dim=-1)[0].topk(k, dim=1)[1].unsqueeze(-1)
    scores = scores.gather(dim=1, index=ori_index.expand(-1, -1, nc))
    scores, index = scores.flatten(1).topk(k, dim=1)
    idx = ori_index.gather(dim=1, index=(index // nc).unsqueeze(-1))
    boxes = boxes.gather(dim=1, index=idx.expand(-1, -1, 4))
    coefficients = coefficients.gather(dim=1, index=idx.expand(-1, -1, nm))
    return torch.cat([boxes, scores[..., None], (index % nc)[..., None].float(), coefficients], dim=-1)


def proto(m, xs):
    """Proto.forward (8.3 / 8.4) on P3; Proto26.forward in eval (8.4.117): P4 and P5 refined, upsampled
    by 2 and 4 (nearest) and added to P3, then feat_fuse, then Proto's layers."""
    mods = m.__dict__["_modules"]
    x = xs[0]
    if type(m).__name__ == "Proto26":
        for i, f in enumerate(children(mods["feat_refine"])):
            x = x + torch.nn.functional.interpolate(run(f, xs[i + 1]), scale_factor=2 ** (i + 1), mode="nearest")
        x = run(mods["feat_fuse"], x)
    return run(mods["cv3"], run(mods["cv2"], mods["upsample"](run(mods["cv1"], x))))


def mask_coefficients(m, xs, head):
    """Segment.forward_head's mask branch: [B, nm, A]."""
    mods, b = m.__dict__["_modules"], xs[0].shape[0]
    return torch.cat([run(mods[head]._modules[str(i)], x).view(b, m.__dict__["nm"], -1) for i, x in enumerate(xs)], 2)


def detect(m, xs):
    """Detect.forward in eval mode: (output, raw levels). The output is decoded [B, 4 + nc, A]; for an
    end-to-end head (8.4: one2one_cv2 / one2one_cv3 present) the one-to-one branch's top-k [B, k, 6],
    and the raw levels are the one-to-many branch's followed by the one-to-one branch's.
    Segment / Segment26 (8.4.117 head.py): the output carries the mask coefficients ([B, 4 + nc + nm, A],
    end-to-end [B, k, 6 + nm]), and after the levels come the mask coefficients of each branch
    [B, nm, A] and the prototypes."""
    d, mods = m.__dict__, m.__dict__["_modules"]
    segment = mods.get("proto") is not None
    nm = d["nm"] if segment else 0
    one2many = head_levels(m, xs, "cv2", "cv3")
    extras = [mask_coefficients(m, xs, "cv4")] if segment else []
    protos = [proto(mods["proto"], xs)] if segment else []
    if mods.get("one2one_cv2") is None or not d.get("_end2end", True):
        out = decode(m, one2many, False)
        return (torch.cat([out, extras[0]], 1) if segment else out), one2many + extras + protos
    one2one = head_levels(m, xs, "one2one_cv2", "one2one_cv3")
    out = decode(m, one2one, True)
    if segment:
        extras.append(mask_coefficients(m, xs, "one2one_cv4"))
        out = torch.cat([out, extras[1]], 1)
    out = top_k(out.permute(0, 2, 1), d["nc"], d.get("max_det", 300), nm)
    return out, one2many + one2one + extras + protos


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
        elif name in ("Detect", "Segment", "Segment26"):
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
    # An Ultralytics .pt pickles its model classes: torch >= 2.6 loads only weights by default.
    ckpt = torch.load(path, map_location="cpu", weights_only=False)
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


# Ultralytics 8.3.58's constructors (nn/modules/conv.py, block.py, head.py), as far as YOLOv8 and
# YOLO11 need them: the attributes and children run() above reads.
class Conv(torch.nn.Module):
    default_act = torch.nn.SiLU()

    def __init__(self, c1, c2, k=1, s=1, p=None, g=1, d=1, act=True):
        super().__init__()
        if p is None:  # autopad (d is 1 here)
            p = k // 2 if isinstance(k, int) else [x // 2 for x in k]
        self.conv = torch.nn.Conv2d(c1, c2, k, s, p, groups=g, dilation=d, bias=False)
        self.bn = torch.nn.BatchNorm2d(c2)
        self.act = self.default_act if act is True else act if isinstance(act, torch.nn.Module) else torch.nn.Identity()


class DWConv(Conv):
    def __init__(self, c1, c2, k=1, s=1, d=1, act=True):
        super().__init__(c1, c2, k, s, g=math.gcd(c1, c2), d=d, act=act)


class Bottleneck(torch.nn.Module):
    def __init__(self, c1, c2, shortcut=True, g=1, k=(3, 3), e=0.5):
        super().__init__()
        c_ = int(c2 * e)
        self.cv1 = Conv(c1, c_, k[0], 1)
        self.cv2 = Conv(c_, c2, k[1], 1, g=g)
        self.add = shortcut and c1 == c2


class C2f(torch.nn.Module):
    def __init__(self, c1, c2, n=1, shortcut=False, g=1, e=0.5):
        super().__init__()
        self.c = int(c2 * e)
        self.cv1 = Conv(c1, 2 * self.c, 1, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)
        self.m = torch.nn.ModuleList(Bottleneck(self.c, self.c, shortcut, g, k=((3, 3), (3, 3)), e=1.0) for _ in range(n))


class C3(torch.nn.Module):
    def __init__(self, c1, c2, n=1, shortcut=True, g=1, e=0.5):
        super().__init__()
        c_ = int(c2 * e)
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c1, c_, 1, 1)
        self.cv3 = Conv(2 * c_, c2, 1)
        self.m = torch.nn.Sequential(*(Bottleneck(c_, c_, shortcut, g, k=((1, 1), (3, 3)), e=1.0) for _ in range(n)))


class C3k(C3):
    def __init__(self, c1, c2, n=1, shortcut=True, g=1, e=0.5, k=3):
        super().__init__(c1, c2, n, shortcut, g, e)
        c_ = int(c2 * e)
        self.m = torch.nn.Sequential(*(Bottleneck(c_, c_, shortcut, g, k=(k, k), e=1.0) for _ in range(n)))


class C3k2(C2f):
    def __init__(self, c1, c2, n=1, c3k=False, e=0.5, g=1, shortcut=True):
        super().__init__(c1, c2, n, shortcut, g, e)
        self.m = torch.nn.ModuleList(
            C3k(self.c, self.c, 2, shortcut, g) if c3k else Bottleneck(self.c, self.c, shortcut, g) for _ in range(n))


class SPPF(torch.nn.Module):
    def __init__(self, c1, c2, k=5):
        super().__init__()
        c_ = c1 // 2
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c_ * 4, c2, 1, 1)
        self.m = torch.nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)


class Attention(torch.nn.Module):
    def __init__(self, dim, num_heads=8, attn_ratio=0.5):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.key_dim = int(self.head_dim * attn_ratio)
        self.scale = self.key_dim ** -0.5
        nh_kd = self.key_dim * num_heads
        h = dim + nh_kd * 2
        self.qkv = Conv(dim, h, 1, act=False)
        self.proj = Conv(dim, dim, 1, act=False)
        self.pe = Conv(dim, dim, 3, 1, g=dim, act=False)


class PSABlock(torch.nn.Module):
    def __init__(self, c, attn_ratio=0.5, num_heads=4, shortcut=True):
        super().__init__()
        self.attn = Attention(c, attn_ratio=attn_ratio, num_heads=num_heads)
        self.ffn = torch.nn.Sequential(Conv(c, c * 2, 1), Conv(c * 2, c, 1, act=False))
        self.add = shortcut


class C2PSA(torch.nn.Module):
    def __init__(self, c1, c2, n=1, e=0.5):
        super().__init__()
        assert c1 == c2
        self.c = int(c1 * e)
        self.cv1 = Conv(c1, 2 * self.c, 1, 1)
        self.cv2 = Conv(2 * self.c, c1, 1)
        self.m = torch.nn.Sequential(*(PSABlock(self.c, attn_ratio=0.5, num_heads=self.c // 64) for _ in range(n)))


class Concat(torch.nn.Module):
    def __init__(self, dimension=1):
        super().__init__()
        self.d = dimension


class DFL(torch.nn.Module):
    def __init__(self, c1=16):
        super().__init__()
        self.conv = torch.nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)
        self.conv.weight.data[:] = torch.arange(c1, dtype=torch.float).view(1, c1, 1, 1)


class Detect(torch.nn.Module):
    legacy = False

    def __init__(self, nc=80, ch=()):
        super().__init__()
        self.nc, self.nl, self.reg_max = nc, len(ch), 16
        self.no = nc + self.reg_max * 4
        self.stride = torch.zeros(self.nl)
        c2, c3 = max((16, ch[0] // 4, self.reg_max * 4)), max(ch[0], min(self.nc, 100))
        self.cv2 = torch.nn.ModuleList(
            torch.nn.Sequential(Conv(x, c2, 3), Conv(c2, c2, 3), torch.nn.Conv2d(c2, 4 * self.reg_max, 1)) for x in ch)
        self.cv3 = (
            torch.nn.ModuleList(
                torch.nn.Sequential(Conv(x, c3, 3), Conv(c3, c3, 3), torch.nn.Conv2d(c3, self.nc, 1)) for x in ch)
            if self.legacy
            else torch.nn.ModuleList(
                torch.nn.Sequential(
                    torch.nn.Sequential(DWConv(x, x, 3), Conv(x, c3, 1)),
                    torch.nn.Sequential(DWConv(c3, c3, 3), Conv(c3, c3, 1)),
                    torch.nn.Conv2d(c3, self.nc, 1),
                ) for x in ch))
        self.dfl = DFL(self.reg_max)


class DetectionModel(torch.nn.Module):
    pass


def make_divisible(x, divisor):
    return math.ceil(x / divisor) * divisor


def build_model(yaml_path, scale, nc):
    """Ultralytics 8.3.58's DetectionModel.__init__ / parse_model for these modules (strides probed)."""
    import yaml  # python3-yaml, a dependency of Debian's python3-torch
    d = yaml.safe_load(open(yaml_path))
    depth, width, max_channels = d["scales"][scale]
    modules = {c.__name__: c for c in (Conv, DWConv, Bottleneck, C2f, C3k2, SPPF, C2PSA, Concat, Detect)}
    modules["Upsample"] = torch.nn.Upsample
    repeat_modules = {C2f, C3k2, C2PSA}
    ch, layers, save, legacy = [3], [], [], True
    for i, (f, n, m, args) in enumerate(d["backbone"] + d["head"]):
        m = modules[m.replace("nn.", "")]
        args = [nc if a == "nc" else (ast.literal_eval(a) if isinstance(a, str) and a != "nearest" else a)
                for a in args]
        n = max(round(n * depth), 1) if n > 1 else n
        if m in (Conv, DWConv, Bottleneck, C2f, C3k2, SPPF, C2PSA):
            c1, c2 = ch[f], args[0]
            if c2 != nc:
                c2 = make_divisible(min(c2, max_channels) * width, 8)
            args = [c1, c2, *args[1:]]
            if m in repeat_modules:
                args.insert(2, n)
                n = 1
            if m is C3k2:
                legacy = False
                if scale in "mlx":
                    args[3] = True
        elif m is Concat:
            c2 = sum(ch[x] for x in f)
        elif m is Detect:
            args.append([ch[x] for x in f])
            m.legacy = legacy
        else:
            c2 = ch[f]
        module = torch.nn.Sequential(*(m(*args) for _ in range(n))) if n > 1 else m(*args)
        module.i, module.f = i, f
        save.extend(x % i for x in ([f] if isinstance(f, int) else f) if x != -1)
        layers.append(module)
        if i == 0:
            ch = []
        ch.append(c2)
    model = DetectionModel()
    model.model = torch.nn.Sequential(*layers)
    model.save = sorted(save)
    layers[-1].stride = torch.tensor([8.0, 16.0, 32.0])  # what the probe forward of zeros(1, 3, 256, 256) gives
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.eps, m.momentum = 1e-3, 0.03
    return model.eval()


def load_raw_weights(model, index_path, data_path):
    """Sets every float tensor named in the index (a name per line) from the float32 file, in order."""
    data = torch.frombuffer(bytearray(open(data_path, "rb").read()), dtype=torch.float32)
    state = model.state_dict()
    offset = 0
    with torch.no_grad():
        for line in open(index_path):
            t = state[line.strip()]
            count = t.numel()
            t.copy_(data[offset:offset + count].view(t.shape))
            offset += count
    assert offset == data.numel(), f"{data.numel() - offset} values left over"


def main():
    if len(sys.argv) == 11 and sys.argv[1] == "--yaml":
        yaml_path, scale, nc, weights = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
        model = build_model(yaml_path, scale, nc)
        load_raw_weights(model, weights + ".txt", weights + ".f32")
        sys.argv = [sys.argv[0]] + sys.argv[6:]
    elif len(sys.argv) == 7:
        model = load_model(sys.argv[1])
        sys.argv = [sys.argv[0]] + sys.argv[2:]
    else:
        sys.exit("usage: ultralytics_reference.py MODEL.pt INPUT.f32 B H W OUTPUT.f32\n"
                 "       ultralytics_reference.py --yaml MODEL.yaml SCALE NC WEIGHTS INPUT.f32 B H W OUTPUT.f32")
    src, b, h, w, dst = sys.argv[1], *map(int, sys.argv[2:5]), sys.argv[5]
    with open(src, "rb") as f:
        x = torch.frombuffer(bytearray(f.read()), dtype=torch.float32).view(b, 3, h, w)
    with torch.no_grad():
        decoded, levels = forward_levels(model, x)
    with open(dst, "wb") as f:
        for t in [decoded] + levels:
            f.write(t.contiguous().numpy().tobytes())


if __name__ == "__main__":
    main()
