#!/usr/bin/python3
"""Compares `yolo_train predict save_txt=true save_conf=true` with Ultralytics' predictor.

Ultralytics cannot be installed here (no pip), so its predictor is transcribed from 8.2.82 and run
over the modules pickled in the weights file, with the libraries Ultralytics itself calls:
  - reading: cv2.imread (BGR);
  - preprocess: data/augment.py LetterBox (auto=True for one image: padding to a multiple of the
    stride, cv2.resize INTER_LINEAR, cv2.copyMakeBorder 114), BGR -> RGB, HWC -> CHW, float / 255
    (engine/predictor.py BasePredictor.preprocess / pre_transform);
  - inference: the fused model's forward (bench/ultralytics_forward.py: nn/tasks.py, nn/modules);
  - postprocess: utils/ops.py non_max_suppression (torchvision.ops.nms, class offsets of 7680,
    no multi-label) and scale_boxes + clip_boxes (models/yolo/detect/predict.py);
  - the label rows: engine/results.py Results.save_txt (cls, xywhn, conf).
Then every detection yolo_train wrote is matched with Ultralytics' (same class, nearest box) and
the largest differences are printed; the exit code is 1 when a box differs by more than 0.1 px, a
confidence by more than 1e-3, or the detections are not the same set.

Needs Debian's python3-torch, python3-opencv and python3-torchvision (not installed by
scripts/install-deps.sh: this is a check to run by hand).
Run: yolo_train predict model=W source=DIR imgsz=N save_txt=true save_conf=true name=cmp
     /usr/bin/python3 scripts/compare_ultralytics_predict.py model=W source=DIR imgsz=N labels=runs/detect/cmp/labels
"""
import os
import sys

import cv2
import numpy as np
import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from ultralytics_forward import forward, load_fused  # noqa: E402


def letterbox(img, new_shape, stride=32):
    """LetterBox(new_shape, auto=True, stride=stride)(image=img), Ultralytics 8.2.82."""
    shape = img.shape[:2]
    r = min(new_shape[0] / shape[0], new_shape[1] / shape[1])
    new_unpad = int(round(shape[1] * r)), int(round(shape[0] * r))
    dw, dh = new_shape[1] - new_unpad[0], new_shape[0] - new_unpad[1]
    dw, dh = np.mod(dw, stride), np.mod(dh, stride)
    dw /= 2
    dh /= 2
    if shape[::-1] != new_unpad:
        img = cv2.resize(img, new_unpad, interpolation=cv2.INTER_LINEAR)
    top, bottom = int(round(dh - 0.1)), int(round(dh + 0.1))
    left, right = int(round(dw - 0.1)), int(round(dw + 0.1))
    return cv2.copyMakeBorder(img, top, bottom, left, right, cv2.BORDER_CONSTANT, value=(114, 114, 114))


def xywh2xyxy(x):
    y = torch.empty_like(x)
    xy, wh = x[..., :2], x[..., 2:] / 2
    y[..., :2] = xy - wh
    y[..., 2:] = xy + wh
    return y


def non_max_suppression(prediction, conf_thres, iou_thres, max_det=300, max_nms=30000, max_wh=7680):
    nc = prediction.shape[1] - 4
    xc = prediction[:, 4:4 + nc].amax(1) > conf_thres
    prediction = prediction.transpose(-1, -2)
    prediction[..., :4] = xywh2xyxy(prediction[..., :4])
    output = [torch.zeros((0, 6))] * prediction.shape[0]
    for xi, x in enumerate(prediction):
        x = x[xc[xi]]
        if not x.shape[0]:
            continue
        box, cls = x.split((4, nc), 1)
        conf, j = cls.max(1, keepdim=True)
        x = torch.cat((box, conf, j.float()), 1)[conf.view(-1) > conf_thres]
        if not x.shape[0]:
            continue
        if x.shape[0] > max_nms:
            x = x[x[:, 4].argsort(descending=True)[:max_nms]]
        i = torchvision.ops.nms(x[:, :4] + x[:, 5:6] * max_wh, x[:, 4], iou_thres)[:max_det]
        output[xi] = x[i]
    return output


