#!/usr/bin/env python3
"""What Pillow + torchvision make of an image under a gpuprep transform spec: the reference that
tools/goldens.py records and that `gpuprep parity --pillow` runs beside gpuprep.

A spec is a JSON object (the entries of tests/goldens/transforms.json): resize ("short:N",
"short:N:MAX_SIZE", "keep_ratio:W:H[:longest]" (timm's ResizeKeepRatio) or
[w, h]), crop ([w, h]), filter (nearest|box|bilinear|hamming|bicubic|lanczos), draft, normalize
("imagenet" or {"mean": [...], "std": [...]}), dtype (u8|f32|f16), layout (hwc|chw),
channel_order (rgb|bgr), exif_transpose (ImageOps.exif_transpose before convert('RGB')). Pillow resizes; torchvision's CenterCrop/ToTensor/Normalize arithmetic
is done in numpy float32 in torchvision's operation order. The random operations
(random_resized_crop {size, scale, ratio}, hflip P, vflip P, random_rotation {degrees, fill,
interpolation, center}, random_affine {degrees, translate, scale, shear, interpolation, fill, center,
v2 (transforms.v2's matrix arithmetic)}, random_perspective {distortion_scale, p, interpolation,
fill},
trivial_augment {bins, fill, interpolation}, rand_augment {num_ops, magnitude, bins,
fill, interpolation}, auto_augment {policy, fill, interpolation} (interpolation nearest by default),
color_jitter [b, c, s, h], grayscale P, color_ops [{op, <argument>, p}, ...] (the transform's JSON
form of the single-operation transforms), gaussian_blur {kernel_size, sigma, p}, random_erasing
{p, scale, ratio, value}, with seed and
epoch; first_index: the sample index of the first file) draw each
sample's parameters as gpuprep does and apply them as torchvision's PIL functions do.

usage: pillow_reference.py SPEC_JSON OUT_DIR FILE...
  writes OUT_DIR/<i>.npy for the i-th file, or OUT_DIR/<i>.err with Pillow's error, and prints
  the Pillow and libjpeg-turbo versions.
"""
import io
import json
import math
from fractions import Fraction
import re
import os
import sys

import numpy as np
import PIL
from PIL import Image, ImageEnhance, ImageFilter, ImageOps, features

FILTERS = {"nearest": Image.NEAREST, "box": Image.BOX, "bilinear": Image.BILINEAR, "hamming": Image.HAMMING,
           "bicubic": Image.BICUBIC, "lanczos": Image.LANCZOS}
IMAGENET = {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}


# gpuprep's random operations: each sample's parameters drawn as gpuprep draws them
# (src/plan/random.rs and src/plan/augment.rs, over numpy's own Philox), and applied with Pillow
# as torchvision's PIL functions (_functional_pil) apply them. tools/check_torchvision.py holds
# the application to real torchvision.

# The counter's fourth word per operation (src/plan/random.rs, `Op`).
OP_CROP, OP_HFLIP, OP_VFLIP, OP_JITTER, OP_GRAY, OP_ERASE, OP_FILTER, OP_ROTATION = 1, 2, 3, 4, 5, 7, 8, 9
OP_TRIVIAL, OP_RAND, OP_AUTO, OP_RANDOM_CROP, OP_JITTER_APPLY, OP_AFFINE = 10, 17, 18, 19, 20, 21
OP_STEPS = 32
OP_BLUR, OP_BLUR_APPLY, OP_TIMM_RAND, OP_TIMM_AUTO, OP_TIMM_AUGMIX, OP_RANDOM_RESIZE = 22, 23, 24, 25, 26, 27
OP_PERSPECTIVE_APPLY, OP_PERSPECTIVE, OP_ROTATION_APPLY, OP_AFFINE_APPLY = 28, 29, 30, 31
# TrivialAugmentWide's augmentation space, in its order.
TRIVIAL_OPS = ("Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness", "Color",
               "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize")
UNSIGNED = ("Identity", "Posterize", "Solarize", "AutoContrast", "Equalize", "Invert")
# AutoAugment._get_policies: per policy, its 25 sub-policies of (operation, probability, bin).
AUTO_POLICIES = {
    'imagenet': (
        (('Posterize', 0.4, 8), ('Rotate', 0.6, 9)),
        (('Solarize', 0.6, 5), ('AutoContrast', 0.6, None)),
        (('Equalize', 0.8, None), ('Equalize', 0.6, None)),
        (('Posterize', 0.6, 7), ('Posterize', 0.6, 6)),
        (('Equalize', 0.4, None), ('Solarize', 0.2, 4)),
        (('Equalize', 0.4, None), ('Rotate', 0.8, 8)),
        (('Solarize', 0.6, 3), ('Equalize', 0.6, None)),
        (('Posterize', 0.8, 5), ('Equalize', 1.0, None)),
        (('Rotate', 0.2, 3), ('Solarize', 0.6, 8)),
        (('Equalize', 0.6, None), ('Posterize', 0.4, 6)),
        (('Rotate', 0.8, 8), ('Color', 0.4, 0)),
        (('Rotate', 0.4, 9), ('Equalize', 0.6, None)),
        (('Equalize', 0.0, None), ('Equalize', 0.8, None)),
        (('Invert', 0.6, None), ('Equalize', 1.0, None)),
        (('Color', 0.6, 4), ('Contrast', 1.0, 8)),
        (('Rotate', 0.8, 8), ('Color', 1.0, 2)),
        (('Color', 0.8, 8), ('Solarize', 0.8, 7)),
        (('Sharpness', 0.4, 7), ('Invert', 0.6, None)),
        (('ShearX', 0.6, 5), ('Equalize', 1.0, None)),
        (('Color', 0.4, 0), ('Equalize', 0.6, None)),
        (('Equalize', 0.4, None), ('Solarize', 0.2, 4)),
        (('Solarize', 0.6, 5), ('AutoContrast', 0.6, None)),
        (('Invert', 0.6, None), ('Equalize', 1.0, None)),
        (('Color', 0.6, 4), ('Contrast', 1.0, 8)),
        (('Equalize', 0.8, None), ('Equalize', 0.6, None)),
    ),
    'cifar10': (
        (('Invert', 0.1, None), ('Contrast', 0.2, 6)),
        (('Rotate', 0.7, 2), ('TranslateX', 0.3, 9)),
        (('Sharpness', 0.8, 1), ('Sharpness', 0.9, 3)),
        (('ShearY', 0.5, 8), ('TranslateY', 0.7, 9)),
        (('AutoContrast', 0.5, None), ('Equalize', 0.9, None)),
        (('ShearY', 0.2, 7), ('Posterize', 0.3, 7)),
        (('Color', 0.4, 3), ('Brightness', 0.6, 7)),
        (('Sharpness', 0.3, 9), ('Brightness', 0.7, 9)),
        (('Equalize', 0.6, None), ('Equalize', 0.5, None)),
        (('Contrast', 0.6, 7), ('Sharpness', 0.6, 5)),
        (('Color', 0.7, 7), ('TranslateX', 0.5, 8)),
        (('Equalize', 0.3, None), ('AutoContrast', 0.4, None)),
        (('TranslateY', 0.4, 3), ('Sharpness', 0.2, 6)),
        (('Brightness', 0.9, 6), ('Color', 0.2, 8)),
        (('Solarize', 0.5, 2), ('Invert', 0.0, None)),
        (('Equalize', 0.2, None), ('AutoContrast', 0.6, None)),
        (('Equalize', 0.2, None), ('Equalize', 0.6, None)),
        (('Color', 0.9, 9), ('Equalize', 0.6, None)),
        (('AutoContrast', 0.8, None), ('Solarize', 0.2, 8)),
        (('Brightness', 0.1, 3), ('Color', 0.7, 0)),
        (('Solarize', 0.4, 5), ('AutoContrast', 0.9, None)),
        (('TranslateY', 0.9, 9), ('TranslateY', 0.7, 9)),
        (('AutoContrast', 0.9, None), ('Solarize', 0.8, 3)),
        (('Equalize', 0.8, None), ('Invert', 0.1, None)),
        (('TranslateY', 0.7, 9), ('AutoContrast', 0.9, None)),
    ),
    'svhn': (
        (('ShearX', 0.9, 4), ('Invert', 0.2, None)),
        (('ShearY', 0.9, 8), ('Invert', 0.7, None)),
        (('Equalize', 0.6, None), ('Solarize', 0.6, 6)),
        (('Invert', 0.9, None), ('Equalize', 0.6, None)),
        (('Equalize', 0.6, None), ('Rotate', 0.9, 3)),
        (('ShearX', 0.9, 4), ('AutoContrast', 0.8, None)),
        (('ShearY', 0.9, 8), ('Invert', 0.4, None)),
        (('ShearY', 0.9, 5), ('Solarize', 0.2, 6)),
        (('Invert', 0.9, None), ('AutoContrast', 0.8, None)),
        (('Equalize', 0.6, None), ('Rotate', 0.9, 3)),
        (('ShearX', 0.9, 4), ('Solarize', 0.3, 3)),
        (('ShearY', 0.8, 8), ('Invert', 0.7, None)),
        (('Equalize', 0.9, None), ('TranslateY', 0.6, 6)),
        (('Invert', 0.9, None), ('Equalize', 0.6, None)),
        (('Contrast', 0.3, 3), ('Rotate', 0.8, 4)),
        (('Invert', 0.8, None), ('TranslateY', 0.0, 2)),
        (('ShearY', 0.7, 6), ('Solarize', 0.4, 8)),
        (('Invert', 0.6, None), ('Rotate', 0.8, 4)),
        (('ShearY', 0.3, 7), ('TranslateX', 0.9, 3)),
        (('ShearX', 0.1, 6), ('Invert', 0.6, None)),
        (('Solarize', 0.7, 2), ('TranslateY', 0.6, 7)),
        (('ShearY', 0.8, 4), ('Invert', 0.8, None)),
        (('ShearX', 0.7, 9), ('TranslateY', 0.8, 3)),
        (('ShearY', 0.8, 5), ('AutoContrast', 0.7, None)),
        (('ShearX', 0.7, 2), ('Invert', 0.1, None)),
    ),
}
ADJUSTMENTS = ("brightness", "contrast", "saturation", "hue")
# torchvision's single-operation transforms (src/transform/color_ops.rs, COLOR_OPERATIONS): by
# the Python method's name, the counter word of its stream, its argument's name and what
# torchvision's _functional_pil does with it.
COLOR_OPS = {
    "random_invert": (11, None, lambda img, _: ImageOps.invert(img)),
    "random_posterize": (12, "bits", lambda img, bits: ImageOps.posterize(img, bits)),
    "random_solarize": (13, "threshold", lambda img, threshold: ImageOps.solarize(img, threshold)),
    "random_adjust_sharpness": (14, "sharpness_factor",
                                lambda img, factor: ImageEnhance.Sharpness(img).enhance(factor)),
    "random_autocontrast": (15, None, lambda img, _: ImageOps.autocontrast(img)),
    "random_equalize": (16, None, lambda img, _: ImageOps.equalize(img)),
}


