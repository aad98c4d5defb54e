#!/usr/bin/env python3
"""gpuprep against real torchvision on a folder of photos, for the GPU machine (torch and
torchvision installed there): for each training Compose below, each file and each seed,
torchvision's own output after torch.manual_seed(seed) on the PIL image, and gpuprep's (on the
backend asked for) given the parameters gpuprep.torchvision_params draws after the same seed;
with timm installed, timm's create_transform recipes too (seeding Python's and numpy's RNGs as
well, which timm draws from). Prints one JSON line per Compose and exits 1 if any output
differs.

usage: seeded_against_torchvision.py DIR [--backend gpu|cpu] [--seeds 2]
"""
import argparse
import glob
import json
import os
import random
import sys

import numpy as np
import torch
import torchvision
import torchvision.transforms as T
from PIL import Image

import gpuprep

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def composes():
    """The Composes checked: torchvision's reference recipes' pieces and every map sampling."""
    bilinear, bicubic = T.InterpolationMode.BILINEAR, T.InterpolationMode.BICUBIC
    crop = [T.RandomResizedCrop(224), T.RandomHorizontalFlip()]
    tensor = [T.PILToTensor()]
    return {
        "train_jitter_erase": crop + [T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(0.2),
                                      T.ToTensor(), T.Normalize(MEAN, STD),
                                      T.RandomErasing(0.5)],
        "erase_random_values": crop + [T.ToTensor(), T.Normalize(MEAN, STD),
                                       T.RandomErasing(0.8, value="random")],
        "rand_augment_bilinear": crop + [T.RandAugment(interpolation=bilinear)] + tensor,
        "rand_augment_strong_nearest": crop + [T.RandAugment(4, 27, fill=[10, 20, 30])] + tensor,
        "trivial_augment_bilinear": crop + [T.TrivialAugmentWide(interpolation=bilinear)] + tensor,
        "auto_augment_bicubic": crop + [T.AutoAugment(interpolation=bicubic)] + tensor,
        "rotation_bicubic": crop + [T.RandomRotation(30, bicubic, fill=[1, 2, 3]),
                                    T.ColorJitter(0.4, 0.4, 0.4)] + tensor,
        "rotation_about_a_point": crop + [
            T.RandomRotation(45, bilinear, center=(30.5, 190), fill=[9, 99, 199])] + tensor,
        "half_turn_about_a_point_nearest": crop + [
            T.RandomRotation((180, 180), center=(100, 60)), T.ColorJitter(0.4)] + tensor,
        "affine_bilinear": crop + [T.RandomAffine(25, translate=(0.1, 0.2), scale=(0.8, 1.2),
                                                  shear=(-10, 10, -5, 5),
                                                  interpolation=bilinear)] + tensor,
        "affine_scaling_nearest": crop + [T.RandomAffine(0, translate=(0.1, 0.1),
                                                         scale=(0.7, 1.3))] + tensor,
        "simclr_blur": crop + [T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8),
                               T.RandomGrayscale(0.2),
                               T.RandomApply([T.GaussianBlur(23)], p=0.5)] + tensor,
        "center_blur_7": [T.Resize(256), T.CenterCrop(224), T.GaussianBlur(7, (0.1, 2.0))] + tensor,
        "perspective_bilinear": crop + [T.RandomPerspective(0.5, p=0.7),
                                        T.ColorJitter(0.4, 0.4, 0.4)] + tensor,
        "perspective_after_rand_augment_nearest": crop + [
            T.RandAugment(interpolation=bilinear),
            T.RandomPerspective(0.9, p=1.0, interpolation=T.InterpolationMode.NEAREST,
                                fill=[1, 2, 3])] + tensor,
        "perspective_bicubic_full": crop + [T.RandomPerspective(1.0, p=1.0,
                                                                interpolation=bicubic)] + tensor,
        "random_apply_coins_nested": crop[:1] + [
            T.RandomApply([T.RandomHorizontalFlip(0.8)], p=0.5),
            T.RandomApply([T.RandomPerspective(0.5, p=0.8)], p=0.5),
            T.Compose([T.RandomApply([T.RandomGrayscale(0.5)], p=0.6),
                       T.RandomApply([T.RandomSolarize(128, p=0.9)], p=0.5)])] + tensor,
        # The steps that keep the image's size in an order of the Compose's own.
        "ordered_jitter_before_rotation": crop + [T.ColorJitter(0.4, 0.4, 0.4, 0.1),
                                                  T.RandomGrayscale(0.3), T.RandomRotation(20),
                                                  T.RandomEqualize(0.5)] + tensor,
        "ordered_blur_invert_rand_augment": crop + [
            T.RandomApply([T.GaussianBlur(9)], p=0.5), T.RandomInvert(0.3),
            T.RandAugment(interpolation=bilinear), T.RandomPerspective(0.4, p=0.5),
            T.ColorJitter(0.3, 0.3)] + tensor,
        "ordered_perspective_before_affine": crop + [
            T.RandomSolarize(160, p=0.5), T.RandomPerspective(0.5, p=0.8),
            T.RandomAffine(15, translate=(0.1, 0.1), interpolation=bilinear)] + tensor,
        # RandomChoice and RandomOrder of them, drawn with Python's random (v1).
        "random_choice_geometry_then_random_order": crop + [
            T.RandomChoice([T.RandomRotation(20, interpolation=bilinear),
                            T.RandomPerspective(0.5, p=1.0), T.RandomAdjustSharpness(2.0, p=1.0)],
                           p=[2, 1, 1]),
            T.RandomOrder([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(0.3),
                           T.RandomApply([T.GaussianBlur(9)], p=0.5)])] + tensor,
        "random_order_rand_augment_invert_equalize": crop + [
            T.RandomOrder([T.RandAugment(interpolation=bilinear), T.RandomInvert(0.3),
                           T.RandomEqualize(0.4)])] + tensor,
        "padded_random_crop": [T.Resize(256), T.RandomCrop(224, padding=16,
                                                           padding_mode="reflect"),
                               T.RandomHorizontalFlip()] + tensor,
        **v2_composes(),
        **timm_composes(),
    }


