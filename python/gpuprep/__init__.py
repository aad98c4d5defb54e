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
    "Transform", "Pipeline", "Loader", "from_torchvision", "torchvision_params", "GpuprepError", "DecodeError", "TruncatedError",
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


# Where each torchvision transform may stand: gpuprep applies them in this order, so a Compose
# whose order differs (a crop after a colour jitter, say) would compute something else.
_STAGE = {"Resize": 0, "RandomResizedCrop": 0, "CenterCrop": 1, "RandomHorizontalFlip": 2,
          "RandomVerticalFlip": 2, "RandomRotation": 2, "TrivialAugmentWide": 2, "ColorJitter": 2,
          "RandomGrayscale": 3, "ToTensor": 4,
          "PILToTensor": 4, "ToImage": 4, "ToDtype": 5, "ConvertImageDtype": 5, "Normalize": 6,
          "RandomErasing": 7}
_FLIPS = ("RandomHorizontalFlip", "RandomVerticalFlip")
_GEOMETRIC = ("RandomRotation", "TrivialAugmentWide")
_INTERPOLATIONS = {"NEAREST": "nearest", "BOX": "box", "BILINEAR": "bilinear",
                   "HAMMING": "hamming", "BICUBIC": "bicubic", "LANCZOS": "lanczos"}


def _size(size):
    """torchvision's size argument as an int or (h, w)."""
    if isinstance(size, int):
        return size
    size = list(size)
    return size[0] if len(size) == 1 else (int(size[0]), int(size[1]))


def _rotation_degrees(step):
    """RandomRotation's degrees, refusing what gpuprep does not compute: other interpolations
    than NEAREST (Pillow's bilinear rotation runs in double precision), expand and a centre."""
    interpolation = getattr(getattr(step, "interpolation", None), "name", "NEAREST")
    if str(interpolation).upper() != "NEAREST":
        raise OptionsError(f"RandomRotation(interpolation={interpolation}) is not supported: "
                           "only NEAREST")
    if getattr(step, "expand", False) or getattr(step, "center", None) is not None:
        raise OptionsError("RandomRotation(expand=True) and a given center are not supported")
    return (float(step.degrees[0]), float(step.degrees[1]))


def _rotation_fill(step):
    fill = getattr(step, "fill", 0)
    fill = 0 if fill is None else fill
    values = [fill] * 3 if isinstance(fill, (int, float)) else list(fill)
    if len(values) == 1:
        values = values * 3
    return [int(v) for v in values]  # torchvision's _parse_fill: int(x) for each channel


def _amount(name, value, centre):
    """ColorJitter's stored [low, high] as the single number gpuprep takes, when it is one."""
    if value is None:
        return 0.0
    low, high = float(value[0]), float(value[1])
    v = high - centre
    expected = (-v, v) if centre == 0 else (max(0.0, 1 - v), 1 + v)
    if abs(low - expected[0]) > 1e-12:
        raise OptionsError(f"ColorJitter {name}={value}: only symmetric ranges are supported")
    return v


