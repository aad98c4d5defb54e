#!/usr/bin/env python3
"""Single-thread Pillow decoding speed over a folder of JPEGs, to set beside
examples/decode_speed.rs: full decode (convert('RGB')) and draft 1/8 (mostly entropy decoding).

usage: tools/pillow_speed.py DIR [REPEAT]
"""
import glob, io, os, sys, time

import numpy as np
from PIL import Image

def best(files, fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for blob in files:
            fn(blob)
        times.append(time.perf_counter() - t0)
    return min(times)

def full(blob):
    Image.open(io.BytesIO(blob)).convert("RGB")

def draft8(blob):
    im = Image.open(io.BytesIO(blob))
    im.draft("RGB", (im.width // 8, im.height // 8))
    im.convert("RGB")

MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)


def tensor(im):
    """torchvision ToTensor() + Normalize(ImageNet), in numpy float32."""
    t = np.asarray(im).transpose(2, 0, 1).astype(np.float32) / np.float32(255)
    return (t - MEAN) / STD


def resize224(blob):
    tensor(Image.open(io.BytesIO(blob)).convert("RGB").resize((224, 224), Image.BILINEAR))


def imagenet_eval(blob):
    im = Image.open(io.BytesIO(blob)).convert("RGB")
    w, h = im.size
    short, long_ = (w, h) if w <= h else (h, w)
    nw, nh = (256, int(256 * long_ / short)) if w <= h else (int(256 * long_ / short), 256)
    if (nw, nh) != (w, h):
        im = im.resize((nw, nh), Image.BILINEAR)
    left, top = int(round((nw - 224) / 2.0)), int(round((nh - 224) / 2.0))
    tensor(im.crop((left, top, left + 224, top + 224)))


def main():
    folder = sys.argv[1]
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    paths = sorted(p for p in glob.glob(os.path.join(folder, "*")) if p.lower().endswith((".jpg", ".jpeg")))
    files = [open(p, "rb").read() for p in paths]
    mb = sum(map(len, files)) / 1e6
    for name, fn in [("Pillow draft 1/8", draft8), ("Pillow full decode", full),
                     ("Pillow decode + resize 224x224 + normalize", resize224),
                     ("Pillow decode + imagenet eval", imagenet_eval)]:
        secs = best(files, fn, repeat)
        print(f"{folder}: {len(files)} files, {mb:.1f} MB: {name}: {mb / secs:.1f} MB/s, {len(files) / secs:.1f} images/s (1 thread, best of {repeat})")

if __name__ == "__main__":
    main()
