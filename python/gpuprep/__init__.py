"""gpuprep: encoded images to the normalised tensors vision models eat, on any GPU wgpu reaches
(or the CPU), with exactly the numbers Pillow + torchvision give, random augmentation included.

    import gpuprep
    pipeline = gpuprep.Pipeline()                       # a hardware GPU, else the CPU: same bits
    batch, outcomes = pipeline.preprocess(["a.jpg", "b.jpg"], gpuprep.Transform.imagenet_eval())

    loader = gpuprep.Loader("train/", gpuprep.Transform.imagenet_train(), batch_size=256,
                            shuffle=True, seed=0)
    for epoch in range(90):
        loader.set_epoch(epoch)
        for images, labels in loader:                   # torch tensors when torch is installed
            ...

The Rust crate is the one implementation; this package names its parts as torchvision does.
"""
import glob as _glob
import os as _os
import warnings as _warnings

from ._gpuprep import (  # noqa: F401  (the package's public names)
    CorruptError,
    DecodeError,
    GpuError,
    GpuprepError,
    OptionsError,
    Pipeline,
    ReadError,
    TooLargeError,
    Transform,
    TruncatedError,
    UnsupportedError,
)
from . import _gpuprep

__all__ = [
    "Transform", "Pipeline", "Loader", "GpuprepError", "DecodeError", "TruncatedError",
    "CorruptError", "UnsupportedError", "TooLargeError", "OptionsError", "GpuError", "ReadError",
]


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _resolve(source):
    """(kind, paths) of a loader source: a folder (ImageFolder), a tar shard, a glob of shards,
    or a list of image files or of shards."""
    if isinstance(source, (str, _os.PathLike)):
        path = _os.fspath(source)
        if _os.path.isdir(path):
            return "folder", [path]
        if any(c in path for c in "*?["):
            paths = sorted(_glob.glob(path))
            if not paths:
                raise OptionsError(f"{path}: no shard matches")
            return "shards", paths
        if path.endswith(".tar"):
            return "shards", [path]
        return "files", [path]
    paths = [_os.fspath(p) for p in source]
    if paths and all(p.endswith(".tar") for p in paths):
        return "shards", paths
    return "files", paths


class Loader:
    """Batches of a dataset through a Transform, as a torch DataLoader over torchvision's PIL
    transforms would give them, bit for bit for the same parameters.

    source: a folder in ImageFolder layout (class folders, sorted, give the labels), a list of
    image files (labels -1), or WebDataset shards (paths, a glob, or a .tar; labels from .cls or
    .json members). Iterating yields (images, labels): torch tensors when torch is importable
    (pinned host memory when it has CUDA), numpy arrays otherwise. Epochs are shuffled from
    `seed` (`set_epoch` as DistributedSampler); rank/world_size split them as DistributedSampler
    does; drop_last drops the uneven tail and the short last batch. Decoding runs ahead in Rust
    threads (`prefetch` batches at once), with the GIL released. `stats` holds the last step's
    figures; a step where the loop waited more than `wait_warning` of it for data warns.
    `threads` is accepted for DataLoader compatibility; gpuprep decodes on all cores.
    """

    def __init__(self, source, transform, batch_size, shuffle=False, seed=0, rank=0,
                 world_size=1, drop_last=False, threads=None, backend="auto", prefetch=2,
                 adapter=None, shuffle_buffer=1000, wait_warning=0.1):
        kind, paths = _resolve(source)
        self._loader = _gpuprep.Loader(kind, paths, transform, batch_size, shuffle, seed, rank,
                                       world_size, drop_last, backend, adapter, prefetch,
                                       shuffle_buffer, wait_warning)
        self.epoch = 0
        self.stats = {}
        self.last = None
        self.classes = self._loader.classes()

    def set_epoch(self, epoch):
        """The epoch the next iteration draws its order and parameters for."""
        self.epoch = epoch

    def __len__(self):
        n = self._loader.batches()
        if n is None:
            raise TypeError("a loader over shards has no length until read")
        return n

    def batches(self):
        """This epoch's batches with everything gpuprep knows of them: dicts with images,
        labels, indices, params (each sample's, report.json's form), failed and stats."""
        for images, labels, indices, params, failed, stats in self._loader.epoch(self.epoch):
            self.stats = stats
            if stats.get("warning"):
                _warnings.warn(stats["warning"], RuntimeWarning, stacklevel=3)
            yield {"images": images, "labels": labels, "indices": indices, "params": params,
                   "failed": failed, "stats": stats}

    def __iter__(self):
        torch = _torch()
        pin = torch is not None and torch.cuda.is_available()
        for batch in self.batches():
            self.last = batch
            images, labels = batch["images"], batch["labels"]
            if torch is not None:
                images, labels = torch.from_numpy(images), torch.from_numpy(labels)
                if pin:
                    images, labels = images.pin_memory(), labels.pin_memory()
            yield images, labels