def from_torchvision(compose):
    """The Transform that computes what `compose` (a torchvision Compose of Resize, CenterCrop,
    RandomResizedCrop, RandomHorizontalFlip, RandomVerticalFlip, RandomRotation or
    TrivialAugmentWide (NEAREST), ColorJitter, RandomGrayscale, ToTensor / PILToTensor + ToDtype,
    Normalize, RandomErasing, in that order) computes on a PIL image; anything else is refused by
    name (OptionsError)."""
    steps = list(getattr(compose, "transforms", [compose]))
    t = Transform()
    last = -1
    rotated = colored = False
    for step in steps:
        name = type(step).__name__
        if name not in _STAGE:
            raise OptionsError(f"{name} is not supported by gpuprep (supported: {sorted(_STAGE)})")
        if _STAGE[name] < last:
            raise OptionsError(f"{name} after a later step: gpuprep applies them in torchvision's "
                               "usual order (resize or crop, flips and colour, tensor, normalise, erase)")
        last = _STAGE[name]
        # Flips and colour commute; a rotation (or TrivialAugmentWide) commutes with neither.
        if (rotated and name in _FLIPS) or (colored and name in _GEOMETRIC):
            raise OptionsError(f"{name} where gpuprep cannot put it: it runs after the flips "
                               "and before ColorJitter and RandomGrayscale")
        rotated |= name in _GEOMETRIC
        colored |= name in ("ColorJitter", "RandomGrayscale")
        if name == "RandomRotation":
            t = t.random_rotation(_rotation_degrees(step), _rotation_fill(step))
            continue
        if name == "TrivialAugmentWide":
            interpolation = getattr(step.interpolation, "name", str(step.interpolation))
            if str(interpolation).upper() != "NEAREST":
                raise OptionsError(f"TrivialAugmentWide(interpolation={interpolation}) is not "
                                   "supported: only NEAREST")
            t = t.trivial_augment_wide(int(step.num_magnitude_bins), _rotation_fill(step))
            continue
        interpolation = getattr(step, "interpolation", None)
        if interpolation is not None:
            t = t.interpolation(_INTERPOLATIONS[getattr(interpolation, "name", str(interpolation)).upper()])
        if name == "Resize":
            if getattr(step, "max_size", None) is not None:
                raise OptionsError("Resize(max_size=...) is not supported")
            t = t.resize(_size(step.size))
        elif name == "RandomResizedCrop":
            t = t.random_resized_crop(_size(step.size), tuple(step.scale), tuple(step.ratio))
        elif name == "CenterCrop":
            t = t.center_crop(_size(step.size))
        elif name == "RandomHorizontalFlip":
            t = t.horizontal_flip(float(step.p))
        elif name == "RandomVerticalFlip":
            t = t.vertical_flip(float(step.p))
        elif name == "ColorJitter":
            t = t.color_jitter(_amount("brightness", step.brightness, 1),
                               _amount("contrast", step.contrast, 1),
                               _amount("saturation", step.saturation, 1),
                               _amount("hue", step.hue, 0))
        elif name == "RandomGrayscale":
            t = t.grayscale(float(step.p))
        elif name == "ToTensor":
            t = t.to_tensor()
        elif name in ("PILToTensor", "ToImage"):
            t = t.to("uint8", "chw")
        elif name in ("ToDtype", "ConvertImageDtype"):
            dtype = str(getattr(step, "dtype", "")).replace("torch.", "")
            if isinstance(getattr(step, "dtype", None), dict):
                raise OptionsError("ToDtype with a dict of dtypes is not supported")
            if name == "ToDtype" and dtype.startswith("float") and not getattr(step, "scale", False):
                raise OptionsError("ToDtype(float, scale=False) is not supported: use scale=True")
            t = t.to_tensor() if dtype == "float32" else t.to_tensor().to(dtype)
        elif name == "Normalize":
            t = t.normalize([float(m) for m in step.mean], [float(s) for s in step.std])
        elif name == "RandomErasing":
            if isinstance(step.value, str):
                raise OptionsError("RandomErasing(value='random') is not supported")
            t = t.random_erasing(float(step.p), tuple(step.scale), tuple(step.ratio),
                                 step.value if isinstance(step.value, (int, float)) else list(step.value))
    return t


_ADJUSTMENTS = ("brightness", "contrast", "saturation", "hue")


def _trivial_augment_draw(step, width, height):
    """TrivialAugmentWide.forward's draws with the torch RNG, in its order: the operation, the
    magnitude's bin (for an operation with bins), its sign (for a signed one)."""
    import torch

    space = step._augmentation_space(step.num_magnitude_bins)
    op_index = int(torch.randint(len(space), (1,)).item())
    op = list(space.keys())[op_index]
    magnitudes, signed = space[op]
    magnitude = (float(magnitudes[torch.randint(len(magnitudes), (1,), dtype=torch.long)].item())
                 if magnitudes.ndim > 0 else 0.0)
    if signed and torch.randint(2, (1,)):
        magnitude *= -1.0
    return {"op": op, "magnitude": magnitude}


