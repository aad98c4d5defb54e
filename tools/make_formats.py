#!/usr/bin/env python3
"""Writes tests/data/formats/: one public-domain photo (photos/mpl__grace_hopper.jpg, cropped to an
odd size) saved in every format and mode gpuprep reads besides JPEG, by the pinned Pillow (and, for
the 16-bit PNG modes Pillow cannot write, by a minimal PNG writer here). The decode goldens then
record what Pillow reads back from each.

usage: tools/make_formats.py
"""
import io
import os
import struct
import zlib

import numpy as np
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "formats")


def png16(path, array, color_type):
    """A 16-bit PNG (colour type 0 grey, 2 RGB, 4 grey+alpha, 6 RGBA) of `array` (uint16)."""
    height, width = array.shape[:2]
    rows = array.reshape(height, -1).astype(">u2").tobytes()
    stride = len(rows) // height
    raw = b"".join(b"\0" + rows[y * stride:(y + 1) * stride] for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 16, color_type, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def exif_with_orientation(orientation):
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif.tobytes()


def main():
    os.makedirs(OUT, exist_ok=True)
    photo = Image.open(os.path.join(ROOT, "tests", "data", "photos", "mpl__grace_hopper.jpg"))
    rgb = photo.convert("RGB").crop((101, 57, 101 + 157, 57 + 123))  # 157 x 123: odd sizes
    a = np.asarray(rgb)
    h, w = a.shape[:2]
    ramp = np.tile(np.linspace(0, 255, w, dtype=np.uint8), (h, 1))
    rgba = Image.fromarray(np.dstack([a, ramp]), "RGBA")
    grey = rgb.convert("L")
    paletted = rgb.quantize(64)
    transparent = paletted.copy()
    transparent.info["transparency"] = 5
    out = lambda name: os.path.join(OUT, "made__" + name)
    rgb.save(out("rgb.png"))
    rgba.save(out("rgba.png"))
    grey.save(out("l.png"))
    Image.merge("LA", [grey, Image.fromarray(ramp)]).save(out("la.png"))
    paletted.save(out("p64.png"))
    transparent.save(out("p64_trns.png"), transparency=5)
    grey.point(lambda v: 255 if v > 110 else 0).convert("1").save(out("1bit.png"))
    grey.quantize(4).save(out("p2bit.png"), bits=2)
    # 16-bit grey whose values pass 255 (Pillow holds it as I;16 and clips on convert).
    png16(out("l16.png"), (np.asarray(grey).astype(np.uint16) * 3), 0)
    png16(out("rgb16.png"), (a.astype(np.uint16) * 257 + 3), 2)
    png16(out("rgba16.png"), np.dstack([a, ramp]).astype(np.uint16) * 257, 6)
    png16(out("la16.png"), np.dstack([np.asarray(grey), ramp]).astype(np.uint16) * 257, 4)
    rgb.save(out("exif6.png"), exif=exif_with_orientation(6))
    rgb.save(out("rgb24.bmp"))
    rgba.save(out("rgba32.bmp"))
    paletted.save(out("p8.bmp"))
    grey.save(out("l8.bmp"))
    paletted.save(out("first.gif"))
    paletted.save(out("animated.gif"), save_all=True, append_images=[grey.quantize(16)], duration=100)
    rgb.save(out("rgb.tif"))
    rgb.save(out("rgb_lzw.tif"), compression="tiff_lzw")
    grey.save(out("l_deflate.tif"), compression="tiff_adobe_deflate")
    rgba.save(out("rgba.tif"))
    rgb.save(out("lossless.webp"), lossless=True)
    rgba.save(out("rgba_lossless.webp"), lossless=True)
    rgb.save(out("lossy.webp"), quality=80)
    rgb.save(out("exif3.webp"), lossless=True, exif=exif_with_orientation(3))
    # ICO at the image's own size (Pillow opens the largest entry): PNG frames, and BMP frames.
    rgba.save(out("rgba.ico"), sizes=[rgba.size])
    rgb.save(out("rgb_bmp.ico"), sizes=[rgb.size], bitmap_format="bmp")
    # JPEG 2000 through Pillow's OpenJPEG: lossless JP2 (5/3 wavelet), lossy codestreams (9/7).
    rgb.save(out("rgb.jp2"))
    rgb.save(out("rgb_irreversible.j2k"), irreversible=True, quality_mode="rates", quality_layers=[20])
    grey.save(out("l_irreversible.jp2"), irreversible=True, quality_mode="dB", quality_layers=[38])
    rgba.save(out("rgba.jp2"))
    for name in sorted(os.listdir(OUT)):
        print(name, os.path.getsize(os.path.join(OUT, name)))


if __name__ == "__main__":
    main()
