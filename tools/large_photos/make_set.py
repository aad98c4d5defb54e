"""make_set.py SOURCE OUT: the large-photo benchmark set, the camera photos users train on.

Every photo of SOURCE of 4 megapixels or more, as it is, and crops of the largest one
re-encoded by Pillow at the motivating case's shapes (3000x2000 and 4000x3000, its landscape
photos of 2.5 MB on average; 2000x3000 portrait too): qualities 85, 90 and 95, 4:2:0 and 4:4:4,
with and without restart markers (every MCU row, and every 64 MCUs), one progressive. Prints a
JSON line per file written (name, size, bytes, what it is). Pillow's own encoder makes the
re-encodes, so the set is the same wherever it is built from the same photos and Pillow."""
import io, json, os, sys

from PIL import Image

source, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)


def pixels(path):
    with Image.open(path) as im:
        return im.size[0] * im.size[1]


photos = sorted(os.path.join(source, f) for f in os.listdir(source)
                if f.lower().endswith((".jpg", ".jpeg")))
large = [p for p in photos if pixels(p) >= 4_000_000]
if not large:
    sys.exit(f"{source}: no photo of 4 megapixels or more")


def record(name, data, what):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
    with Image.open(io.BytesIO(data)) as im:
        size = im.size
    print(json.dumps({"file": name, "size": size, "bytes": len(data), "what": what}))


for path in large:
    with open(path, "rb") as f:
        record("as-is-" + os.path.basename(path), f.read(), "the photo as taken")

largest = max(large, key=pixels)
with Image.open(largest) as im:
    photo = im.convert("RGB")
width, height = photo.size
# (shape, quality, subsampling, restart interval, progressive): the shapes in turn over the
# settings, each shape cut from the photo's centre.
settings = [
    (q, s, r, False) for q in (85, 90, 95) for s in ("4:2:0", "4:4:4") for r in (None, "rows")
] + [(90, "4:2:0", "blocks", False), (95, "4:2:0", "rows", False), (90, "4:2:0", None, True)]
shapes = [(3000, 2000), (4000, 3000), (2000, 3000)]
for k, (quality, subsampling, restart, progressive) in enumerate(settings):
    w, h = shapes[k % len(shapes)]
    if w > width or h > height:
        w, h = min(w, width), min(h, height)
    left, top = (width - w) // 2, (height - h) // 2
    crop = photo.crop((left, top, left + w, top + h))
    options = {"quality": quality, "subsampling": subsampling, "progressive": progressive}
    mcus_across = -(-w // (16 if subsampling == "4:2:0" else 8))
    if restart == "rows":
        options["restart_marker_rows"] = 1
    elif restart == "blocks":
        options["restart_marker_blocks"] = 64
    buffer = io.BytesIO()
    crop.save(buffer, "JPEG", **options)
    name = (f"crop-{w}x{h}-q{quality}-{subsampling.replace(':', '')}"
            f"{'-rst-' + restart if restart else ''}{'-progressive' if progressive else ''}.jpg")
    what = dict(options, restart=restart, mcus_across=mcus_across, cut_from=os.path.basename(largest))
    record(name, buffer.getvalue(), what)
