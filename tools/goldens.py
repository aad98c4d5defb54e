#!/usr/bin/env python3
"""Writes the expected outputs the tests compare against, computed with real Pillow.

For every image under the given roots (default: tests/data, and ../shared/corpus when it exists)
it records the SHA-256 of Pillow's `np.asarray(Image.open(f).convert('RGB'))`, or the error
Pillow raised, into tests/goldens/decode.tsv, keyed by the path relative to its root.

usage:
  tools/goldens.py            regenerate tests/goldens/decode.tsv
  tools/goldens.py --check    regenerate in memory and fail if the committed file differs
  tools/goldens.py --dump IMAGE OUT.ppm
                              write Pillow's RGB pixels of IMAGE as a binary PPM (used by the
                              tests to draw expected/actual/diff images on a mismatch)

Pillow is pinned (tools/requirements.txt); its wheel bundles libjpeg-turbo, whose version is
recorded in the header too. The files are hashed, so a changed input is noticed.
"""
import argparse
import hashlib
import io
import re
import os
import sys

import numpy as np
import PIL
from PIL import Image, features

PINNED_PILLOW = "12.0.0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDENS = os.path.join(ROOT, "tests", "goldens", "decode.tsv")
DEFAULT_ROOTS = [os.path.join(ROOT, "tests", "data"), os.path.join(ROOT, "..", "shared", "corpus")]
FOLDERS = ("conformance", "photos", "malformed")
COLUMNS = ["file", "file_sha256", "width", "height", "rgb_sha256", "pillow_error"]


def pillow_rgb(path):
    with open(path, "rb") as f:
        blob = f.read()
    im = Image.open(io.BytesIO(blob))
    return np.asarray(im.convert("RGB"))


def golden_row(root, rel):
    path = os.path.join(root, rel)
    with open(path, "rb") as f:
        file_sha = hashlib.sha256(f.read()).hexdigest()
    try:
        rgb = pillow_rgb(path)
    except Exception as e:  # Pillow's verdict is the golden, whatever it raises
        message = f"{type(e).__name__}: {e}".replace("\t", " ").replace("\n", " ")
        message = re.sub(r" at 0x[0-9a-f]+", "", message)  # object addresses change per run
        return [rel, file_sha, "", "", "", message]
    h, w, _ = rgb.shape
    rgb_sha = hashlib.sha256(np.ascontiguousarray(rgb).tobytes()).hexdigest()
    return [rel, file_sha, str(w), str(h), rgb_sha, ""]


def images_under(root):
    for folder in FOLDERS:
        base = os.path.join(root, folder)
        if not os.path.isdir(base):
            continue
        for name in sorted(os.listdir(base)):
            if os.path.isfile(os.path.join(base, name)):
                yield f"{folder}/{name}"


def build(roots):
    rows = {}
    for root in roots:
        if not os.path.isdir(root):
            continue
        for rel in images_under(root):
            row = golden_row(root, rel)
            if rel in rows and rows[rel][1] != row[1]:
                sys.exit(f"{rel}: differs between roots; keep tests/data a copy of the corpus")
            rows[rel] = row
    header = [
        f"# Pillow {PIL.__version__}, libjpeg-turbo {features.version('libjpeg_turbo')}",
        "# made by: python3 tools/goldens.py  (rgb_sha256 = sha256 of np.asarray(Image.open(f).convert('RGB')))",
        "\t".join(COLUMNS),
    ]
    body = ["\t".join(rows[k]) for k in sorted(rows)]
    return "\n".join(header + body) + "\n"


def dump_ppm(image, out):
    rgb = pillow_rgb(image)
    h, w, _ = rgb.shape
    with open(out, "wb") as f:
        f.write(f"P6\n{w} {h}\n255\n".encode())
        f.write(np.ascontiguousarray(rgb).tobytes())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--dump", nargs=2, metavar=("IMAGE", "OUT_PPM"))
    parser.add_argument("roots", nargs="*", default=DEFAULT_ROOTS)
    args = parser.parse_args()
    if args.dump:
        dump_ppm(*args.dump)
        return
    if PIL.__version__ != PINNED_PILLOW or not features.check_feature("libjpeg_turbo"):
        sys.exit(f"goldens need Pillow {PINNED_PILLOW} with libjpeg-turbo: pip install -r tools/requirements.txt")
    text = build(args.roots)
    if not args.check:
        os.makedirs(os.path.dirname(GOLDENS), exist_ok=True)
        with open(GOLDENS, "w") as f:
            f.write(text)
        print(f"wrote {GOLDENS}: {text.count(chr(10)) - 3} images")
        return
    with open(GOLDENS) as f:
        committed = f.read()
    # Without the shared corpus only the tests/data rows can be re-made: compare those.
    fresh = {line.split("\t")[0]: line for line in text.splitlines() if not line.startswith("#")}
    old = {line.split("\t")[0]: line for line in committed.splitlines() if not line.startswith("#")}
    stale = [k for k in fresh if old.get(k) != fresh[k]]
    if stale:
        sys.exit(f"tests/goldens/decode.tsv is stale for {len(stale)} images, e.g. {stale[:3]}: run tools/goldens.py")
    print(f"goldens: {len(fresh) - 1} images re-made with Pillow {PIL.__version__}: all match the committed file")


if __name__ == "__main__":
    main()