def v2_composes():
    """torchvision's reference recipes with --use-v2 (transforms.v2 on the PIL image): its
    policies (whose Solarize thresholds are not v1's; RandAugment at bin 20, where they differ)
    and RandomAffine (whose matrix arithmetic is not v1's)."""
    from torchvision.transforms import v2

    bilinear = v2.InterpolationMode.BILINEAR
    crop = [v2.RandomResizedCrop(224, interpolation=bilinear, antialias=True),
            v2.RandomHorizontalFlip()]
    tail = [v2.PILToTensor(), v2.ToDtype(torch.float, scale=True), v2.Normalize(MEAN, STD),
            v2.RandomErasing(0.25), v2.ToPureTensor()]
    return {
        "v2_rand_augment_bin20": crop + [v2.RandAugment(3, 20, interpolation=bilinear)] + tail,
        "v2_trivial_augment_wide": crop + [v2.TrivialAugmentWide(interpolation=bilinear)] + tail,
        "v2_auto_augment_imagenet": crop + [v2.AutoAugment(interpolation=bilinear)] + tail,
        "v2_affine_bilinear": crop + [v2.RandomAffine(25, translate=(0.1, 0.2), scale=(0.8, 1.2),
                                                      shear=(-10, 10, -5, 5),
                                                      interpolation=bilinear)] + tail,
        "v2_perspective_bilinear": crop + [v2.RandomPerspective(0.5, p=0.8)] + tail,
        "v2_gaussian_blur": crop + [v2.RandomApply([v2.GaussianBlur(23)], p=0.5)] + tail,
        # RandomChoice and RandomOrder, drawn with torch (multinomial, randperm).
        "v2_random_choice_then_random_order": crop + [
            v2.RandomChoice([v2.RandomAffine(15, interpolation=bilinear),
                             v2.ColorJitter(0.4, 0.4)], p=[0.3, 0.7]),
            v2.RandomOrder([v2.RandomGrayscale(0.3), v2.RandomSolarize(128, p=0.5),
                            v2.RandomPosterize(4, p=0.5)])] + tail,
    }