def scale_boxes(img1_shape, boxes, img0_shape):
    gain = min(img1_shape[0] / img0_shape[0], img1_shape[1] / img0_shape[1])
    pad = (round((img1_shape[1] - img0_shape[1] * gain) / 2 - 0.1), round((img1_shape[0] - img0_shape[0] * gain) / 2 - 0.1))
    boxes[..., [0, 2]] -= pad[0]
    boxes[..., [1, 3]] -= pad[1]
    boxes[..., :4] /= gain
    boxes[..., [0, 2]] = boxes[..., [0, 2]].clamp(0, img0_shape[1])
    boxes[..., [1, 3]] = boxes[..., [1, 3]].clamp(0, img0_shape[0])
    return boxes


def ultralytics_predict(model, path, imgsz, conf, iou):
    im0 = cv2.imread(path)
    im = letterbox(im0, (imgsz, imgsz))
    x = torch.from_numpy(np.ascontiguousarray(im[None, ..., ::-1].transpose((0, 3, 1, 2)))).float() / 255
    with torch.inference_mode():
        det = non_max_suppression(forward(model, x), conf, iou)[0]
        det[:, :4] = scale_boxes(x.shape[2:], det[:, :4], im0.shape)
    return det, im0.shape


def read_labels(path, shape):
    """Our rows `cls xc yc w h conf` (normalised) as [x1, y1, x2, y2, conf, cls] in pixels."""
    h, w = shape[:2]
    rows = []
    if os.path.exists(path):
        for line in open(path):
            c, xc, yc, bw, bh, cf = (float(v) for v in line.split())
            rows.append([(xc - bw / 2) * w, (yc - bh / 2) * h, (xc + bw / 2) * w, (yc + bh / 2) * h, cf, c])
    return torch.tensor(rows).view(-1, 6)


def main():
    args = {"model": "", "source": "", "labels": "", "imgsz": "640", "conf": "0.25", "iou": "0.7", "threads": "2"}
    for a in sys.argv[1:]:
        k, _, v = a.partition("=")
        if k not in args:
            sys.exit(f"compare_ultralytics_predict.py: unknown argument {a}; known: {', '.join(args)}")
        args[k] = v
    if not (args["model"] and args["source"] and args["labels"]):
        sys.exit("compare_ultralytics_predict.py: model=, source= and labels= are needed (see the header)")
    torch.set_num_threads(int(args["threads"]))
    model = load_fused(args["model"])
    files = sorted(f for f in os.listdir(args["source"]) if f.lower().endswith((".jpg", ".jpeg", ".png")))
    worst_px = worst_conf = 0.0
    boxes = problems = 0
    for f in files:
        ref, shape = ultralytics_predict(model, os.path.join(args["source"], f), int(args["imgsz"]),
                                         float(args["conf"]), float(args["iou"]))
        ours = read_labels(os.path.join(args["labels"], os.path.splitext(f)[0] + ".txt"), shape)
        if len(ours) != len(ref):
            problems += 1
            print(f"{f}: {len(ours)} detections, Ultralytics {len(ref)}")
            continue
        unmatched = list(range(len(ref)))
        for d in ours:
            same_cls = [i for i in unmatched if ref[i, 5] == d[5]]
            if not same_cls:
                problems += 1
                print(f"{f}: class {int(d[5])} at {d[:4].tolist()} has no Ultralytics counterpart")
                continue
            i = min(same_cls, key=lambda k: float((ref[k, :4] - d[:4]).abs().max()))
            unmatched.remove(i)
            worst_px = max(worst_px, float((ref[i, :4] - d[:4]).abs().max()))
            worst_conf = max(worst_conf, float((ref[i, 4] - d[4]).abs()))
            boxes += 1
    ok = problems == 0 and worst_px <= 0.1 and worst_conf <= 1e-3
    print(f"{len(files)} images, {boxes} detections matched, {problems} mismatches; largest differences: "
          f"{worst_px:.4f} px on a box corner, {worst_conf:.2e} on a confidence -> {'same' if ok else 'DIFFERENT'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
