#!/usr/bin/python3
"""torchvision's RandAugment operators on a PIL image, as Ultralytics 8.4.117 runs them for
classification's default auto_augment=randaugment (data/augment.py classify_augmentations:
T.RandAugment(interpolation=BILINEAR), num_ops 2, magnitude 9 of 31 bins, fill None = black).

Writes OUT_DIR/input.png (a 40 x 32 picture made here from a seeded numpy generator: gradients,
flat patches, pure black and white, noise) and, for each of RandAugment's 14 operators at
magnitude 9 (both signs where the operator is signed), OUT_DIR/<op>_<sign>.png: what
torchvision's own _apply_op gives on that image; OUT_DIR/randaugment.json lists them with the
magnitude torchvision used. tests/unit/data/rand_augment_test.cpp checks yolotrain's operators
against these files pixel for pixel.

Run with Debian's python3-torchvision and python3-pil (bookworm: torchvision 0.14.1, Pillow 9.4.0):
  /usr/bin/python3 scripts/torchvision_randaugment.py tests/unit/data/data/randaugment
"""
import json
import pathlib
import sys

import numpy as np
import PIL
import torchvision
from PIL import Image
from torchvision.transforms import InterpolationMode, RandAugment
from torchvision.transforms.autoaugment import _apply_op


def make_input(height=32, width=40):
    rng = np.random.RandomState(0)
    y, x = np.mgrid[0:height, 0:width]
    img = np.stack([x * 255 // (width - 1), y * 255 // (height - 1), (x + y) * 127 // (width + height - 2)], -1)
    img = img + rng.randint(-20, 21, img.shape)
    img[4:12, 5:15] = (250, 30, 90)  # a flat saturated patch
    img[20:28, 22:34] = (0, 0, 0)  # pure black
    img[2:8, 28:36] = (255, 255, 255)  # pure white
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB")


def main(out_dir):
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    img = make_input()
    img.save(out / "input.png")
    ra = RandAugment(interpolation=InterpolationMode.BILINEAR)
    space = ra._augmentation_space(ra.num_magnitude_bins, (img.height, img.width))
    ops = []
    for name, (magnitudes, signed) in space.items():
        magnitude = float(magnitudes[ra.magnitude].item()) if magnitudes.ndim > 0 else 0.0
        for sign in ("+", "-") if signed else ("+",):
            m = -magnitude if sign == "-" else magnitude
            result = _apply_op(img, name, m, interpolation=ra.interpolation, fill=ra.fill)
            file = f"{name}_{'neg' if sign == '-' else 'pos'}.png"
            result.save(out / file)
            ops.append({"op": name, "magnitude": m, "file": file})
    meta = {"torchvision": torchvision.__version__, "pillow": PIL.__version__, "num_ops": ra.num_ops,
            "magnitude_bin": ra.magnitude, "num_magnitude_bins": ra.num_magnitude_bins, "ops": ops}
    (out / "randaugment.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
