#!/usr/bin/env python3
"""MixUp and CutMix from real torchvision and timm, into tests/goldens/mix.json and mix.npz.

Each case: a batch transform, the batch (float32, float16 or uint8; CHW or HWC), the parameters
gpuprep draws for it, and the images and soft labels the real library gives for them:
torchvision's v2 MixUp / CutMix replayed with those parameters (`transform(inpt, params)`), and
timm's Mixup called after seeding numpy's global RNG as gpuprep's draw was (timm draws from it),
so that its output also holds gpuprep's draws to timm's. An HWC batch goes through the library
as its CHW permutation. python/tests/test_mix.py replays each case with numpy (no torch needed)
and asserts every bit.

Needs torch, torchvision, timm and gpuprep of this tree (their versions are written into
mix.json):
    python3 tools/mix_goldens.py
"""
import json
import pathlib

import numpy as np
import timm
import torch
import torchvision
from timm.data import Mixup
from torchvision.transforms import v2

from gpuprep import _mix

GOLDENS = pathlib.Path(__file__).resolve().parent.parent / "tests" / "goldens"
CLASSES = 5


def batches():
    """The test batches: 8 images of 10 x 12, values as a normalised batch's (and uint8)."""
    rng = np.random.RandomState(2026)
    chw = (rng.standard_normal((8, 3, 10, 12)) * 1.7).astype(np.float32)
    return {"float32": chw, "float16": chw.astype(np.float16),
            "uint8": rng.randint(0, 256, (8, 3, 10, 12)).astype(np.uint8)}


def torchvision_cases():
    for seed in range(3):
        yield "mixup", {"alpha": 0.2}, "float32", "chw", seed
    yield "mixup", {"alpha": 1.0}, "float16", "chw", 7
    yield "mixup", {"alpha": 1.0}, "float32", "hwc", 8
    for seed in range(4):
        yield "cutmix", {"alpha": 1.0}, "float32", "chw", seed
    yield "cutmix", {"alpha": 1.0}, "uint8", "chw", 4
    yield "cutmix", {"alpha": 0.5}, "float32", "hwc", 5


def timm_cases():
    both = {"mixup_alpha": 0.8, "cutmix_alpha": 1.0}
    for mode in ("batch", "pair", "elem"):
        for seed in range(4):
            yield {**both, "mode": mode}, "float32", "chw", seed
        yield {**both, "mode": mode, "prob": 0.5}, "float16", "chw", 11
        yield {**both, "mode": mode, "cutmix_minmax": (0.2, 0.8)}, "float32", "chw", 12
        yield {"mixup_alpha": 0.0, "cutmix_alpha": 1.0, "mode": mode, "correct_lam": False},\
            "float32", "hwc", 13
        yield {"mixup_alpha": 0.4, "mode": mode, "label_smoothing": 0.0}, "float32", "chw", 14


def through_library(call, images, layout):
    """`call` on the batch as the library takes it (CHW), the images back in `layout`."""
    x = torch.from_numpy(images.copy())
    if layout == "hwc":
        x = x.permute(0, 3, 1, 2)
    out, targets = call(x)
    if layout == "hwc":
        out = out.permute(0, 2, 3, 1)
    return out.contiguous().numpy(), targets.numpy()


def main():
    data = batches()
    labels = np.random.RandomState(7).randint(0, CLASSES, 8).astype(np.int64)
    arrays = {"labels": labels, **{f"input.{dtype}": batch for dtype, batch in data.items()}}
    cases = []

    def add(name, spec, dtype, layout, params, result):
        arrays[f"{name}.images"], arrays[f"{name}.targets"] = result
        cases.append({"name": name, **spec, "dtype": dtype, "layout": layout, "params": params})

    for i, (kind, args, dtype, layout, seed) in enumerate(torchvision_cases()):
        images = data[dtype] if layout == "chw" else data[dtype].transpose(0, 2, 3, 1).copy()
        ours = (_mix.MixUp if kind == "mixup" else _mix.CutMix)(num_classes=CLASSES, **args)
        params = ours.draw(np.random.RandomState(seed), 8, *_mix._spatial(images.shape, layout))
        real = (v2.MixUp if kind == "mixup" else v2.CutMix)(num_classes=CLASSES, **args)
        y = torch.from_numpy(labels)

        def call(x, real=real, params=params, y=y):
            given = {**params, "labels": y, "batch_size": 8}
            return real.transform(x, given), real.transform(y, given)
        add(f"torchvision{i}", {"library": "torchvision", "kind": kind, "args": args,
                                "seed": seed}, dtype, layout, params,
            through_library(call, images, layout))

    for i, (args, dtype, layout, seed) in enumerate(timm_cases()):
        images = data[dtype] if layout == "chw" else data[dtype].transpose(0, 2, 3, 1).copy()
        args = {"num_classes": CLASSES, **args}
        params = _mix.TimmMixup(**args).draw(np.random.RandomState(seed), 8,
                                             *_mix._spatial(images.shape, layout))
        real = Mixup(**args)

        def call(x, real=real, seed=seed):
            np.random.seed(seed)
            return real(x, torch.from_numpy(labels))
        add(f"timm{i}", {"library": "timm", "kind": "timm", "args": args, "seed": seed},
            dtype, layout, params, through_library(call, images, layout))

    versions = {"torch": torch.__version__, "torchvision": torchvision.__version__,
                "timm": timm.__version__, "numpy": np.__version__}
    np.savez_compressed(GOLDENS / "mix.npz", **arrays)
    with open(GOLDENS / "mix.json", "w") as f:
        json.dump({"versions": versions, "classes": CLASSES, "cases": cases}, f, indent=1)
        f.write("\n")
    print(f"{len(cases)} cases from {versions}")


if __name__ == "__main__":
    main()