def torchvision_params(compose, size):
    """The random parameters `compose` draws for an image of `size` (width, height), drawn by
    torchvision's own get_params and the torch RNG in the order its forward draws them: after
    `torch.manual_seed(s)`, `Pipeline.preprocess([image], from_torchvision(compose),
    params=[torchvision_params(compose, size)])` equals `compose(pil_image)` after the same seed,
    bit for bit. The dict has report.json's form."""
    import torch

    width, height = size
    params = {}
    for step in getattr(compose, "transforms", [compose]):
        name = type(step).__name__
        if name == "Resize":
            n = _size(step.size)
            if isinstance(n, int):
                short, long_ = min(width, height), max(width, height)
                new = (n, int(n * long_ / short))
                width, height = new if width <= height else new[::-1]
            else:
                height, width = n
        elif name == "CenterCrop":
            n = _size(step.size)
            height, width = (n, n) if isinstance(n, int) else n
        elif name == "RandomResizedCrop":
            # get_params reads the image's size alone: a view of one element stands in.
            stand_in = torch.empty(1, 1, 1).expand(1, height, width)
            i, j, h, w = step.get_params(stand_in, step.scale, step.ratio)
            params["crop"] = {"top": int(i), "left": int(j), "height": int(h), "width": int(w)}
            n = _size(step.size)
            height, width = (n, n) if isinstance(n, int) else n
        elif name == "RandomHorizontalFlip":
            params["flip"] = bool(torch.rand(1) < step.p)
        elif name == "RandomVerticalFlip":
            params["vflip"] = bool(torch.rand(1) < step.p)
        elif name == "ColorJitter":
            order, *factors = step.get_params(step.brightness, step.contrast, step.saturation,
                                              step.hue)
            color = {"order": [_ADJUSTMENTS[k] for k in order.tolist() if factors[k] is not None]}
            for adjustment, factor in zip(_ADJUSTMENTS, factors):
                if factor is not None:
                    color[adjustment] = float(factor)
            params["color"] = color
        elif name == "RandomRotation":
            params["rotation"] = float(step.get_params(step.degrees))
        elif name == "TrivialAugmentWide":
            params["augment"] = _trivial_augment_draw(step, width, height)
        elif name == "RandomGrayscale":
            params["grayscale"] = bool(torch.rand(1) < step.p)
        elif name == "RandomErasing":
            params["erase"] = None
            if torch.rand(1) < step.p:
                value = step.value
                value = [float(value)] if isinstance(value, (int, float)) else [float(v) for v in value]
                stand_in = torch.empty(1, 1, 1).expand(3, height, width)
                x, y, h, w, _ = step.get_params(stand_in, scale=step.scale, ratio=step.ratio,
                                                value=value)
                if (h, w) != (height, width):  # torchvision's fallback erases nothing
                    params["erase"] = {"top": int(x), "left": int(y), "height": int(h),
                                       "width": int(w)}
    return params


