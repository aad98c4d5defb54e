#!/usr/bin/env python3
"""Writes the expected outputs the tests compare against, computed with real Pillow.

For every image under the given roots (default: tests/data, and ../shared/corpus when it exists)
it records the SHA-256 of Pillow's `np.asarray(Image.open(f).convert('RGB'))`, or the error
Pillow raised, into tests/goldens/decode.tsv, keyed by the path relative to its root; and for
every image Pillow decodes (but JPEGs of processes gpuprep does not decode), the SHA-256 of each
transform of tests/goldens/transforms.json
(Pillow resize + torchvision's Resize/CenterCrop/ToTensor/Normalize arithmetic, done in numpy
float32 in torchvision's operation order) into tests/goldens/transforms.tsv; and for truncations
of every such JPEG of tests/data, what Pillow makes of them with and without
`ImageFile.LOAD_TRUNCATED_IMAGES` into tests/goldens/truncated.tsv.

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
import multiprocessing
import io
import json
import re
import os
import sys

import numpy as np
import PIL
from PIL import Image, ImageFile, features

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pillow_reference import draw, is_random, padded_size, resize_target, resolved, transformed  # noqa: E402  (the reference gpuprep parity runs too)

PINNED_PILLOW = "12.0.0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDENS = os.path.join(ROOT, "tests", "goldens", "decode.tsv")
TRANSFORM_GOLDENS = os.path.join(ROOT, "tests", "goldens", "transforms.tsv")
ENCODE_GOLDENS = os.path.join(ROOT, "tests", "goldens", "encode.tsv")
TRANSFORMS = os.path.join(ROOT, "tests", "goldens", "transforms.json")
TRUNCATED_GOLDENS = os.path.join(ROOT, "tests", "goldens", "truncated.tsv")
HSV_GOLDENS = os.path.join(ROOT, "tests", "goldens", "hsv.tsv")
TRUNCATION_FRACTIONS = (0.1, 0.35, 0.6, 0.85, 0.99)
DEFAULT_ROOTS = [os.path.join(ROOT, "tests", "data"), os.path.join(ROOT, "..", "shared", "corpus")]
FOLDERS = ("conformance", "photos", "malformed", "formats")
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


def is_huffman_dct(blob):
    """True for a JPEG whose frame is baseline, extended or progressive Huffman (SOF0-SOF2): the
    files gpuprep transforms. (Pillow's draft crashes on lossless files.)"""
    i = 2
    while i + 4 <= len(blob):
        if blob[i] != 0xFF:
            i += 1
            continue
        marker = blob[i + 1]
        if marker in (0xC0, 0xC1, 0xC2):
            return True
        if 0xC3 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return False
        if marker == 0xFF or marker == 0x00 or 0xD0 <= marker <= 0xD9:
            i += 1 if marker == 0xFF else 2
            continue
        i += 2 + (blob[i + 2] << 8 | blob[i + 3])
    return False


def transform_rows(task):
    """The golden rows of one file: {(file, name): row} for every spec (and sample) it takes."""
    root, rel, specs = task
    rows = {}
    path = os.path.join(root, rel)
    with open(path, "rb") as f:
        blob = f.read()
    if blob.startswith(b"\xff\xd8") and not is_huffman_dct(blob):
        return {}  # JPEG processes gpuprep names as unsupported
    try:
        decoded = Image.open(io.BytesIO(blob)).convert("RGB")
    except Exception:
        return {}  # Pillow refuses the file: no transform goldens
    for spec in specs:
        if 0 in resize_target(spec, decoded.size):
            continue  # Resize(max_size=...) shortens a thin image to nothing: Pillow refuses
        crop = spec.get("random_crop")
        if crop and any(c > p for c, p in zip((crop["width"], crop["height"]),
                                              padded_size(spec, decoded.size))):
            continue  # torchvision's RandomCrop refuses a crop larger than the image
        # A random spec: `draws` samples of it, named name#index, with their parameters;
        # with `spread`, each file's samples have indices of their own (from its name), so
        # that the files between them see many draws (TrivialAugmentWide's operations).
        draws = range(spec.get("draws", 1)) if is_random(spec) else [None]
        if spec.get("spread") and is_random(spec):
            first = int(hashlib.sha256(rel.encode()).hexdigest()[:6], 16) * len(draws)
            draws = [first + d for d in draws]
        for index in draws:
            if index is not None and ("random_resize" in spec
                                      or "random_shortest_size" in spec):
                # The resize this sample draws: skipped where Pillow or RandomCrop
                # would refuse what it makes, as above.
                drawn = draw(spec, decoded.size, index).get("resize")
                sized = resolved(spec, drawn, decoded.size)
                crop = spec.get("random_crop")
                if 0 in resize_target(sized, decoded.size) or (crop and any(
                        c > p for c, p in zip((crop["width"], crop["height"]),
                                              padded_size(sized, decoded.size)))):
                    continue
            a = transformed(path, spec, decoded, index or 0)
            sha = hashlib.sha256(a.astype(a.dtype.newbyteorder("<")).tobytes()).hexdigest()
            shape = "x".join(map(str, a.shape))
            name = spec["name"] if index is None else f"{spec['name']}#{index}"
            params = "" if index is None else json.dumps(
                draw(spec, decoded.size, index), separators=(",", ":"))
            rows[(rel, name)] = [rel, name, shape, str(a.dtype), sha, params]
    return rows


def build_transforms(roots):
    with open(TRANSFORMS) as f:
        specs = json.load(f)
    files = [(root, rel, specs) for root in roots if os.path.isdir(root)
             for rel in images_under(root)]
    rows = {}
    # One file a task, over every core (each file's rows depend on that file alone), in order,
    # so that a file under two roots keeps the later root's rows, as one loop would.
    with multiprocessing.Pool() as pool:
        for file_rows in pool.imap(transform_rows, files, chunksize=4):
            rows.update(file_rows)
    header = [
        f"# Pillow {PIL.__version__}, libjpeg-turbo {features.version('libjpeg_turbo')}, numpy {np.__version__}",
        "# made by: python3 tools/goldens.py  (sha256 of the little-endian array bytes, C order)",
        "file\ttransform\tshape\tdtype\tsha256\tparams",
    ]
    return "\n".join(header + ["\t".join(rows[k]) for k in sorted(rows)]) + "\n"


def pillow_verdict(blob, load_truncated):
    """(sha256 of the RGB pixels, "", whether every value is the same) or ("", Pillow's error,
    False) for `blob`."""
    ImageFile.LOAD_TRUNCATED_IMAGES = load_truncated
    try:
        rgb = np.asarray(Image.open(io.BytesIO(blob)).convert("RGB"))
    except Exception as e:
        message = f"{type(e).__name__}: {e}".replace("\t", " ").replace("\n", " ")
        return "", re.sub(r" at 0x[0-9a-f]+", "", message), False
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = False
    blank = bool((rgb == rgb.flat[0]).all())
    return hashlib.sha256(np.ascontiguousarray(rgb).tobytes()).hexdigest(), "", blank


def first_scan_data(blob):
    """Offset just past the first SOS segment (where Pillow's own header parsing stops)."""
    i = 2
    while i + 4 <= len(blob):
        if blob[i] != 0xFF or blob[i + 1] in (0x00, 0xFF) or 0xD0 <= blob[i + 1] <= 0xD7:
            i += 1
            continue
        length = blob[i + 2] << 8 | blob[i + 3]
        if blob[i + 1] == 0xDA:
            return i + 2 + length
        i += 2 + length
    return None


def truncation_points(blob):
    """Where the tests cut a file: through its data at fixed fractions, just after the first
    scan header, inside it, and just before the end-of-image marker."""
    points = {int(len(blob) * f) for f in TRUNCATION_FRACTIONS} | {len(blob) - 2}
    sos_end = first_scan_data(blob)
    if sos_end is not None:
        points |= {sos_end, sos_end - 1}
    return sorted(p for p in points if 0 < p < len(blob))


def build_truncated():
    root = os.path.join(ROOT, "tests", "data")
    rows = []
    for rel in images_under(root):
        with open(os.path.join(root, rel), "rb") as f:
            blob = f.read()
        if not blob.startswith(b"\xff\xd8") or not is_huffman_dct(blob):
            continue
        if pillow_verdict(blob, False)[1]:
            continue  # only files Pillow decodes whole
        for kept in truncation_points(blob):
            _, strict_error, _ = pillow_verdict(blob[:kept], False)
            sha, lenient_error, blank = pillow_verdict(blob[:kept], True)
            rows.append([rel, str(kept), strict_error, sha, "yes" if blank else "", lenient_error])
    header = [
        f"# Pillow {PIL.__version__}, libjpeg-turbo {features.version('libjpeg_turbo')}",
        "# made by: python3 tools/goldens.py  (the first `kept` bytes of `file`; strict: Pillow's error by default;"
        " rgb_sha256/lenient_error: with ImageFile.LOAD_TRUNCATED_IMAGES = True; blank: every value of that image the same)",
        "file\tkept\tstrict_error\trgb_sha256\tblank\tlenient_error",
    ]
    return "\n".join(header + ["\t".join(r) for r in rows]) + "\n"


def dump_ppm(image, out):
    rgb = pillow_rgb(image)
    h, w, _ = rgb.shape
    with open(out, "wb") as f:
        f.write(f"P6\n{w} {h}\n255\n".encode())
        f.write(np.ascontiguousarray(rgb).tobytes())


def build_hsv():
    """Pillow's HSV conversions over every input: convert('HSV') of a 4096 x 4096 RGB image
    holding each of the 2^24 colours once (pixel i = (i >> 16, i >> 8 & 255, i & 255)), and
    convert('RGB') of the HSV image holding each (h, s, v) once in the same order; the SHA-256
    of each result's bytes (H x W x 3). torchvision's adjust_hue is these two conversions around
    a shift of the H channel, so matching both is the hue adjustment, exhaustively."""
    every = np.arange(1 << 24, dtype=np.uint32)
    planes = np.stack([every >> 16, (every >> 8) & 255, every & 255], axis=-1).astype(np.uint8)
    planes = planes.reshape(4096, 4096, 3)
    to_hsv = np.asarray(Image.fromarray(planes, "RGB").convert("HSV"))
    to_rgb = np.asarray(Image.frombytes("HSV", (4096, 4096), planes.tobytes()).convert("RGB"))
    sha = lambda a: hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
    header = [
        f"# Pillow {PIL.__version__}",
        "# made by: python3 tools/goldens.py  (sha256 of the H x W x 3 bytes of each conversion of all 2^24 inputs)",
        "conversion\tsha256",
    ]
    return "\n".join(header + [f"rgb_to_hsv\t{sha(to_hsv)}", f"hsv_to_rgb\t{sha(to_rgb)}"]) + "\n"


# The JPEG encoder's cases: crops of the bundled photos (odd sizes, sides not multiples of 16),
# each as RGB and as grey ("L": the crop's green channel), saved with each subsampling (and
# without one: Pillow's default) at these qualities; every photo whole at two; and one crop at
# every quality 1 to 100; and the same crops and photos with optimize=True (Huffman tables made for
# the image) at a few qualities.
ENCODE_CROPS = [(1, 1), (7, 9), (17, 33), (30, 22), (100, 75)]
ENCODE_QUALITIES = [1, 5, 50, 75, 90, 95, 100]
ENCODE_SUBSAMPLINGS = {"default": None, "4:4:4": 0, "4:2:2": 1, "4:2:0": 2}


def build_encode():
    """SHA-256 of the bytes of Image.save(f, "JPEG", quality=Q[, subsampling=S]) for each case
    above; the pixels are Pillow's RGB of a bundled photo, cropped at its top left."""
    photos = sorted(os.listdir(os.path.join(ROOT, "tests", "data", "photos")))
    rows = []

    def add(photo, rgb, width, height, mode, subsampling, quality, optimize=False):
        crop = np.ascontiguousarray(rgb[:height, :width])
        image = Image.fromarray(np.ascontiguousarray(crop[:, :, 1]) if mode == "L" else crop)
        extra = {} if ENCODE_SUBSAMPLINGS[subsampling] is None else {"subsampling": ENCODE_SUBSAMPLINGS[subsampling]}
        if optimize:
            extra["optimize"] = True
        out = io.BytesIO()
        image.save(out, "JPEG", quality=quality, **extra)
        rows.append([photo, str(width), str(height), mode, subsampling, str(quality),
                     "yes" if optimize else "", hashlib.sha256(out.getvalue()).hexdigest()])

    for n, photo in enumerate(photos):
        rgb = pillow_rgb(os.path.join(ROOT, "tests", "data", "photos", photo))
        height, width, _ = rgb.shape
        for mode in ("RGB", "L"):
            for subsampling in ENCODE_SUBSAMPLINGS:
                for quality in (75, 90):
                    add(photo, rgb, width, height, mode, subsampling, quality)
                add(photo, rgb, width, height, mode, subsampling, 90, optimize=True)
                if n < 3:
                    for w, h in ENCODE_CROPS:
                        for quality in ENCODE_QUALITIES:
                            add(photo, rgb, w, h, mode, subsampling, quality)
                        for quality in (5, 75, 95):
                            add(photo, rgb, w, h, mode, subsampling, quality, optimize=True)
            if n == 0:
                for quality in range(1, 101):
                    if quality not in ENCODE_QUALITIES:
                        add(photo, rgb, 100, 75, mode, "default", quality)
    header = [
        f"# Pillow {PIL.__version__}, libjpeg-turbo {features.version('libjpeg_turbo')}",
        "# made by: python3 tools/goldens.py  (sha256 of the file Image.save(f, 'JPEG', quality=quality[, subsampling=...][, optimize=True]) writes"
        " of the photo's Pillow RGB cropped to width x height at its top left; mode L: the crop's green channel)",
        "photo\twidth\theight\tmode\tsubsampling\tquality\toptimize\tjpeg_sha256",
    ]
    return "\n".join(header + ["\t".join(r) for r in rows]) + "\n"


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
    outputs = [
        (GOLDENS, build(args.roots), 1),
        (TRANSFORM_GOLDENS, build_transforms(args.roots), 2),
        (TRUNCATED_GOLDENS, build_truncated(), 2),
        (HSV_GOLDENS, build_hsv(), 1),
        (ENCODE_GOLDENS, build_encode(), 7),
    ]
    for path, text, key_columns in outputs:
        name = os.path.relpath(path, ROOT)
        if not args.check:
            with open(path, "w") as f:
                f.write(text)
            print(f"wrote {name}: {text.count(chr(10)) - 3} rows")
            continue
        with open(path) as f:
            committed = f.read()
        # Without the shared corpus only the tests/data rows can be re-made: compare those.
        key = lambda line: tuple(line.split("\t")[:key_columns])
        fresh = {key(line): line for line in text.splitlines() if not line.startswith("#")}
        old = {key(line): line for line in committed.splitlines() if not line.startswith("#")}
        stale = [k for k in fresh if old.get(k) != fresh[k]]
        if stale:
            sys.exit(f"{name} is stale for {len(stale)} rows, e.g. {stale[:3]}: run tools/goldens.py")
        print(f"{name}: {len(fresh) - 1} rows re-made with Pillow {PIL.__version__}: all match the committed file")


if __name__ == "__main__":
    main()
