#!/usr/bin/env python3
"""Writes tests/data/webdataset/: two WebDataset shards made with the webdataset package's own
writer (webdataset.TarWriter, pinned below), from small images of tests/data, and
tests/data/webdataset/expected.json: every sample's key, label and image file in shard order,
which the loader test reads them back against.

Shard 0 labels its samples with `.cls` members, shard 1 with `.json` ones ({"label": n}); one
sample of shard 1 has a corrupt image (the loader must fail it alone) and one a PNG.

usage: tools/make_webdataset.py   (pip install webdataset==0.2.111)
"""
import json
import os

import webdataset

PINNED = "0.2.111"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
OUT = os.path.join(DATA, "webdataset")

SHARDS = [
    [
        ("conformance/jsuite__baseline__32x32x8_ycbcr.jpg", 3),
        ("conformance/jsuite__baseline__32x32x8_rgb.jpg", 0),
        ("conformance/jsuite__progressive_huffman__32x32x8_ycbcr_interleaved.jpg", 7),
        ("conformance/ljt__testimgcrop.jpg", 1),
        ("conformance/exifsamples__Fujifilm_FinePix_E500.jpg", 2),
    ],
    [
        ("conformance/jsuite__baseline__32x32x8_cmyk.jpg", 5),
        ("formats/made__rgb.png", 4),
        (None, 6),  # a corrupt image: a JPEG cut short
        ("conformance/pillow__hopper_16bit_qtables.jpg", 8),
    ],
]


def main():
    assert webdataset.__version__ == PINNED, f"webdataset {webdataset.__version__}, pinned {PINNED}"
    os.makedirs(OUT, exist_ok=True)
    expected = []
    for s, samples in enumerate(SHARDS):
        path = os.path.join(OUT, f"shard-{s:06d}.tar")
        with webdataset.TarWriter(path) as sink:
            for i, (image, label) in enumerate(samples):
                key = f"sample{s}{i:03d}"
                if image is None:
                    with open(os.path.join(DATA, SHARDS[0][0][0]), "rb") as f:
                        data, ext = f.read()[:300], "jpg"
                else:
                    with open(os.path.join(DATA, image), "rb") as f:
                        data, ext = f.read(), image.rsplit(".", 1)[1]
                sample = {"__key__": key, ext: data}
                if s == 0:
                    sample["cls"] = label
                else:
                    sample["json"] = {"label": label}
                sink.write(sample)
                expected.append({"shard": s, "key": key, "label": label, "image": image})
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump({"webdataset": PINNED, "samples": expected}, f, indent=1)
        f.write("\n")
    print(f"wrote {len(SHARDS)} shards, {len(expected)} samples, into {OUT}")


if __name__ == "__main__":
    main()
