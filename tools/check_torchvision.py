#!/usr/bin/env python3
"""Holds tools/pillow_reference.py's application of the random operations (crop, resize, flips,
colour jitter, grey) to real torchvision's functional API on PIL images, for a few parameter
draws per file; prints one line and exits 1 on a difference. Run once where torchvision is
installed (it is not a dependency of the tests).

usage: check_torchvision.py FILE...
"""
import os
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pillow_reference import cut, draw, finish  # noqa: E402


def check_torchvision(files):
    import torchvision
    import torchvision.transforms.functional as F

    spec = {"random_resized_crop": {"size": [224, 224]}, "hflip": 0.5, "vflip": 0.5,
            "color_jitter": [0.4, 0.4, 0.4, 0.1], "grayscale": 0.3, "seed": 11}
    checked = 0
    for path in files:
        im = Image.open(path).convert("RGB")
        for index in range(4):
            p = draw(spec, im.size, index)
            mine = finish(np.asarray(cut(im, p, (224, 224), Image.BILINEAR)), p, spec)
            b = p["crop"]
            t = F.resized_crop(im, b["top"], b["left"], b["height"], b["width"], [224, 224],
                               F.InterpolationMode.BILINEAR)
            if p["flip"]:
                t = F.hflip(t)
            if p["vflip"]:
                t = F.vflip(t)
            for name in p["color"]["order"]:
                factor = float(np.float32(p["color"][name]))
                t = getattr(F, f"adjust_{name}")(t, factor)
            if p["grayscale"]:
                t = F.rgb_to_grayscale(t, num_output_channels=3)
            if not np.array_equal(mine, np.asarray(t)):
                print(f"{path} sample {index}: differs from torchvision {torchvision.__version__}")
                sys.exit(1)
            checked += 1
    print(f"{checked} outputs equal to torchvision {torchvision.__version__}'s PIL path")


if __name__ == "__main__":
    check_torchvision(sys.argv[1:])