class Loader:
    """Batches of a dataset through a Transform, as a torch DataLoader over torchvision's PIL
    transforms would give them, bit for bit for the same parameters.

    source: a folder in ImageFolder layout (class folders, sorted, give the labels), a list of
    image files (labels -1), or WebDataset shards (paths, a glob, or a .tar; labels from .cls or
    .json members). Iterating yields (images, labels): torch tensors when torch is importable,
    numpy arrays otherwise. The tensors share the batch's memory with Rust's array (no copy);
    the array goes back to the loader for a later batch once the tensor and its views are gone.
    `pin_memory` (default: whether torch has CUDA), as DataLoader's `pin_memory=True`, gives
    page-locked tensors, so that `.to("cuda", non_blocking=True)` overlaps: on the GPU backend
    the loader's arrays are page-locked once, for torch's current CUDA device, through the CUDA
    driver (no copy; `memory` says which memory the arrays are); elsewhere each batch is copied
    into page-locked memory.
    `device="cuda"` (or "cuda:N") yields CUDA tensors. Where gpuprep's GPU is a Vulkan device
    that exports memory and semaphores and CUDA sees the same GPU, the batches are made in place
    in CUDA memory: the tensors are the loader's buffers (no copy through the host), torch's
    current stream waits for each batch's copies (DLPack's stream protocol), and a buffer is
    written again only after the work queued on the tensor before it was freed. Elsewhere
    each batch is copied up from page-locked memory. `handed_over` (and `stats`) say which.
    Epochs are shuffled from `seed` (`set_epoch` as DistributedSampler); rank/world_size split
    them as DistributedSampler does; drop_last drops the uneven tail and the short last batch.
    Decoding runs ahead in Rust threads with the GIL released (on the GPU one stream that runs
    on from an epoch iterated to its end into the next, or into the same epoch again once
    two iterations in a row had the same epoch; `prefetch` finished batches held ready;
    on the CPU `prefetch` batches made at once). `stats` holds the last step's figures; a step where the loop waited more than `wait_warning` of it for data warns.
    `threads`: decoding threads of this process (default: all cores, or under torchrun this
    rank's share, cores / LOCAL_WORLD_SIZE); they are started once per process, so the first
    loader or pipeline sets them (`threads` then holds the number).
    `adapter`: the GPU, by number or a part of its name as `gpuprep info` lists them, or
    "cuda:N" for the GPU CUDA calls device N; with `device="cuda:N"` on a machine of several
    GPUs it defaults to that device's, so that each rank's loader runs on its rank's GPU.
    """

    def __init__(self, source, transform, batch_size, shuffle=False, seed=0, rank=0,
                 world_size=1, drop_last=False, threads=None, backend="auto", prefetch=2,
                 adapter=None, shuffle_buffer=1000, wait_warning=0.1, pin_memory=None,
                 device=None):
        kind, paths = _resolve(source)
        torch = _torch()
        self.device = _cuda_device(torch, device)
        if pin_memory is None:
            pin_memory = torch is not None and torch.cuda.is_available()
        self.pin_memory = pin_memory or self.device is not None
        if adapter is None and self.device is not None and torch is not None \
                and torch.cuda.is_available() and torch.cuda.device_count() > 1:
            adapter = f"cuda:{self.device}"
        self.threads = _gpuprep.init_threads(threads)
        if threads is not None and self.threads != threads:
            _warnings.warn(f"threads={threads} asked for, but this process decodes on the "
                           f"{self.threads} threads it started with", RuntimeWarning, stacklevel=2)
        cuda = self.pin_memory and torch is not None and torch.cuda.is_available()
        pin_for = torch.cuda.current_device() if cuda else None
        if self.device is not None:
            pin_for = self.device
        self._loader = _gpuprep.Loader(kind, paths, transform, batch_size, shuffle, seed, rank,
                                       world_size, drop_last, backend, adapter, prefetch,
                                       shuffle_buffer, wait_warning, pin_for, self.device)
        self.epoch = 0
        self.stats = {}
        self.last = None
        self.classes = self._loader.classes()

    @property
    def handed_over(self):
        """Where batches are handed over: 'CUDA memory of device N, exported by gpuprep's
        Vulkan device (no copy)', or host memory (and why, when device="cuda" could not be had
        in place: then each batch is copied up from page-locked memory)."""
        return self._loader.handed_over()[1]

    @property
    def memory(self):
        """Which memory the batch arrays are: pageable, or page-locked for a CUDA device (or
        why not, when pinning was asked for)."""
        return self._loader.memory()

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
        pin = self.pin_memory and torch is not None and torch.cuda.is_available()
        # device="cuda" where CUDA is there but not in place: copied up from pinned memory.
        up = self.device is not None and pin
        for batch in self.batches():
            self.last = batch
            images, labels = batch["images"], batch["labels"]
            if torch is None:
                yield images, labels
                continue
            labels = torch.from_dlpack(labels)
            if isinstance(images, _gpuprep.CudaBatch):
                # In place: torch's current stream waits for the batch's copies.
                images = torch.from_dlpack(images)
                yield images, labels.to(images.device, non_blocking=True)
                continue
            images = torch.from_dlpack(images)
            if pin:
                images = images if images.is_pinned() else _pinned(torch, images)
                labels = labels.pin_memory()
            if up:
                cuda = torch.device("cuda", self.device)
                images = images.to(cuda, non_blocking=True)
                labels = labels.to(cuda, non_blocking=True)
            yield images, labels


def _cuda_device(torch, device):
    """The CUDA ordinal `device` names ("cuda", "cuda:N", a torch.device, N), or None."""
    if device is None or device == "cpu":
        return None
    if isinstance(device, int):
        return device
    text = str(device)
    if not text.startswith("cuda"):
        raise ValueError(f"device must be None, 'cpu' or a CUDA device, got {device!r}")
    if ":" in text:
        return int(text.split(":", 1)[1])
    if torch is not None and torch.cuda.is_available():
        return torch.cuda.current_device()
    return 0


def _pinned(torch, tensor):
    """`tensor` copied into a page-locked one (torch's caching host allocator keeps the blocks),
    on all cores: `Tensor.pin_memory()` copies on one thread, several times slower."""
    pinned = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
    _gpuprep.copy_into(pinned.numpy().reshape(-1).view("uint8"),
                       tensor.numpy().reshape(-1).view("uint8"))
    return pinned
