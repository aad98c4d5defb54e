#!/usr/bin/env python3
"""What Pillow + torchvision make of an image under a gpuprep transform spec: the reference that
tools/goldens.py records and that `gpuprep parity --pillow` runs beside gpuprep.

A spec is a JSON object (the entries of tests/goldens/transforms.json): resize ("short:N" or
[w, h]), crop ([w, h]), filter (nearest|box|bilinear|hamming|bicubic|lanczos), draft, normalize
("imagenet" or {"mean": [...], "std": [...]}), dtype (u8|f32|f16), layout (hwc|chw),
channel_order (rgb|bgr), exif_transpose (ImageOps.exif_transpose before convert('RGB')). Pillow resizes; torchvision's CenterCrop/ToTensor/Normalize arithmetic
is done in numpy float32 in torchvision's operation order.

usage: pillow_reference.py SPEC_JSON OUT_DIR FILE...
  writes OUT_DIR/<i>.npy for the i-th file, or OUT_DIR/<i>.err with Pillow's error, and prints
  the Pillow and libjpeg-turbo versions.
"""
import io
import json
import re
import os
import sys

import numpy as np
import PIL
from PIL import Image, ImageOps, features

FILTERS = {"nearest": Image.NEAREST, "box": Image.BOX, "bilinear": Image.BILINEAR, "hamming": Image.HAMMING,
           "bicubic": Image.BICUBIC, "lanczos": Image.LANCZOS}
IMAGENET = {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}


def resize_target(spec, size):
    """torchvision Resize(n) (int(n * long / short)) or an exact (w, h)."""
    resize = spec.get("resize")
    if resize is None:
        return size
    if isinstance(resize, list):
        return tuple(resize)
    n = int(resize.split(":")[1])
    w, h = size
    short, long_ = (w, h) if w <= h else (h, w)
    new_long = int(n * long_ / short)
    return (n, new_long) if w <= h else (new_long, n)


def center_crop(a, crop):
    """torchvision F.center_crop on the HWC array: zero padding, then round-half-even offsets."""
    cw, ch = crop
    h, w = a.shape[:2]
    if cw > w or ch > h:
        pad_l, pad_t = ((cw - w) // 2 if cw > w else 0), ((ch - h) // 2 if ch > h else 0)
        pad_r, pad_b = ((cw - w + 1) // 2 if cw > w else 0), ((ch - h + 1) // 2 if ch > h else 0)
        a = np.pad(a, ((pad_t, pad_b), (pad_l, pad_r), (0, 0)))
        h, w = a.shape[:2]
    top, left = int(round((h - ch) / 2.0)), int(round((w - cw) / 2.0))
    return a[top:top + ch, left:left + cw]


def transformed(path, spec, decoded=None):
    """What Pillow + torchvision make of the file under `spec`, as a NumPy array; `decoded` is
    its `Image.open(f).convert('RGB')` when the caller has it already."""
    if spec.get("draft"):
        with open(path, "rb") as f:
            im = Image.open(io.BytesIO(f.read()))
        im.draft("RGB", resize_target(spec, im.size))
        im = im.convert("RGB")
    elif spec.get("exif_transpose"):
        with open(path, "rb") as f:
            im = ImageOps.exif_transpose(Image.open(io.BytesIO(f.read()))).convert("RGB")
    else:
        if decoded is None:
            with open(path, "rb") as f:
                decoded = Image.open(io.BytesIO(f.read())).convert("RGB")
        im = decoded
    target = resize_target(spec, im.size)
    if target != im.size:
        im = im.resize(target, FILTERS[spec.get("filter", "bilinear")])
    a = np.asarray(im)
    if "crop" in spec:
        a = center_crop(a, spec["crop"])
    dtype = spec.get("dtype", "u8")
    if dtype != "u8":
        t = a.astype(np.float32) / np.float32(255)
        norm = spec.get("normalize")
        if norm is not None:
            norm = IMAGENET if norm == "imagenet" else norm
            t = (t - np.array(norm["mean"], np.float32)) / np.array(norm["std"], np.float32)
        a = t.astype(np.float16) if dtype == "f16" else t
    if spec.get("channel_order") == "bgr":
        a = a[:, :, ::-1]
    if spec.get("layout", "hwc") == "chw":
        a = a.transpose(2, 0, 1)
    return np.ascontiguousarray(a)


def readable(error, path):
    """Pillow's message, with the in-memory file it was given named by its path instead of a
    Python object repr ("cannot identify image file <_io.BytesIO object at 0x...>")."""
    return re.sub(r"<_io\.BytesIO object at 0x[0-9a-fA-F]+>", path, str(error))


def main():
    spec, out_dir, files = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3:]
    for i, path in enumerate(files):
        try:
            np.save(os.path.join(out_dir, f"{i}.npy"), transformed(path, spec))
        except Exception as e:  # Pillow's verdict is the reference, whatever it raises
            with open(os.path.join(out_dir, f"{i}.err"), "w") as f:
                f.write(f"{type(e).__name__}: {readable(e, path)}")
    print(f"Pillow {PIL.__version__}, libjpeg-turbo {features.version('libjpeg_turbo')}")


if __name__ == "__main__":
    main()
