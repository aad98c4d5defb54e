#!/usr/bin/env python3
"""Ray Data turning a folder of images into normalised arrays with gpuprep: `read_binary_files`
reads the encoded files, and `map_batches` runs them through `Preprocess`, a callable class of
which each Ray actor holds one gpuprep Pipeline (the GPU's compiled shaders, opened once), so a
batch is one call: decoding on the actor's threads, the pixel stages on its GPU or CPU, exactly
Pillow + torchvision's numbers. Writes the arrays and their paths to OUT (.npz).

usage: ray_preprocess.py FOLDER OUT.npz [--batch-size 64] [--actors 1] [--backend auto|gpu|cpu]
"""
import argparse

import numpy as np
import ray

import gpuprep


class Preprocess:
    """A Ray Data callable class: batches of `read_binary_files` rows ("bytes", "path") in,
    batches of ("image": the transform's output, "path") out. Images that fail to decode are
    left out of the batch (their paths with them), as `errors="skip"` says.

    transform: a function returning the gpuprep.Transform (called in the actor, so that nothing
    but the function travels to it); default the imagenet-eval preset."""

    def __init__(self, transform=gpuprep.Transform.imagenet_eval, backend="auto"):
        self.transform = transform()
        self.pipeline = gpuprep.Pipeline(backend)

    def __call__(self, batch):
        images, outcomes = self.pipeline.preprocess(list(batch["bytes"]), self.transform,
                                                    errors="skip")
        ok = np.array([o["ok"] for o in outcomes], dtype=bool)
        return {"image": images, "path": np.asarray(batch["path"])[ok]}


def preprocess_folder(folder, batch_size=64, actors=1, backend="auto",
                      transform=gpuprep.Transform.imagenet_eval):
    """The Ray Dataset of `folder`'s images through `transform`: columns "image" and "path"."""
    files = ray.data.read_binary_files(folder, include_paths=True)
    # Each actor takes a CPU: leave one for reading, or the reads wait for ever.
    return files.map_batches(Preprocess, batch_size=batch_size,
                             compute=ray.data.ActorPoolStrategy(size=actors),
                             batch_format="numpy",
                             fn_constructor_kwargs={"transform": transform, "backend": backend})


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder")
    p.add_argument("out")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--actors", type=int, default=1,
                   help="gpuprep actors, a CPU each (one per GPU on a GPU machine)")
    p.add_argument("--backend", default="auto")
    a = p.parse_args()
    ray.init()
    rows = preprocess_folder(a.folder, a.batch_size, a.actors, a.backend).take_all()
    rows.sort(key=lambda r: r["path"])
    images = np.stack([r["image"] for r in rows]) if rows else np.zeros((0, 3, 224, 224), np.float32)
    np.savez(a.out, images=images, paths=np.array([r["path"] for r in rows]))
    print(f"{len(rows)} images -> {a.out}: {images.shape} {images.dtype}")


if __name__ == "__main__":
    main()