class Stream:
    """One operation's stream of 64-bit words for one sample."""

    def __init__(self, seed, epoch, index, op):
        self.bits = np.random.Philox(key=[seed, 0], counter=[0, index, epoch, op])

    def word(self):
        return int(self.bits.random_raw())

    def uniform(self):
        return (self.word() >> 11) * (1.0 / (1 << 53))

    def uniform_f32(self, low, high):
        u = np.float32((self.word() >> 40) * (1.0 / (1 << 24)))
        return np.float32(low) + (np.float32(high) - np.float32(low)) * u

    def below(self, n):
        return (self.word() * n) >> 64

    def permutation(self, n):
        return self.shuffled(list(range(n)))

    def shuffled(self, items):
        """Fisher-Yates from the last place down: place i swaps with place below(i + 1)."""
        items = list(items)
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]
        return items

    def weighted(self, weights):
        """An index drawn with a probability proportional to its weight: the first whose running
        sum exceeds uniform() times the sum (both left to right, in doubles)."""
        total = 0.0
        for w in weights:  # not sum(), which compensates its rounding from Python 3.12 on
            total += float(w)
        x = self.uniform() * total
        last = max(i for i, w in enumerate(weights) if w > 0)
        running = 0.0
        for i, w in enumerate(weights[:last]):
            running += float(w)
            if x < running:
                return i
        return last


def jitter_ranges(values):
    """ColorJitter(b, c, s[, h]) as float32 factor ranges (None where zero); entries that are
    already [low, high] ranges (or null) are taken as they are."""
    b, c, s, h = (list(values) + [0, 0, 0, 0])[:4]
    def factor(v, hue=False):
        if v is None or v == 0:
            return None
        if isinstance(v, list):
            return (np.float32(v[0]), np.float32(v[1]))
        return (np.float32(-v), np.float32(v)) if hue else (np.float32(max(0.0, 1 - v)), np.float32(1 + v))
    return [factor(b), factor(c), factor(s), factor(h, hue=True)]


