#!/usr/bin/env python3
"""NVIDIA DALI's automatic augmentations, the speed peer of gpuprep's augmentation policies on the
GPU machine: a training pipeline as DALI's documentation builds one, timed in steady state.

usage: python3 tools/dali_augment.py DIR [--policy rand|trivial|auto] [--interpolation linear|nn]
                                      [--size 224] [--repeat 10]

  decoders.image_random_crop (mixed: hardware engine + CUDA; scale 0.08-1, ratio 3/4-4/3) ->
  resize SIZE x SIZE (linear, antialiased) -> the policy (nvidia.dali.auto_aug: rand_augment
  n=2 m=9, trivial_augment_wide, or auto_augment's ImageNet policy; its shears, translations and
  rotations sampled with INTERPOLATION) -> crop_mirror_normalize (random mirror, ImageNet mean
  and std, float32 CHW).

The timed span is --repeat iterations of one batch of the whole set, prefetching, as the
measuring kit's peer_dali.py times DALI: compare it with gpuprep streaming the set several times
over. DALI's policies are its own (their magnitudes, fills and sampling are not torchvision's):
the figure is a speed, not a parity. Prints JSON lines.
"""
import argparse
import glob
import json
import os
import time

import numpy as np

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def log(**fields):
    print(json.dumps(fields), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--policy", default="rand", choices=["rand", "trivial", "auto"])
    parser.add_argument("--interpolation", default="linear", choices=["linear", "nn"])
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    paths = sorted(glob.glob(os.path.join(args.dir, "*.jpg")))
    blobs = [np.frombuffer(open(p, "rb").read(), np.uint8) for p in paths]
    n, s = len(blobs), args.size
    try:
        from nvidia import dali
    except ImportError:
        log(what="dali", error="DALI is not importable on this machine")
        return
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.auto_aug import auto_augment, rand_augment, trivial_augment

    interp = {"linear": types.INTERP_LINEAR, "nn": types.INTERP_NN}[args.interpolation]
    log(what="setup", dir=args.dir, n=n, policy=args.policy, interpolation=args.interpolation,
        dali=dali.__version__)

    @pipeline_def(batch_size=n, num_threads=os.cpu_count(), device_id=0, prefetch_queue_depth=2,
                  seed=1, enable_conditionals=True)
    def pipe():
        jpegs = fn.external_source(source=lambda: blobs, batch=True, dtype=types.UINT8)
        images = fn.decoders.image_random_crop(jpegs, device="mixed", output_type=types.RGB,
                                               adjust_orientation=False, random_area=[0.08, 1.0],
                                               random_aspect_ratio=[0.75, 4 / 3], num_attempts=10)
        images = fn.resize(images, resize_x=s, resize_y=s, interp_type=types.INTERP_LINEAR,
                           antialias=True)
        if args.policy == "rand":
            images = rand_augment.rand_augment(images, n=2, m=9, shape=(s, s), interp_type=interp)
        elif args.policy == "trivial":
            images = trivial_augment.trivial_augment_wide(images, shape=(s, s), interp_type=interp)
        else:
            images = auto_augment.auto_augment(images, policy_name="image_net", shape=(s, s),
                                               interp_type=interp)
        return fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                        mean=(MEAN * 255).tolist(), std=(STD * 255).tolist(),
                                        mirror=fn.random.coin_flip(probability=0.5))

    pipeline = pipe()
    pipeline.build()
    for _ in range(3):
        pipeline.run()
    start = time.perf_counter()
    for _ in range(args.repeat):
        (out,) = pipeline.run()
    out.as_cpu()
    elapsed = time.perf_counter() - start
    log(what=f"dali_{args.policy}_augment", img_s=args.repeat * n / elapsed, batch=n,
        repeat=args.repeat, interpolation=args.interpolation)


if __name__ == "__main__":
    main()
