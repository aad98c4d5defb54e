#!/usr/bin/env python3
"""Single-thread Pillow decoding speed over a folder of JPEGs, to set beside
examples/decode_speed.rs: full decode (convert('RGB')) and draft 1/8 (mostly entropy decoding).

usage: tools/pillow_speed.py DIR [REPEAT]
"""
import glob, io, os, sys, time

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

def main():
    folder = sys.argv[1]
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    paths = sorted(p for p in glob.glob(os.path.join(folder, "*")) if p.lower().endswith((".jpg", ".jpeg")))
    files = [open(p, "rb").read() for p in paths]
    mb = sum(map(len, files)) / 1e6
    for name, fn in [("Pillow draft 1/8", draft8), ("Pillow full decode", full)]:
        secs = best(files, fn, repeat)
        print(f"{folder}: {len(files)} files, {mb:.1f} MB: {name}: {mb / secs:.1f} MB/s, {len(files) / secs:.1f} images/s (1 thread, best of {repeat})")

if __name__ == "__main__":
    main()
