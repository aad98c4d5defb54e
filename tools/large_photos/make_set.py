"""Builds the large-photo benchmark set from a folder of camera photos: every photo of 4 MP or
more as it is, and crops of the two largest re-encoded by Pillow to the shapes camera datasets
hold (3000x2000 and 4000x3000) at quality 85 and 95, 4:2:0 and 4:4:4, plus each at quality 90 with
a restart marker every MCU row and progressive. Prints one JSON line per file: its size, shape,
and the bytes of its entropy-coded data (what GPU Huffman decoding reads).

usage: python3 tools/large_photos/make_set.py PHOTOS_DIR OUT_DIR
"""
import json
import os
import sys

from PIL import Image

SHAPES = [(3000, 2000), (4000, 3000)]
SUBSAMPLING = {"420": 2, "444": 0}  # Pillow's subsampling codes


def entropy_coded_bytes(data):
    """Bytes of a JPEG's scans: from each SOS segment's end to the next marker that is not a
    restart marker or a stuffed 0xFF00 (the EOI, or the next scan's tables)."""
    total, i = 0, 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            raise ValueError("not at a marker")
        marker = data[i + 1]
        if marker == 0xD9:
            break
        length = int.from_bytes(data[i + 2:i + 4], "big")
        i += 2 + length
        if marker != 0xDA:
            continue
        start = i
        while i + 1 < len(data) and not (data[i] == 0xFF and data[i + 1] not in (0x00, *range(0xD0, 0xD8))):
            i += 1
        total += i - start
    return total


def centre_crop(image, width, height):
    left, top = (image.width - width) // 2, (image.height - height) // 2
    return image.crop((left, top, left + width, top + height))


def main(src, out):
    os.makedirs(out, exist_ok=True)
    photos = []
    for name in sorted(os.listdir(src)):
        with Image.open(os.path.join(src, name)) as image:
            if image.width * image.height >= 4_000_000:
                photos.append((image.width * image.height, name))
    made = []
    for _, name in photos:
        target = os.path.join(out, "orig-" + name)
        with open(os.path.join(src, name), "rb") as f, open(target, "wb") as g:
            g.write(f.read())
        made.append(target)
    for _, name in sorted(photos, reverse=True)[:2]:
        stem = os.path.splitext(name)[0].split("__")[-1][:12]
        image = Image.open(os.path.join(src, name)).convert("RGB")
        for width, height in SHAPES:
            if image.width < width or image.height < height:
                continue
            crop = centre_crop(image, width, height)
            variants = [(f"q{q}-{s}", dict(quality=q, subsampling=code))
                        for q in (85, 95) for s, code in SUBSAMPLING.items()]
            variants.append(("q90-420-rst", dict(quality=90, subsampling=2, restart_marker_rows=1)))
            variants.append(("q90-420-prog", dict(quality=90, subsampling=2, progressive=True)))
            for label, options in variants:
                target = os.path.join(out, f"{stem}-{width}x{height}-{label}.jpg")
                crop.save(target, "JPEG", **options)
                made.append(target)
    for path in made:
        with open(path, "rb") as f:
            data = f.read()
        with Image.open(path) as image:
            print(json.dumps({"file": os.path.basename(path), "bytes": len(data),
                              "width": image.width, "height": image.height,
                              "progressive": bool(image.info.get("progressive")),
                              "entropy_coded_bytes": entropy_coded_bytes(data)}))


if __name__ == "__main__":
    main(*sys.argv[1:])