def crop_box(spec, width, height, s):
    """torchvision's RandomResizedCrop.get_params over the stream `s`."""
    scale = spec.get("scale", [0.08, 1.0])
    ratio = spec.get("ratio", [3 / 4, 4 / 3])
    area = float(width * height)
    log_low, log_high = math.log(ratio[0]), math.log(ratio[1])
    for _ in range(10):
        target_area = area * (scale[0] + (scale[1] - scale[0]) * s.uniform())
        aspect = math.exp(log_low + (log_high - log_low) * s.uniform())
        w = int(round(math.sqrt(target_area * aspect)))
        h = int(round(math.sqrt(target_area / aspect)))
        if 0 < w <= width and 0 < h <= height:
            top = s.below(height - h + 1)
            left = s.below(width - w + 1)
            return {"top": top, "left": left, "height": h, "width": w}
    in_ratio = width / height
    if in_ratio < ratio[0]:
        w, h = width, int(round(width / ratio[0]))
    elif in_ratio > ratio[1]:
        w, h = int(round(height * ratio[1])), height
    else:
        w, h = width, height
    return {"top": (height - h) // 2, "left": (width - w) // 2, "height": h, "width": w}


def erase_boxes(spec, width, height, s):
    """RandomErasing's boxes over the stream `s` (src/plan/erasing.rs): erase with probability p,
    then the count (uniform in timm's min..max when they differ), then per box ten tries of
    torchvision's get_params with the area shared by the count (as timm divides it), each box of
    a noise mode then drawing its key; a box whose tries all fail is left out."""
    if s.uniform() >= spec.get("p", 0.5):
        return []
    scale = spec.get("scale", [0.02, 0.33])
    ratio = spec.get("ratio", [0.3, 3.3])
    low, high = spec.get("count", [1, 1])
    count = low if low == high else low + s.below(high - low + 1)
    area = float(width * height)
    log_low, log_high = math.log(ratio[0]), math.log(ratio[1])
    boxes = []
    for _ in range(count):
        for _ in range(10):
            erase_area = area * (scale[0] + (scale[1] - scale[0]) * s.uniform()) / count
            aspect = math.exp(log_low + (log_high - log_low) * s.uniform())
            h = int(round(math.sqrt(erase_area * aspect)))
            w = int(round(math.sqrt(erase_area / aspect)))
            if h < height and w < width:
                top = s.below(height - h + 1)
                left = s.below(width - w + 1)
                box = {"top": top, "left": left, "height": h, "width": w}
                if isinstance(spec.get("value"), str):
                    box["noise"] = s.word()
                boxes.append(box)
                break
    return boxes


def philox4x32_10(counter, key):
    """Philox4x32-10 (Salmon et al. 2011) over numpy arrays of counters: `counter` four uint64
    arrays of 32-bit words, `key` two ints."""
    mask = np.uint64(0xFFFFFFFF)
    x = [np.asarray(c, np.uint64) & mask for c in counter]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for round_ in range(10):
        if round_:
            k0 = (k0 + np.uint64(0x9E3779B9)) & mask
            k1 = (k1 + np.uint64(0xBB67AE85)) & mask
        p0 = np.uint64(0xD2511F53) * x[0]
        p1 = np.uint64(0xCD9E8D57) * x[2]
        x = [(p1 >> np.uint64(32)) ^ x[1] ^ k0, p1 & mask,
             (p0 >> np.uint64(32)) ^ x[3] ^ k1, p0 & mask]
    return x


_NORMAL = None


def normal_table():
    """The standard normal quantiles at (i + 1/2) / 2^16 as float32: Python's own AS241."""
    global _NORMAL
    if _NORMAL is None:
        from statistics import NormalDist

        inv = NormalDist().inv_cdf
        _NORMAL = np.array([inv((i + 0.5) / 65536) for i in range(65536)], np.float32)
    return _NORMAL


def drawn_noise(key, height, width):
    """The box's normal values drawn with `key`, (3, height, width) float32."""
    pixels = np.arange(height * width, dtype=np.uint64)
    zero = np.zeros_like(pixels)
    words = philox4x32_10([pixels, zero, zero, zero], [key & 0xFFFFFFFF, key >> 32])
    table = normal_table()
    return np.stack([table[(words[c] >> np.uint64(16)).astype(np.int64)] for c in range(3)]
                    ).reshape(3, height, width)


def output_size(spec, size):
    """The (width, height) the spec makes of an image of `size`: RandomErasing's canvas."""
    if "crop" in spec:
        return tuple(spec["crop"])
    if "random_crop" in spec:
        return spec["random_crop"]["width"], spec["random_crop"]["height"]
    return padded_size(spec, size)


def pads(spec, size):
    """The spec's F.pad calls on the resized image of `size`, in order, as (padding (l, t, r, b),
    fill, mode): Pad's, RandomCrop's padding, then pad_if_needed's width and height."""
    calls = []
    if "pad" in spec:
        calls.append((spec["pad"]["padding"], spec["pad"]["fill"], spec["pad"]["mode"]))
    crop = spec.get("random_crop")
    if crop:
        calls.append((crop["padding"], crop["fill"], crop["mode"]))
        if crop["pad_if_needed"]:
            w, h = size
            for (l, t, r, b), _, _ in calls:
                w, h = w + l + r, h + t + b
            dx, dy = max(crop["width"] - w, 0), max(crop["height"] - h, 0)
            calls.append(([dx, 0, dx, 0], crop["fill"], crop["mode"]))
            calls.append(([0, dy, 0, dy], crop["fill"], crop["mode"]))
    return calls


def resized_size(spec, size):
    if "random_resized_crop" in spec:
        return tuple(spec["random_resized_crop"]["size"])
    return resize_target(spec, size)


def padded_size(spec, size):
    """The (width, height) a crop takes from: the resized image, padded."""
    w, h = resized_size(spec, size)
    for (l, t, r, b), _, _ in pads(spec, (w, h)):
        w, h = w + l + r, h + t + b
    return w, h


def tv_pad(im, padding, fill, mode):
    """torchvision's F_pil.pad of an RGB image by (left, top, right, bottom): ImageOps.expand with
    the fill, or np.pad."""
    left, top, right, bottom = padding
    if left + top + right + bottom == 0:
        return im
    if mode == "constant":
        return ImageOps.expand(im, border=(left, top, right, bottom), fill=tuple(fill))
    return Image.fromarray(np.pad(np.asarray(im), ((top, bottom), (left, right), (0, 0)), mode))


def resolved(spec, drawn, size):
    """The spec for a sample that drew `drawn` for its random resize, on an image of `size`:
    RandomResize's Resize(drawn), or RandomShortestSize's exact size (its make_params: the scale
    in doubles, each side int(side * r))."""
    if "random_resize" in spec:
        return dict(spec, resize=f"short:{drawn}")
    if "random_shortest_size" in spec:
        w, h = size
        r = drawn / min(w, h)
        top = spec["random_shortest_size"].get("max_size")
        if top is not None:
            r = min(r, top / max(w, h))
        return dict(spec, resize=[int(w * r), int(h * r)])
    return spec


def draw(spec, size, index):
    """The parameters of the spec's random operations for sample `index` of an image of `size`
    (width, height), in report.json's form."""
    seed, epoch = spec.get("seed", 0), spec.get("epoch", 0)
    stream = lambda op: Stream(seed, epoch, index, op)
    params = {}
    if "random_resize" in spec:  # v2 RandomResize: torch.randint(min_size, max_size)
        r = spec["random_resize"]
        params["resize"] = r["min_size"] + stream(OP_RANDOM_RESIZE).below(r["max_size"] - r["min_size"])
    elif "random_shortest_size" in spec:  # v2 RandomShortestSize: one of its sizes
        sizes = spec["random_shortest_size"]["min_size"]
        params["resize"] = sizes[stream(OP_RANDOM_RESIZE).below(len(sizes))]
    spec = resolved(spec, params.get("resize"), size)  # what follows is drawn on what it makes
    if any(not isinstance(entry, str) for entry in spec.get("order") or []):
        params["steps"] = drawn_steps(spec["order"], stream(OP_STEPS))
        spec = running(spec, params["steps"])  # a step RandomChoice did not choose draws nothing
    if "random_resized_crop" in spec:
        params["crop"] = crop_box(spec["random_resized_crop"], size[0], size[1], stream(OP_CROP))
        if spec.get("filter") == "random":  # timm's interpolation='random'
            params["interpolation"] = ("bilinear", "bicubic")[stream(OP_FILTER).below(2)]
    if "random_crop" in spec:  # RandomCrop.get_params on the resized, padded image
        crop = spec["random_crop"]
        width, height = padded_size(spec, size)
        th, tw = crop["height"], crop["width"]
        s = stream(OP_RANDOM_CROP)
        top = left = 0
        if (width, height) != (tw, th):
            top = s.below(max(height - th, 0) + 1)
            left = s.below(max(width - tw, 0) + 1)
        params["random_crop"] = {"top": top, "left": left, "height": th, "width": tw}
    for key, op in (("hflip", OP_HFLIP), ("vflip", OP_VFLIP)):
        if key in spec:
            params["flip" if key == "hflip" else "vflip"] = stream(op).uniform() < spec[key]
    # RandomApply's coin around a rotation or affine map first: where it does not apply, the
    # angle 0 or the identity's draw.
    applies = lambda key, op: spec[key].get("p", 1.0) >= 1.0 or stream(op).uniform() < spec[key]["p"]
    if "random_rotation" in spec:  # RandomRotation.get_params: uniform over the degrees
        params["rotation"] = 0.0
        if applies("random_rotation", OP_ROTATION_APPLY):
            params["rotation"] = float(stream(OP_ROTATION).uniform_f32(*spec["random_rotation"]["degrees"]))
    if "random_affine" in spec:
        params["affine"] = {"angle": 0.0, "translate": [0, 0], "scale": 1.0, "shear": [0.0, 0.0]}
        if applies("random_affine", OP_AFFINE_APPLY):
            params["affine"] = affine_draw(spec["random_affine"], output_size(spec, size), stream(OP_AFFINE))
    if "trivial_augment" in spec:
        params["augment"] = [trivial_draw(spec["trivial_augment"], stream(OP_TRIVIAL))]
    if "rand_augment" in spec:
        params["augment"] = rand_draw(spec["rand_augment"], output_size(spec, size), stream(OP_RAND))
    if "auto_augment" in spec:
        params["augment"] = auto_draw(spec["auto_augment"], output_size(spec, size), stream(OP_AUTO))
    if "timm_rand_augment" in spec:
        params["augment"] = timm_draw(spec["timm_rand_augment"], output_size(spec, size),
                                      stream(OP_TIMM_RAND))
    if "timm_auto_augment" in spec:
        params["augment"] = timm_auto_draw(spec["timm_auto_augment"], output_size(spec, size),
                                           stream(OP_TIMM_AUTO))
    if "timm_aug_mix" in spec:
        params["aug_mix"] = timm_aug_mix_draw(spec["timm_aug_mix"], output_size(spec, size),
                                              stream(OP_TIMM_AUGMIX))
    if "random_perspective" in spec:
        p = spec["random_perspective"]
        params["perspective"] = None
        if stream(OP_PERSPECTIVE_APPLY).uniform() < p["p"]:
            size_out = output_size(spec, size)
            corners = perspective_corners(p["distortion_scale"], size_out, stream(OP_PERSPECTIVE))
            params["perspective"] = perspective_coefficients(size_out, corners)
    if "color_jitter" in spec and not stream(OP_JITTER_APPLY).uniform() < spec.get("color_jitter_p", 1.0):
        params["color"] = {"order": []}  # RandomApply([ColorJitter(...)], p) did not apply
    elif "color_jitter" in spec:
        s = stream(OP_JITTER)
        order = s.permutation(4)
        drawn = [None if r is None else s.uniform_f32(*r) for r in jitter_ranges(spec["color_jitter"])]
        color = {"order": [ADJUSTMENTS[i] for i in order if drawn[i] is not None]}
        for name, value in zip(ADJUSTMENTS, drawn):
            if value is not None:
                color[name] = float(value)
        params["color"] = color
    if "grayscale" in spec:
        params["grayscale"] = stream(OP_GRAY).uniform() < spec["grayscale"]
    if spec.get("color_ops"):  # each RandomX.forward: torch.rand(1) < p
        params["color_ops"] = {op["op"]: stream(COLOR_OPS[op["op"]][0]).uniform() < op["p"]
                               for op in spec["color_ops"]}
    if "gaussian_blur" in spec:
        blur = spec["gaussian_blur"]
        if stream(OP_BLUR_APPLY).uniform() < blur["p"] if blur["p"] < 1.0 else True:
            sigma = stream(OP_BLUR).uniform_f32(*blur["sigma"])
            kx, ky = blur["kernel_size"]
            params["blur"] = {"kernel_x": [float(w) for w in gaussian_kernel(kx, sigma)],
                              "kernel_y": [float(w) for w in gaussian_kernel(ky, sigma)]}
        else:
            params["blur"] = None
    if "random_erasing" in spec:
        width, height = output_size(spec, size)
        params["erase"] = erase_boxes(spec["random_erasing"], width, height, stream(OP_ERASE))
    return params


def drawn_steps(order, s):
    """The steps of an order with RandomOrder / RandomChoice entries as one sample runs them
    (src/plan/steps.rs): a RandomOrder's shuffled, one of a RandomChoice's by its weights."""
    steps = []
    for entry in order:
        if isinstance(entry, str):
            steps.append(entry)
        elif "random_order" in entry:
            steps += s.shuffled(entry["random_order"])
        else:
            members = entry["random_choice"]
            steps.append(members[s.weighted(entry.get("p") or [1.0] * len(members))])
    return steps


def running(spec, steps):
    """The spec of the steps one sample runs: without those it did not choose."""
    spec = dict(spec, order=steps)
    for method, (key, _) in SAME_SIZE_STEPS.items():
        if method not in steps:
            spec.pop(key, None)
    if spec.get("color_ops"):
        spec["color_ops"] = [op for op in spec["color_ops"] if op["op"] in steps]
    return spec


def gaussian_kernel(size, sigma):
    """torchvision's _get_gaussian_kernel1d(size, sigma) in float32 as gpuprep computes it
    (src/plan/blur.rs): each exp in double (the C library's, as Rust's) rounded to float32, the
    sum in ATen's order (four running sums of 8-lane vectors)."""
    half, sigma = np.float32(size // 2), np.float32(sigma)
    pdf = []
    for i in range(size):
        t = (np.float32(i) - half) / sigma
        pdf.append(np.float32(math.exp(float(np.float32(-0.5) * (t * t)))))
    total = aten_sum(pdf)
    return [np.float32(p / total) for p in pdf]


def aten_sum(values):
    """torch's sum of a short float32 tensor (ATen's cascade_sum with 8-lane vectors)."""
    def row_sum(rows):
        sums = [np.zeros_like(rows[0]) for _ in range(4)] if rows else []
        whole = len(rows) // 4 * 4
        for i, row in enumerate(rows[:whole]):
            sums[i % 4] = (sums[i % 4] + row).astype(np.float32)
        for row in rows[whole:]:
            sums[0] = (sums[0] + row).astype(np.float32)
        out = sums[0]
        for extra in sums[1:]:
            out = (out + extra).astype(np.float32)
        return out
    values = np.asarray(values, np.float32)
    if len(values) < 8:
        return np.float32(row_sum([np.array([v], np.float32) for v in values])[0])
    whole = len(values) // 8 * 8
    lanes = row_sum([values[i:i + 8] for i in range(0, whole, 8)])
    total = np.float32(0)
    for v in values[whole:]:
        total = np.float32(total + v)
    for v in lanes:
        total = np.float32(total + v)
    return total


def fma_u8(v, w, acc):
    """v * w + acc (uint8 array, float32 weight, float32 array) rounded once to float32, as a
    fused multiply-add: the product is exact in a double; a double sum that rounded lands on a
    float32 midpoint only where its TwoSum error says which way the exact sum lies."""
    p = v.astype(np.float64) * np.float64(w)
    a = acc.astype(np.float64)
    s = a + p
    b = s - a
    err = (a - (s - b)) + (p - b)
    r = s.astype(np.float32)
    toward = np.nextafter(r, np.where(s > r.astype(np.float64), np.float32(np.inf), np.float32(-np.inf)))
    midpoint = (r.astype(np.float64) + toward.astype(np.float64)) / 2 == s
    fix = midpoint & (err != 0) & (s != r.astype(np.float64))
    up = np.maximum(r, toward)
    down = np.minimum(r, toward)
    return np.where(fix, np.where(err > 0, up, down), r)


def gaussian_blur(a, blur):
    """F.gaussian_blur of the H x W x 3 uint8 array as torch's CPU computes it: reflect padding,
    the 2D kernel (each weight one float32 product), per value its taps in row-major order summed
    from 0 with fused multiply-adds, rounded half to even."""
    kx = np.asarray(blur["kernel_x"], np.float32)
    ky = np.asarray(blur["kernel_y"], np.float32)
    h, w = a.shape[:2]
    padded = np.pad(a, ((len(ky) // 2,) * 2, (len(kx) // 2,) * 2, (0, 0)), mode="reflect")
    acc = np.zeros(a.shape, np.float32)
    for r in range(len(ky)):
        for c in range(len(kx)):
            acc = fma_u8(padded[r:r + h, c:c + w], np.float32(ky[r] * kx[c]), acc)
    return np.minimum(np.round(acc), 255).astype(np.uint8)


def fma32(a, b, c):
    """a * b + c in float32 with one rounding (to nearest, ties to even), as a fused multiply-add
    gives it."""
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    near = np.float32(float(exact))
    candidates = [near, np.nextafter(near, np.float32(np.inf)), np.nextafter(near, np.float32(-np.inf))]
    return min(candidates, key=lambda f: (abs(Fraction(float(f)) - exact),
                                          int(np.float32(f).view(np.uint32)) & 1))


def linspace(start, end, b, bins):
    """torch.linspace(start, end, bins)[b] as torch's vectorised CPU kernel computes it in float32:
    each half in one fused multiply-add (src/plan/auto_augment.rs)."""
    start, end = np.float32(start), np.float32(end)
    step = (end - start) / np.float32(bins - 1)
    if b < bins // 2:
        return fma32(step, np.float32(b), start)
    return fma32(-step, np.float32(bins - 1 - b), end)


def solarize_threshold(b, bins, v2):
    """Solarize's bin b: v1's linspace(255.0, 0.0, bins)[b], or what transforms.v2 gives
    solarize, `bound * magnitude` of its linspace(1.0, 0.0, bins)[b], in doubles."""
    return 255.0 * float(linspace(1.0, 0.0, b, bins)) if v2 else float(linspace(255.0, 0.0, b, bins))


def trivial_magnitude(op, b, bins, v2=False):
    """TrivialAugmentWide._augmentation_space(bins)[op][0][b]; None for a 0-d magnitude."""
    if op in ("Identity", "AutoContrast", "Equalize"):
        return None
    if op == "Posterize":
        return 8.0 - float(np.round(np.float32(b) / np.float32((bins - 1) / 6)))
    if op == "Solarize":
        return solarize_threshold(b, bins, v2)
    end = {"TranslateX": 32.0, "TranslateY": 32.0, "Rotate": 135.0}.get(op, 0.99)
    return float(linspace(0.0, end, b, bins))


def trivial_draw(spec, s):
    """TrivialAugmentWide.forward's draws: the operation, the bin, the sign."""
    bins = spec.get("bins", 31)
    op = TRIVIAL_OPS[s.below(len(TRIVIAL_OPS))]
    m = trivial_magnitude(op, s.below(bins), bins, spec.get("v2", False))
    if m is None:
        return {"op": op, "magnitude": 0.0}
    if op not in UNSIGNED and s.below(2) == 1:
        m = -m
    return {"op": op, "magnitude": m}


def standard_magnitude(op, b, bins, size, v2=False):
    """RandAugment's and AutoAugment's _augmentation_space(bins, (height, width))[op][0][b] for
    an image of `size` (width, height); None for a 0-d magnitude."""
    if op in ("Identity", "AutoContrast", "Equalize", "Invert"):
        return None
    if op == "Posterize":
        return 8.0 - float(np.round(np.float32(b) / np.float32((bins - 1) / 4)))
    if op == "Solarize":
        return solarize_threshold(b, bins, v2)
    end = {"ShearX": 0.3, "ShearY": 0.3, "TranslateX": 150.0 / 331.0 * size[0],
           "TranslateY": 150.0 / 331.0 * size[1], "Rotate": 30.0}.get(op, 0.9)
    return float(linspace(0.0, end, b, bins))


def rand_draw(spec, size, s):
    """RandAugment.forward's draws: per operation, which one, then the sign of a signed one."""
    ops = []
    for _ in range(spec.get("num_ops", 2)):
        op = TRIVIAL_OPS[s.below(len(TRIVIAL_OPS))]
        m = standard_magnitude(op, spec.get("magnitude", 9), spec.get("bins", 31), size,
                               spec.get("v2", False))
        if m is None:
            m = 0.0
        elif op not in UNSIGNED and s.below(2) == 1:
            m = -m
        ops.append({"op": op, "magnitude": m})
    return ops


# timm's RandAugment operations (its _RAND_TRANSFORMS order; the increasing set's in the same
# places).
TIMM_OPS = ("AutoContrast", "Equalize", "Invert", "Rotate", "Posterize", "Solarize", "SolarizeAdd",
            "Color", "Contrast", "Brightness", "Sharpness", "ShearX", "ShearY", "TranslateXRel",
            "TranslateYRel")


def timm_draw(spec, size, s):
    """timm's RandAugment as gpuprep draws it (src/plan/timm_augment.rs): the operations (uniform,
    with replacement), then per operation whether it applies, its magnitude (Box-Muller noise, or
    uniform for "inf"), its sign and its filter; each with timm's level rule
    (timm/data/auto_augment.py) as the argument its operation gets."""
    increasing = spec.get("increasing", False)
    chosen = [TIMM_OPS[s.below(len(TIMM_OPS))] for _ in range(spec.get("num_ops", 2))]
    if increasing:  # _RAND_INCREASING_TRANSFORMS: the same places
        chosen = [n + "Increasing" if n in TIMM_INCREASING else n for n in chosen]
    ops = []
    for name in chosen:
        record = timm_op_draw(name, spec.get("prob", 0.5), spec.get("magnitude", 10.0), spec,
                              size, s)
        if record is not None:
            ops.append(record)
    return ops


# The operations whose level rule the increasing set changes.
TIMM_INCREASING = ("Posterize", "Solarize", "Color", "Contrast", "Brightness", "Sharpness")

# timm's AutoAugment policies (timm/data/auto_augment.py: auto_augment_policy_original, _v0 and
# _3a; the 'r' forms posterize with PosterizeIncreasing): (operation, probability, magnitude).
TIMM_AUTO_POLICIES = {
    "3a": [[('Solarize', 1.0, 5)], [('Desaturate', 1.0, 10)], [('GaussianBlurRand', 1.0, 10)]],
    "original": [
        [('PosterizeOriginal', 0.4, 8), ('Rotate', 0.6, 9)],
        [('Solarize', 0.6, 5), ('AutoContrast', 0.6, 5)],
        [('Equalize', 0.8, 8), ('Equalize', 0.6, 3)],
        [('PosterizeOriginal', 0.6, 7), ('PosterizeOriginal', 0.6, 6)],
        [('Equalize', 0.4, 7), ('Solarize', 0.2, 4)],
        [('Equalize', 0.4, 4), ('Rotate', 0.8, 8)],
        [('Solarize', 0.6, 3), ('Equalize', 0.6, 7)],
        [('PosterizeOriginal', 0.8, 5), ('Equalize', 1.0, 2)],
        [('Rotate', 0.2, 3), ('Solarize', 0.6, 8)],
        [('Equalize', 0.6, 8), ('PosterizeOriginal', 0.4, 6)],
        [('Rotate', 0.8, 8), ('Color', 0.4, 0)],
        [('Rotate', 0.4, 9), ('Equalize', 0.6, 2)],
        [('Equalize', 0.0, 7), ('Equalize', 0.8, 8)],
        [('Invert', 0.6, 4), ('Equalize', 1.0, 8)],
        [('Color', 0.6, 4), ('Contrast', 1.0, 8)],
        [('Rotate', 0.8, 8), ('Color', 1.0, 2)],
        [('Color', 0.8, 8), ('Solarize', 0.8, 7)],
        [('Sharpness', 0.4, 7), ('Invert', 0.6, 8)],
        [('ShearX', 0.6, 5), ('Equalize', 1.0, 9)],
        [('Color', 0.4, 0), ('Equalize', 0.6, 3)],
        [('Equalize', 0.4, 7), ('Solarize', 0.2, 4)],
        [('Solarize', 0.6, 5), ('AutoContrast', 0.6, 5)],
        [('Invert', 0.6, 4), ('Equalize', 1.0, 8)],
        [('Color', 0.6, 4), ('Contrast', 1.0, 8)],
        [('Equalize', 0.8, 8), ('Equalize', 0.6, 3)],
    ],
    "v0": [
        [('Equalize', 0.8, 1), ('ShearY', 0.8, 4)],
        [('Color', 0.4, 9), ('Equalize', 0.6, 3)],
        [('Color', 0.4, 1), ('Rotate', 0.6, 8)],
        [('Solarize', 0.8, 3), ('Equalize', 0.4, 7)],
        [('Solarize', 0.4, 2), ('Solarize', 0.6, 2)],
        [('Color', 0.2, 0), ('Equalize', 0.8, 8)],
        [('Equalize', 0.4, 8), ('SolarizeAdd', 0.8, 3)],
        [('ShearX', 0.2, 9), ('Rotate', 0.6, 8)],
        [('Color', 0.6, 1), ('Equalize', 1.0, 2)],
        [('Invert', 0.4, 9), ('Rotate', 0.6, 0)],
        [('Equalize', 1.0, 9), ('ShearY', 0.6, 3)],
        [('Color', 0.4, 7), ('Equalize', 0.6, 0)],
        [('Posterize', 0.4, 6), ('AutoContrast', 0.4, 7)],
        [('Solarize', 0.6, 8), ('Color', 0.6, 9)],
        [('Solarize', 0.2, 4), ('Rotate', 0.8, 9)],
        [('Rotate', 1.0, 7), ('TranslateYRel', 0.8, 9)],
        [('ShearX', 0.0, 0), ('Solarize', 0.8, 4)],
        [('ShearY', 0.8, 0), ('Color', 0.6, 4)],
        [('Color', 1.0, 0), ('Rotate', 0.6, 2)],
        [('Equalize', 0.8, 4), ('Equalize', 0.0, 8)],
        [('Equalize', 1.0, 4), ('AutoContrast', 0.6, 2)],
        [('ShearY', 0.4, 7), ('SolarizeAdd', 0.6, 7)],
        [('Posterize', 0.8, 2), ('Solarize', 0.6, 10)],
        [('Solarize', 0.6, 8), ('Equalize', 0.6, 1)],
        [('Color', 0.8, 6), ('Rotate', 0.4, 5)],
    ],
}


def timm_auto_draw(spec, size, s):
    """timm's AutoAugment as gpuprep draws it: the sub-policy (uniform), then each of its
    operations as timm_draw draws one, at its own probability and magnitude."""
    name = spec.get("policy", "v0")
    research = name.endswith("r")
    subs = TIMM_AUTO_POLICIES[name.rstrip("r")]
    sub = subs[s.below(len(subs))]
    ops = []
    for op, prob, magnitude in sub:
        if research and op.startswith("Posterize"):
            op = "PosterizeIncreasing"
        record = timm_op_draw(op, prob, float(magnitude), dict(spec, magnitude_max=None), size, s)
        if record is not None:
            ops.append(record)
    return ops


# timm's _AUGMIX_TRANSFORMS, in its order.
TIMM_AUGMIX_OPS = ("AutoContrast", "ColorIncreasing", "ContrastIncreasing", "BrightnessIncreasing",
                   "SharpnessIncreasing", "Equalize", "Rotate", "PosterizeIncreasing",
                   "SolarizeIncreasing", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel")


def timm_aug_mix_draw(spec, size, s):
    """timm's AugMix as gpuprep draws it (src/plan/timm_augment.rs): the Dirichlet's Gamma draws
    normalised in double, as float32, the Beta's two, then per chain its depth (or the fixed one),
    its operations, and each operation's draws as timm_draw's with probability 1."""
    width, alpha = spec.get("width", 3), spec.get("alpha", 1.0)
    gammas = [gamma_draw(s, alpha) for _ in range(width)]
    total = 0.0
    for g in gammas:  # in order, as Rust's iterator sums (Python's sum compensates)
        total += g
    if total > 0.0:
        weights = [float(np.float32(g / total)) for g in gammas]
    else:
        one = s.below(width)
        weights = [1.0 if i == one else 0.0 for i in range(width)]
    x, y = gamma_draw(s, alpha), gamma_draw(s, alpha)
    blend = float(np.float32(x / (x + y))) if x + y > 0.0 else float(s.below(2))
    options = dict(spec, magnitude_max=None)
    options.setdefault("magnitude_std", "inf")
    chains = []
    for _ in range(width):
        depth = spec.get("depth") or 1 + s.below(3)
        names = [TIMM_AUGMIX_OPS[s.below(len(TIMM_AUGMIX_OPS))] for _ in range(depth)]
        chains.append([timm_op_draw(name, 1.0, float(spec.get("magnitude", 3.0)), options, size, s)
                       for name in names])
    return {"weights": weights, "blend": blend, "chains": chains}


def gamma_draw(s, shape):
    """A Gamma draw of `shape` as gpuprep makes it: Marsaglia and Tsang's method over Box-Muller
    normals, boosted from shape + 1 below 1."""
    if shape < 1.0:
        u = s.uniform()
        return gamma_draw(s, shape + 1.0) * u ** (1.0 / shape)
    d = shape - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    for _ in range(1000):
        angle = s.uniform() * math.tau
        radius = math.sqrt(-2.0 * math.log(1.0 - s.uniform()))
        x = 0.0 + math.cos(angle) * radius * 1.0
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = s.uniform()
        x2 = x * x
        if u < 1.0 - 0.0331 * (x2 * x2) or \
                (math.log(u) if u > 0.0 else -math.inf) < 0.5 * x2 + d * (1.0 - v + math.log(v)):
            return d * v
    return d


def timm_op_draw(name, prob, m, spec, size, s):
    """timm's AugmentOp.__call__ of the operation `name` (timm's name) as gpuprep draws it:
    whether it applies, its magnitude, its level rule's argument (with its sign) and its filter;
    None when it does not apply."""
    std = spec.get("magnitude_std", 0.0)
    std = math.inf if std == "inf" else std
    top = spec.get("magnitude_max") or 10.0
    pct, interpolation = spec.get("translate_pct", 0.45), spec.get("interpolation", "random")
    if prob < 1.0 and s.uniform() > prob:
        return None
    if std == math.inf:
        m = m * s.uniform()
    elif std > 0:
        angle = s.uniform() * math.tau
        radius = math.sqrt(-2.0 * math.log(1.0 - s.uniform()))
        m = m + math.cos(angle) * radius * std
    level = max(min(m, top), 0.0) / 10.0

    def signed(v):
        return -v if s.uniform() > 0.5 else v
    base = name[:-len("Increasing")] if name.endswith("Increasing") else name
    increasing = base != name
    if name in ("AutoContrast", "Equalize", "Invert"):
        op, arg = name, 0.0
    elif name == "Rotate":
        op, arg = name, signed(level * 30.0)
    elif base == "Posterize" or name == "PosterizeOriginal":
        bits = float(int(level * 4.0))
        bits = 4.0 - bits if increasing else bits + 4.0 if name == "PosterizeOriginal" else bits
        op, arg = "Posterize", min(max(bits, 0.0), 8.0)
    elif base == "Solarize":
        threshold = float(min(256, int(level * 256.0)))
        op, arg = base, 256.0 - threshold if increasing else threshold
    elif name == "SolarizeAdd":
        op, arg = name, float(min(128, int(level * 110.0)))
    elif base in ("Color", "Contrast", "Brightness", "Sharpness"):
        op = "Timm" + base
        arg = max(1.0 + signed(level * 0.9), 0.1) if increasing else level * 1.8 + 0.1
    elif name in ("ShearX", "ShearY"):
        op, arg = "Timm" + name, signed(level * 0.3)
    elif name == "Desaturate":  # _minmax_level_to_arg(0.5, 1.0), then desaturate's factor
        op, arg = "TimmColor", min(1.0, max(0.0, 1.0 - max(0.5, min(1.0, 0.5 + 0.5 * level))))
    elif name == "GaussianBlurRand":  # _minmax_level_to_arg, then random.uniform(0.1, 2 level)
        top = 2.0 * max(0.0, min(1.0, 0.0 + 1.0 * level))
        op, arg = "TimmGaussianBlur", 0.1 + (top - 0.1) * s.uniform()
    else:  # TranslateXRel, TranslateYRel: the share of the side, in pixels
        side = size[0] if name == "TranslateXRel" else size[1]
        op, arg = "Timm" + name[:-3], signed(level * pct) * side
    record = {"op": op, "magnitude": arg}
    if op in ("Rotate", "TimmShearX", "TimmShearY", "TimmTranslateX", "TimmTranslateY"):
        record["interpolation"] = interpolation if interpolation != "random" else \
            ("bilinear", "bicubic")[s.below(2)]
    return record


def auto_draw(spec, size, s):
    """AutoAugment.forward's draws: the sub-policy, a float32 per operation (it applies when that
    is at most its probability), a sign per operation (negated on 0); the operations that apply."""
    sub = AUTO_POLICIES[spec.get("policy", "imagenet")][s.below(25)]
    probs = [s.uniform_f32(0.0, 1.0) for _ in range(2)]
    negated = [s.below(2) == 0 for _ in range(2)]
    ops = []
    for (op, p, b), prob, neg in zip(sub, probs, negated):
        if prob <= np.float32(p):
            m = standard_magnitude(op, b, 10, size, spec.get("v2", False)) if b is not None else None
            m = 0.0 if m is None else m
            ops.append({"op": op, "magnitude": -m if neg and op not in UNSIGNED else m})
    return ops


def affine_draw(affine, size, s):
    """RandomAffine.get_params on an image of `size`: float32 uniform draws of the angle, the
    shifts (rounded as Python's round), the scale, the x shear and, of four values, the y shear."""
    angle = float(s.uniform_f32(*affine["degrees"]))
    tx = ty = 0
    if affine.get("translate") is not None:
        dx, dy = affine["translate"][0] * size[0], affine["translate"][1] * size[1]
        tx = int(round(float(s.uniform_f32(-dx, dx))))
        ty = int(round(float(s.uniform_f32(-dy, dy))))
    scale = float(s.uniform_f32(*affine["scale"])) if affine.get("scale") is not None else 1.0
    sx = sy = 0.0
    shear = affine.get("shear")
    if shear is not None:
        sx = float(s.uniform_f32(shear[0], shear[1]))
        if len(shear) == 4:
            sy = float(s.uniform_f32(shear[2], shear[3]))
    return {"angle": angle, "translate": [tx, ty], "scale": scale, "shear": [sx, sy]}


def perspective_corners(distortion_scale, size, s):
    """RandomPerspective.get_params: each corner moved inwards by up to distortion_scale of half
    the side, its eight torch.randint calls in order (top-left x, y; top-right; bottom-right;
    bottom-left)."""
    width, height = size
    dx, dy = int(distortion_scale * (width // 2)) + 1, int(distortion_scale * (height // 2)) + 1
    between = lambda low, high: float(low + s.below(high - low))
    top_left = (between(0, dx), between(0, dy))
    top_right = (between(width - dx, width), between(0, dy))
    bottom_right = (between(width - dx, width), between(height - dy, height))
    bottom_left = (between(0, dx), between(height - dy, height))
    return [top_left, top_right, bottom_right, bottom_left]


def perspective_coefficients(size, corners):
    """torchvision's _get_perspective_coeffs system (the image's corners to `corners`) solved as
    gpuprep solves it, by Gaussian elimination with partial pivoting in doubles, operation for
    operation, each coefficient then rounded to float32 as torchvision rounds its own; None where
    it is singular or its coefficients leave [2^-500, 2^30]."""
    right, bottom = size[0] - 1.0, size[1] - 1.0
    start = [(0.0, 0.0), (right, 0.0), (right, bottom), (0.0, bottom)]
    rows = []
    for (ex, ey), (sx, sy) in zip(corners, start):
        rows.append([ex, ey, 1.0, 0.0, 0.0, 0.0, -sx * ex, -sx * ey, sx])
        rows.append([0.0, 0.0, 0.0, ex, ey, 1.0, -sy * ex, -sy * ey, sy])
    for column in range(8):
        # The last of the largest, as Rust's max_by keeps.
        pivot = column
        for r in range(column, 8):
            if abs(rows[r][column]) >= abs(rows[pivot][column]):
                pivot = r
        rows[column], rows[pivot] = rows[pivot], rows[column]
        if rows[column][column] == 0.0:
            return None
        for r in range(column + 1, 8):
            factor = rows[r][column] / rows[column][column]
            for k in range(column, 9):
                rows[r][k] -= factor * rows[column][k]
    c = [0.0] * 8
    for r in range(7, -1, -1):
        known = 0.0
        for k in range(r + 1, 8):
            known += rows[r][k] * c[k]
        c[r] = (rows[r][8] - known) / rows[r][r]
    c = [float(np.float32(v)) if math.isfinite(v) else v for v in c]
    if not all(v == 0.0 or 2.0 ** -500 <= abs(v) <= 2.0 ** 30 for v in c):
        return None
    return c


def inverse_affine_matrix(center, angle, translate, scale, shear):
    """torchvision's _get_inverse_affine_matrix (functional.py), for a PIL image."""
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    matrix = [d, -b, 0.0, -c, a, 0.0]
    matrix = [x / scale for x in matrix]
    matrix[2] += matrix[0] * (-cx - tx) + matrix[1] * (-cy - ty)
    matrix[5] += matrix[3] * (-cx - tx) + matrix[4] * (-cy - ty)
    matrix[2] += cx
    matrix[5] += cy
    return matrix


def inverse_affine_matrix_v2(center, angle, translate, scale, shear):
    """transforms.v2's _get_inverse_affine_matrix (v2/functional/_geometry.py): the same matrix in
    another order of operations."""
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    cos_sy, tan_sx, rot_minus_sy = math.cos(sy), math.tan(sx), rot - sy
    cx_plus_tx, cy_plus_ty = cx + tx, cy + ty
    a = math.cos(rot_minus_sy) / cos_sy
    b = -(a * tan_sx + math.sin(rot))
    c = math.sin(rot_minus_sy) / cos_sy
    d = math.cos(rot) - c * tan_sx
    matrix = [d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0]
    matrix[2] += cx - matrix[0] * cx_plus_tx - matrix[1] * cy_plus_ty
    matrix[5] += cy - matrix[3] * cx_plus_tx - matrix[4] * cy_plus_ty
    return matrix


def affine(img, translate, shear, center, fill, resample):
    """F.affine(img, angle=0.0, translate, scale=1.0, shear, interpolation, fill, center) on a
    PIL image."""
    if center is None:
        center = [img.size[0] * 0.5, img.size[1] * 0.5]
    matrix = inverse_affine_matrix(center, 0.0, translate, 1.0, shear)
    return img.transform(img.size, Image.AFFINE, matrix, resample, fillcolor=fill)


def apply_op(img, op, m, fill, resample):
    """torchvision's autoaugment._apply_op with the interpolation `resample`."""
    if op == "ShearX":
        return affine(img, [0, 0], [math.degrees(math.atan(m)), 0.0], [0, 0], fill, resample)
    if op == "ShearY":
        return affine(img, [0, 0], [0.0, math.degrees(math.atan(m))], [0, 0], fill, resample)
    if op == "TranslateX":
        return affine(img, [int(m), 0], [0.0, 0.0], None, fill, resample)
    if op == "TranslateY":
        return affine(img, [0, int(m)], [0.0, 0.0], None, fill, resample)
    if op == "Rotate":
        return img.rotate(m, resample, False, None, fillcolor=fill)
    if op == "Brightness":
        return adjust_brightness(img, 1.0 + m)
    if op == "Color":
        return adjust_saturation(img, 1.0 + m)
    if op == "Contrast":
        return adjust_contrast(img, 1.0 + m)
    if op == "Sharpness":
        return ImageEnhance.Sharpness(img).enhance(1.0 + m)
    if op == "Posterize":
        return ImageOps.posterize(img, int(m))
    if op == "Solarize":
        return ImageOps.solarize(img, m)
    if op == "AutoContrast":
        return ImageOps.autocontrast(img)
    if op == "Equalize":
        return ImageOps.equalize(img)
    if op == "Invert":
        return ImageOps.invert(img)
    if op == "Identity":
        return img
    # timm's own (timm/data/auto_augment.py): Pillow's transform of the matrix itself,
    # ImageEnhance of the factor itself, and solarize_add's table.
    matrices = {"TimmShearX": (1, m, 0, 0, 1, 0), "TimmShearY": (1, 0, 0, m, 1, 0),
                "TimmTranslateX": (1, 0, m, 0, 1, 0), "TimmTranslateY": (1, 0, 0, 0, 1, m)}
    if op in matrices:
        return img.transform(img.size, Image.AFFINE, matrices[op], resample, fillcolor=fill)
    enhancers = {"TimmBrightness": ImageEnhance.Brightness, "TimmColor": ImageEnhance.Color,
                 "TimmContrast": ImageEnhance.Contrast, "TimmSharpness": ImageEnhance.Sharpness}
    if op in enhancers:
        return enhancers[op](img).enhance(m)
    if op == "SolarizeAdd":
        table = [min(255, i + int(m)) if i < 128 else i for i in range(256)]
        return img.point(table * 3)
    if op == "TimmGaussianBlur":
        return img.filter(ImageFilter.GaussianBlur(radius=m))
    raise ValueError(f"unknown augmentation operation {op}")


# torchvision's _functional_pil, for an RGB image.
def adjust_brightness(img, factor):
    return ImageEnhance.Brightness(img).enhance(factor)


def adjust_contrast(img, factor):
    return ImageEnhance.Contrast(img).enhance(factor)


def adjust_saturation(img, factor):
    return ImageEnhance.Color(img).enhance(factor)


def adjust_hue(img, factor):
    h, s, v = img.convert("HSV").split()
    np_h = np.array(h, dtype=np.uint8)
    np_h += np.int32(factor * 255).astype(np.uint8)
    return Image.merge("HSV", (Image.fromarray(np_h, "L"), s, v)).convert("RGB")


def to_grayscale(img):
    grey = np.array(img.convert("L"))
    return Image.fromarray(np.dstack([grey, grey, grey]), "RGB")


ADJUST = {"brightness": adjust_brightness, "contrast": adjust_contrast,
          "saturation": adjust_saturation, "hue": adjust_hue}


def cut(im, params, size, resample):
    """F.resized_crop on a PIL image: crop, then resize unless the box already has the size."""
    box = params["crop"]
    im = im.crop((box["left"], box["top"], box["left"] + box["width"], box["top"] + box["height"]))
    return im if im.size == tuple(size) else im.resize(tuple(size), resample)


def _pil(a):
    return Image.fromarray(np.ascontiguousarray(a), "RGB")


def _rotation(a, params, spec):  # F.rotate: img.rotate(angle, interpolation, False, center, fillcolor=fill)
    if "rotation" not in params:
        return a
    rotation = spec.get("random_rotation", {})
    fill = tuple(int(v) for v in rotation.get("fill", [0, 0, 0]))
    resample = FILTERS[rotation.get("interpolation", "nearest")]
    center = rotation.get("center")  # given, it turns Pillow's shortcuts for 0, 90, 180, 270 off
    return np.asarray(_pil(a).rotate(params["rotation"], resample, False, center, fillcolor=fill))


def _affine(a, params, spec):  # F.affine: img.transform(size, AFFINE, matrix, interpolation, fillcolor=fill)
    if "affine" not in params:
        return a
    affine, drawn = spec["random_affine"], params["affine"]
    fill = tuple(int(v) for v in affine.get("fill", [0, 0, 0]))
    im = _pil(a)
    center = affine.get("center") or [im.size[0] * 0.5, im.size[1] * 0.5]
    inverse = inverse_affine_matrix_v2 if affine.get("v2") else inverse_affine_matrix
    matrix = inverse(center, drawn["angle"], drawn["translate"], drawn["scale"], drawn["shear"])
    resample = FILTERS[affine.get("interpolation", "nearest")]
    return np.asarray(im.transform(im.size, Image.AFFINE, matrix, resample, fillcolor=fill))


def _policy(a, params, spec):
    if "augment" not in params:
        return a
    policies = ("trivial_augment", "rand_augment", "auto_augment", "timm_rand_augment",
                "timm_auto_augment")
    policy = next((spec[k] for k in policies if k in spec), {})
    fill = tuple(int(v) for v in policy.get("fill", [0, 0, 0]))
    resample = FILTERS.get(policy.get("interpolation", "nearest"))  # timm's may be "random"
    im = _pil(a)
    for op in params["augment"]:
        # timm's geometric operations carry the filter each drew (or its policy's).
        own = FILTERS[op["interpolation"]] if "interpolation" in op else resample
        im = apply_op(im, op["op"], op["magnitude"], fill, own)
    return np.asarray(im)


def _aug_mix(a, params, spec):  # timm's AugMixAugment._apply_basic/_apply_blended, recorded draws
    if "aug_mix" not in params:
        return a
    mix, policy = params["aug_mix"], spec["timm_aug_mix"]
    fill = tuple(int(v) for v in policy.get("fill", [128, 128, 128]))
    resample = FILTERS.get(policy.get("interpolation", "random"))
    im = _pil(a)

    def chained(chain):
        aug = im
        for op in chain:
            own = FILTERS[op["interpolation"]] if "interpolation" in op else resample
            aug = apply_op(aug, op["op"], op["magnitude"], fill, own)
        return aug
    if policy.get("blended"):
        # _calc_blended_weights in numpy 2's float32 (the Python float start is weak), then one
        # Image.blend per chain.
        ws = np.array(mix["weights"], dtype=np.float32) * np.float32(mix["blend"])
        cump = 1.0
        rws = []
        for w in ws[::-1]:
            alpha = w / cump
            cump *= (1 - alpha)
            rws.append(alpha)
        out = im
        for w, chain in zip(np.array(rws[::-1], dtype=np.float32), mix["chains"]):
            out = Image.blend(out, chained(chain), float(w))
        return np.asarray(out)
    mixed = np.zeros(a.shape, dtype=np.float32)
    for weight, chain in zip(mix["weights"], mix["chains"]):
        mixed += np.float32(weight) * np.asarray(chained(chain), dtype=np.float32)
    np.clip(mixed, 0, 255.0, out=mixed)
    return np.asarray(Image.blend(im, Image.fromarray(mixed.astype(np.uint8)),
                                  float(np.float32(mix["blend"]))))


def _perspective(a, params, spec):  # F.perspective: img.transform(size, PERSPECTIVE, coefficients, ...)
    if not params.get("perspective"):
        return a
    perspective = spec["random_perspective"]
    fill = tuple(int(v) for v in perspective.get("fill", [0, 0, 0]))
    im = _pil(a)
    resample = FILTERS[perspective.get("interpolation", "bilinear")]
    return np.asarray(im.transform(im.size, Image.PERSPECTIVE, params["perspective"], resample,
                                   fillcolor=fill))


def _jitter(a, params, spec):
    color = params.get("color") or {}
    im = _pil(a)
    for name in color.get("order", []):
        im = ADJUST[name](im, float(np.float32(color[name])))
    return np.asarray(im)


def _grey(a, params, spec):
    return np.asarray(to_grayscale(_pil(a))) if params.get("grayscale") else a


def _blur(a, params, spec):
    return gaussian_blur(np.ascontiguousarray(a), params["blur"]) if params.get("blur") else a


def _single(method):
    def apply_single(a, params, spec):
        if not params.get("color_ops", {}).get(method):
            return a
        op = next(o for o in spec["color_ops"] if o["op"] == method)
        _, argument, apply = COLOR_OPS[method]
        return np.asarray(apply(_pil(a), op[argument] if argument else None))
    return apply_single


# The steps that keep the image's size, by the Transform method's name (src/transform/order.rs):
# the spec's key of each, and what it does to an H x W x 3 uint8 array with a sample's parameters.
SAME_SIZE_STEPS = {
    "random_rotation": ("random_rotation", _rotation),
    "random_affine": ("random_affine", _affine),
    "trivial_augment_wide": ("trivial_augment", _policy),
    "rand_augment": ("rand_augment", _policy),
    "auto_augment": ("auto_augment", _policy),
    "timm_rand_augment": ("timm_rand_augment", _policy),
    "timm_auto_augment": ("timm_auto_augment", _policy),
    "timm_aug_mix": ("timm_aug_mix", _aug_mix),
    "random_perspective": ("random_perspective", _perspective),
    "color_jitter": ("color_jitter", _jitter),
    "grayscale": ("grayscale", _grey),
    "gaussian_blur": ("gaussian_blur", _blur),
}


def step_order(spec, params):
    """The methods of the spec's same-size steps in the order they run: its "order", or
    torchvision's usual one (the single-operation transforms in theirs, after RandomGrayscale);
    without a spec, those of the parameters that need none (rotation, jitter, grey, blur)."""
    if "steps" in params:
        return list(params["steps"])
    if spec.get("order"):
        return list(spec["order"])
    if not spec:
        drawn = (("random_rotation", "rotation"), ("color_jitter", "color"),
                 ("grayscale", "grayscale"), ("gaussian_blur", "blur"))
        return [method for method, key in drawn if key in params]
    steps = [m for m, (key, _) in SAME_SIZE_STEPS.items()
             if m != "gaussian_blur" and spec.get(key) is not None]
    steps += [op["op"] for op in spec.get("color_ops") or []]
    return steps + (["gaussian_blur"] if spec.get("gaussian_blur") is not None else [])


def finish(a, params, spec=None):
    """The flips, then the same-size steps in their order, of an H x W x 3 uint8 array."""
    spec = spec or {}
    if params.get("flip"):
        a = a[:, ::-1]
    if params.get("vflip"):
        a = a[::-1]
    for method in step_order(spec, params):
        _, apply = SAME_SIZE_STEPS.get(method, (None, _single(method)))
        a = apply(a, params, spec)
    return a


def resize_target(spec, size):
    """torchvision Resize(n) or Resize(n, max_size=m) ("short:N" or "short:N:M": its
    _compute_resized_output_size), timm's ResizeKeepRatio((H, W), longest) without its random
    factors ("keep_ratio:W:H", longest 0, or "keep_ratio:W:H:longest", longest 1: its
    get_params), or an exact (w, h)."""
    resize = spec.get("resize")
    if resize is None:
        return size
    if isinstance(resize, list):
        return tuple(resize)
    if resize.startswith("keep_ratio:"):
        target_w, target_h, *flag = resize.split(":")[1:]
        longest = 1.0 if flag == ["longest"] else 0.0
        w, h = size
        ratio_h, ratio_w = h / int(target_h), w / int(target_w)
        ratio = max(ratio_h, ratio_w) * longest + min(ratio_h, ratio_w) * (1. - longest)
        return round(w / ratio), round(h / ratio)
    n, *max_size = (int(v) for v in resize.split(":")[1:])
    w, h = size
    short, long_ = (w, h) if w <= h else (h, w)
    new_short, new_long = n, int(n * long_ / short)
    if max_size and new_long > max_size[0]:
        new_short, new_long = int(max_size[0] * new_short / new_long), max_size[0]
    return (new_short, new_long) if w <= h else (new_long, new_short)


def center_crop(a, crop, fill=None):
    """torchvision F.center_crop on the HWC array: zero padding (timm's CenterCropOrPad: its
    fill), then round-half-even offsets."""
    cw, ch = crop
    h, w = a.shape[:2]
    if cw > w or ch > h:
        pad_l, pad_t = ((cw - w) // 2 if cw > w else 0), ((ch - h) // 2 if ch > h else 0)
        pad_r, pad_b = ((cw - w + 1) // 2 if cw > w else 0), ((ch - h + 1) // 2 if ch > h else 0)
        a = np.stack([np.pad(a[..., c], ((pad_t, pad_b), (pad_l, pad_r)),
                             constant_values=(fill or (0, 0, 0))[c]) for c in range(3)], axis=-1)
        h, w = a.shape[:2]
    top, left = int(round((h - ch) / 2.0)), int(round((w - cw) / 2.0))
    return a[top:top + ch, left:left + cw]


RANDOM = ("random_resized_crop", "random_crop", "hflip", "vflip", "random_rotation", "random_affine", "random_perspective", "trivial_augment",
          "rand_augment",
          "auto_augment", "random_resize", "random_shortest_size", "timm_rand_augment", "timm_auto_augment", "timm_aug_mix", "color_jitter", "grayscale", "color_ops", "gaussian_blur", "random_erasing")


def is_random(spec):
    return any(spec.get(key) is not None for key in RANDOM)


def transformed(path, spec, decoded=None, index=0):
    """What Pillow + torchvision make of the file under `spec` (as sample `index` of a random
    one), as a NumPy array; `decoded` is its `Image.open(f).convert('RGB')` when the caller has
    it already."""
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
    params = draw(spec, im.size, index)
    spec = resolved(spec, params.get("resize"), im.size)
    resample = FILTERS[params.get("interpolation", spec.get("filter", "bilinear"))]
    if "crop" in params:
        im = cut(im, params, spec["random_resized_crop"]["size"], resample)
    else:
        target = resize_target(spec, im.size)
        if target != im.size:
            im = im.resize(target, resample)
    for padding, fill, mode in pads(spec, im.size):
        im = tv_pad(im, padding, fill, mode)
    if "random_crop" in params:  # F.crop
        b = params["random_crop"]
        im = im.crop((b["left"], b["top"], b["left"] + b["width"], b["top"] + b["height"]))
    a = np.asarray(im)
    if "crop" in spec:
        a = center_crop(a, spec["crop"], spec.get("crop_fill"))
    a = finish(a, params, spec)
    dtype = spec.get("dtype", "u8")
    if dtype != "u8":
        if spec.get("reciprocal_scale"):  # v2's ToDtype(torch.float32, scale=True)
            t = a.astype(np.float32) * np.float32(1.0 / 255)
        else:
            t = a.astype(np.float32) / np.float32(255)
        norm = spec.get("normalize")
        if norm is not None:
            norm = IMAGENET if norm == "imagenet" else norm
            t = (t - np.array(norm["mean"], np.float32)) / np.array(norm["std"], np.float32)
        a = t.astype(np.float16) if dtype == "f16" else t
    if spec.get("channel_order") == "bgr":
        a = a[:, :, ::-1]
    boxes = params.get("erase") or []
    if isinstance(boxes, dict):
        boxes = [boxes]
    for box in boxes:  # F.erase on the tensor: the box set to its values, later boxes on top
        a = a.copy()
        top, left, h, w = box["top"], box["left"], box["height"], box["width"]
        value = spec["random_erasing"].get("value", [0, 0, 0])
        if isinstance(value, str):  # normal values: drawn with the box's key, or given
            noise = box["noise"]
            per_channel = value == "normal_per_channel"
            if isinstance(noise, int):
                values = drawn_noise(noise, *((1, 1) if per_channel else (h, w)))
            else:
                values = np.asarray(noise, np.float32).reshape((3, 1, 1) if per_channel
                                                               else (3, h, w))
            value = np.broadcast_to(values, (3, h, w)).transpose(1, 2, 0)
        else:
            # float32 first, as the tensor holds it (float16 outputs round from there).
            value = np.broadcast_to(np.asarray(value, np.float32), (h, w, 3))
        a[top:top + h, left:left + w, :] = value
    if spec.get("layout", "hwc") == "chw":
        a = a.transpose(2, 0, 1)
    return np.ascontiguousarray(a)


def readable(error, path):
    """Pillow's message, with the in-memory file it was given named by its path instead of a
    Python object repr ("cannot identify image file <_io.BytesIO object at 0x...>")."""
    return re.sub(r"<_io\.BytesIO object at 0x[0-9a-fA-F]+>", path, str(error))


def main():
    spec, out_dir, files = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3:]
    # The i-th file is sample first_index + i of a random spec.
    first = spec.get("first_index", 0)
    for i, path in enumerate(files):
        try:
            np.save(os.path.join(out_dir, f"{i}.npy"), transformed(path, spec, index=first + i))
        except Exception as e:  # Pillow's verdict is the reference, whatever it raises
            with open(os.path.join(out_dir, f"{i}.err"), "w") as f:
                f.write(f"{type(e).__name__}: {readable(e, path)}")
    print(f"Pillow {PIL.__version__}, libjpeg-turbo {features.version('libjpeg_turbo')}")


if __name__ == "__main__":
    main()