def timm_composes():
    """timm's training recipes (create_transform with its RandAugment, AutoAugment, AugMix and
    RandomErasing), where timm is installed."""
    try:
        from timm.data import create_transform
    except ImportError:
        return {}
    recipe = create_transform(224, is_training=True, auto_augment="rand-m9-mstd0.5-inc1",
                              re_prob=0.25)
    every_op = create_transform(224, is_training=True, interpolation="random",
                                auto_augment="rand-m9-n4-mstd0.5-p1.0-inc1")
    # timm's train.py defaults to re_mode='pixel'.
    pixel = create_transform(224, is_training=True, re_prob=0.8, re_mode="pixel", re_count=3)
    composes = {"timm_rand_m9_mstd05_inc1": list(recipe.transforms),
                "timm_rand_every_op_random_filters": list(every_op.transforms),
                "timm_erase_pixel_three_boxes": list(pixel.transforms)}
    # timm's AutoAugment policies (train.py's --aa original / v0 ...), with and without noise.
    for config, interpolation in (("original", "random"), ("originalr-mstd0.5", "bilinear"),
                                  ("v0", "bicubic"), ("v0r-mstd1.5", "random")):
        recipe = create_transform(224, is_training=True, auto_augment=config,
                                  interpolation=interpolation, re_prob=0.25)
        composes["timm_aa_" + config.replace("-", "_").replace(".", "")] = list(recipe.transforms)
    # DeiT III's three-augment (train.py's --aa 3a, with the ColorJitter create_transform keeps
    # for it): solarize, grey or Pillow's Gaussian blur; and with noisy magnitudes.
    for config, jitter in (("3a", 0.3), ("3a-mstd2", 0.4)):
        recipe = create_transform(224, is_training=True, auto_augment=config,
                                  interpolation="bicubic", color_jitter=jitter)
        composes["timm_3a_" + config.replace("-", "_")] = list(recipe.transforms)
    # timm's AugMix (train.py's --aa augmix-m3-w3 ...), and blended.
    for config in ("augmix-m3-w3", "augmix-m9-w2-d3-a0.5-mstd0.5", "augmix-m3-w3-b1",
                   "augmix-m9-w2-d3-a0.5-b1"):
        recipe = create_transform(224, is_training=True, auto_augment=config, re_prob=0.25)
        composes["timm_" + config.replace("-", "_").replace(".", "")] = list(recipe.transforms)
    return composes


def seed_all(seed):
    """The seed of every RNG the transforms draw from: torch's, and Python's and numpy's (timm's)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--backend", default="gpu")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--only", default="", help="only the composes whose names hold this")
    args = parser.parse_args()
    paths = sorted(glob.glob(os.path.join(args.dir, "*.jpg")))
    pipeline = gpuprep.Pipeline(args.backend)
    failed = False
    for name, steps in composes().items():
        if args.only not in name:
            continue
        compose = T.Compose(steps)
        transform = gpuprep.from_torchvision(compose)
        checked, differing = 0, []
        for path in paths:
            image = Image.open(path).convert("RGB")
            for seed in range(args.seeds):
                seed_all(seed)
                expected = compose(image).numpy()
                seed_all(seed)
                params = gpuprep.torchvision_params(compose, image.size)
                batch, _ = pipeline.preprocess([path], transform, params=[params])
                checked += 1
                if not np.array_equal(batch[0], expected):
                    differing.append(f"{os.path.basename(path)} seed {seed}")
        failed |= bool(differing)
        print(json.dumps({"compose": name, "checked": checked, "identical": checked - len(differing),
                          "differing": differing[:5], "backend": pipeline.backend,
                          "torchvision": torchvision.__version__}), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
