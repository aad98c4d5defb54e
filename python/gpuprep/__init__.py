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
import copy as _copy
import glob as _glob
import hashlib as _hashlib
import os as _os
import re as _re
import warnings as _warnings

# On a machine without a display, Mesa's device-select Vulkan layer (which orders GPUs by the
# display's) has nothing to consult, yet prints "XDG_RUNTIME_DIR is invalid" to stderr trying
# Wayland: its own switch, NODEVICE_SELECT=1, turns it off there (for this process, as the
# `gpuprep` command does), unless a device is chosen through it.
if not any(_os.environ.get(name) for name in ("XDG_RUNTIME_DIR", "WAYLAND_DISPLAY", "DISPLAY",
                                                "MESA_VK_DEVICE_SELECT", "NODEVICE_SELECT")):
    _os.environ["NODEVICE_SELECT"] = "1"

from . import _errors  # noqa: E402
from ._errors import (  # noqa: E402,F401  (the package's public names)
    CorruptError,
    DecodeError,
    GpuError,
    GpuprepError,
    HandoffError,
    OptionsError,
    ReadError,
    TooLargeError,
    TruncatedError,
    UnsupportedError,
)
from ._gpuprep import Pipeline, Transform, __version__  # noqa: E402,F401
from . import _gpuprep  # noqa: E402
from . import _mix  # noqa: E402
from ._errors import LabelError  # noqa: E402,F401
from ._mix import BatchTransform, CutMix, MixUp, RandomChoice, TimmMixup  # noqa: E402,F401
import numpy as _np  # noqa: E402

__all__ = [
    "Transform", "Pipeline", "Loader", "from_torchvision", "torchvision_params", "GpuprepError", "DecodeError", "TruncatedError",
    "CorruptError", "UnsupportedError", "TooLargeError", "OptionsError", "GpuError", "HandoffError",
    "ReadError", "LabelError", "BatchTransform", "MixUp", "CutMix", "RandomChoice", "TimmMixup",
    "write_shard_index", "write_shards",
]


def _color_method(torchvision, method, summary, argument):
    """The Transform method of one single-operation transform, as the crate's table declares it:
    (self, <argument>, p=0.5), or (self, p=0.5) for one without an argument (p=0.5 is
    torchvision's default for each), with a signature help() and keyword calls read."""
    import inspect

    def parameter(name, annotation, **default):
        return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                 annotation=annotation, **default)

    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    if argument is not None:
        name, integer, _low, _high = argument
        parameters.append(parameter(name, int if integer else float))
    parameters.append(parameter("p", float, default=0.5))
    signature = inspect.Signature(parameters, return_annotation=Transform)

    def with_operation(self, *args, **kwargs):
        given = signature.bind(self, *args, **kwargs)
        given.apply_defaults()
        value = None if argument is None else _color_argument(method, argument,
                                                              given.arguments[argument[0]])
        p = _color_argument(method, ("p", False), given.arguments["p"])
        return self._with_color_op(method, value, p)

    shown = "" if argument is None else f"{argument[0]}, "
    with_operation.__name__ = method
    with_operation.__qualname__ = f"{Transform.__name__}.{method}"
    with_operation.__module__ = Transform.__module__
    with_operation.__signature__ = signature
    with_operation.__doc__ = (
        f"{torchvision}({shown}p=0.5), applied with probability p.\n\n{summary}.\n\n"
        "Applied after RandomGrayscale (unless order(...) says otherwise), with the other "
        "single-operation transforms in the order their methods were first called; called "
        "again, it keeps its place and takes the new values.")
    return with_operation


def _color_argument(method, argument, value):
    """`value` of a single-operation transform's argument as a float, refused by name unless it
    is a number of the argument's kind: an int where it is an integer (Pillow's posterize takes
    no float: torchvision would fail), else an int or a float."""
    import numbers

    name, integer = argument[0], argument[1]
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise OptionsError(f"{method}'s {name} must be {'an integer' if integer else 'a number'}, "
                           f"got {value!r}")
    return float(value)


# One Transform method per single-operation transform (random_posterize, ...), made from the
# crate's table of them, so that a new one needs no code here.
for _operation in _gpuprep.color_operations():
    setattr(Transform, _operation[1], _color_method(*_operation))
del _operation
# from_torchvision's and torchvision_params' view of that table: class -> (method, the name of
# its argument besides p, or None).
_COLOR_OPERATIONS = {torchvision: (method, argument and argument[0])
                     for torchvision, method, _summary, argument in _gpuprep.color_operations()}


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


# Shards read where they are: URLs (http, https, s3, gs; other schemes are refused by name)
# and commands' output (pipe:). A file: URL is a local path.
_REMOTE = _re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://|pipe:)")
_COMPRESSED = (".tar.gz", ".tgz", ".tar.zst", ".tar.bz2")


def _remote(name):
    return bool(_REMOTE.match(name)) and not name.lower().startswith("file:")


def _local(path):
    """A local source path: a `file:` URL's path, or the path as given."""
    if path.lower().startswith("file://"):
        return path[len("file://"):]
    if path.lower().startswith("file:"):
        return path[len("file:"):]
    return path


def _resolve(source):
    """(kind, paths) of a loader source: a folder (ImageFolder), a tar shard, a glob or a brace
    pattern of shards, one image file, a list of image files or of shards, shards' URLs (a
    brace pattern, webdataset's `::` lists), or the shards' index (a .json path or URL). A source that cannot be read raises here, at
    construction."""
    if isinstance(source, (str, _os.PathLike)):
        text = _os.fspath(source)
        if text.lower().endswith(".json"):
            return "index", [text if _remote(text) else _local(text)]
        if _remote(text) or "::" in text:
            return _resolve_list(_gpuprep.expand_shards(text))
        path = _local(text)
        if "{" in path:
            return _resolve_list(_gpuprep.expand_shards(path))
        if _os.path.isdir(path):
            return "folder", [path]
        if any(c in path for c in "*?["):
            paths = sorted(_glob.glob(path))
            if not paths:
                raise ReadError(f"{path}: no file matches")
            return _resolve_list(paths)
        if not _os.path.exists(path):
            raise ReadError(f"{path}: no such file or folder")
        if path.endswith(_COMPRESSED):
            return _resolve_list([path])
        return ("shards" if path.endswith(".tar") else "files"), [path]
    if isinstance(source, (bytes, bytearray)):
        raise OptionsError("a loader's source is a path, a pattern or a list of paths, not bytes")
    return _resolve_list([_os.fsdecode(p) for p in source])


def write_shard_index(shards, path, *, retries=10, timeout=30.0):
    """Counts the samples of WebDataset shards (a brace pattern, a glob, a "::" list or a list
    of paths and URLs, as Loader takes them) and writes their index at `path` in webdataset's
    wids format (`gpuprep index` on the command line), written whole or not at all. Shards in
    the index's folder or below it are listed relative to it, other local ones by their
    absolute path. A Loader given the index (its path or URL) splits the shards from it without
    reading them first. Returns each shard's address and sample count, in order."""
    if isinstance(shards, (str, _os.PathLike)):
        text = _os.fspath(shards)
        if not _remote(text) and "::" not in text and "{" not in text \
                and any(c in text for c in "*?["):
            names = sorted(_glob.glob(_local(text)))
            if not names:
                raise ReadError(f"{text}: no file matches")
        else:
            names = _gpuprep.expand_shards(text)
    else:
        names = [_os.fsdecode(s) for s in shards]
    if not names:
        raise OptionsError("write_shard_index needs at least one shard")
    return _gpuprep.write_shard_index(names, _os.fspath(path), retries, timeout)


def write_shards(source, out, *, resize, filter="bilinear", draft=False, quality=75,
                 subsampling=None, optimize=False, shard_samples=100_000,
                 shard_size=3_000_000_000, labels=None, recursive=False, index=None,
                 backend="auto", adapter=None):
    """`gpuprep shard` from Python: the images of `source` (a folder of class folders, read as
    torchvision's ImageFolder; a folder of images; or a list of image files) resized as
    torchvision's Resize(`resize`) with Pillow's `filter`, encoded byte for byte as Pillow's
    `save(buf, "JPEG", quality=quality[, subsampling=...][, optimize=True])` writes them, into
    WebDataset shards at `out` (a path with one %d or %0Nd, the shard's number): KEY.jpg, KEY.cls
    (an ImageFolder's class, or the `labels` file's) and KEY.json (source, original size, class
    name, settings), KEY the sample's number in nine digits. `labels`: a CSV (TSV for .tsv) of
    rows `name,label` or a JSON object of "name": label, a name the image's path below the
    folder given or its file name, a label a class index or a class name (names numbered in
    sorted order); every image needs one. `recursive`: the images in every folder below
    `source` too (unlabelled unless `labels`), not an ImageFolder's classes. `index`: a path
    where the shards' index is written afterwards (as write_shard_index writes it; not where no
    shard holds a sample). A shard closes at `shard_samples` samples or `shard_size` bytes and
    is written under a temporary name, renamed whole; called again over the same inputs, it
    keeps the complete shards and writes the rest. Returns a dict: "written" (the shards this
    call wrote), "kept", "samples", "failed" (a list of (sample, source, error): those inputs
    are left out), "seconds" (where the time went: "reading" the files, "decoding"
    them (and resizing; on a GPU, its stream's wall time), "forward" (the encoder's pixel stages
    on the GPU: 0 here, where they run on the encoding threads as `gpuprep shard`'s default
    does), "encoding" (the encoding threads' time, summed over them), "writing", and "waiting",
    how long decoded images waited for an encoding thread; the stages run at once),
    "stream_seconds" (on a GPU, where its stream's time went, wall times: "preparing" the
    images on CPU threads, summed; "starved", the submitting thread waiting for them;
    "submitting"; "executing", the landing waiting for the GPU; "reading_back"), "elapsed" and "samples_per_second" (the job's own wall time
    and rate, after the device is open). The GIL is released while it works;
    Ctrl-C stops it (the complete shards stay; calling it again writes the rest)."""
    for name, value, least in (("resize", resize, 1), ("shard_samples", shard_samples, 1),
                               ("shard_size", shard_size, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise OptionsError(f"{name} is an int of at least {least}, got {value!r}")
    if isinstance(quality, bool) or not isinstance(quality, int) or not 1 <= quality <= 100:
        raise OptionsError(f"quality is an int from 1 to 100, got {quality!r}")
    # Pillow's numbers for its subsampling names.
    subsampling = {0: "4:4:4", 1: "4:2:2", 2: "4:2:0"}.get(subsampling, subsampling)
    if isinstance(source, (str, _os.PathLike)) and not _os.path.exists(source):
        raise ReadError(f"{_os.fspath(source)}: no such file or folder")
    if isinstance(source, (str, _os.PathLike)) and _os.path.isdir(source):
        root = _os.fspath(source)
        classes = [e for e in _os.scandir(root) if e.is_dir()]
        paths, folder = [root], bool(classes)
    elif isinstance(source, (str, _os.PathLike)):
        paths, folder = [_os.fspath(source)], False
    else:
        paths, folder = [_os.fspath(p) for p in source], False
    if labels is not None and not _os.path.isfile(labels):
        raise ReadError(f"{_os.fspath(labels)}: no such labels file")
    if not paths:
        raise OptionsError(f"{source!r} holds no image")
    written, kept, samples, failed, seconds, stream, elapsed = _gpuprep.write_shards(
        paths, folder, _os.fspath(out), resize, filter, draft, quality, subsampling, optimize,
        shard_samples, shard_size, backend, adapter,
        None if labels is None else _os.fspath(labels), bool(recursive))
    if index is not None and kept + len(written) > 0:
        pattern = _os.fspath(out)
        write_shard_index([pattern % n for n in range(kept + len(written))], index)
    return {"written": written, "kept": kept, "samples": samples, "failed": failed,
            "seconds": dict(seconds), "stream_seconds": dict(stream), "elapsed": elapsed,
            "samples_per_second": samples / max(elapsed, 1e-9)}


def _resolve_list(names):
    """(kind, paths) of a list of image files or of shards (local .tar files, URLs, pipe:)."""
    if not names:
        raise OptionsError("a loader's list of files or shards is empty")
    paths = [name if _remote(name) else _local(name) for name in names]
    compressed = [p for p in paths if p.endswith(_COMPRESSED)]
    if compressed:
        raise UnsupportedError(f"{compressed[0]}: compressed shards are not read; shards are "
                               "plain .tar files")
    folders = [p for p in paths if not _remote(p) and _os.path.isdir(p)]
    if folders:
        raise OptionsError(f"{folders[0]}: a list holds files or shards, not folders; give one "
                           "ImageFolder root instead")
    shards = [_remote(p) or p.endswith(".tar") for p in paths]
    if all(shards):
        return "shards", paths
    if any(shards):
        raise OptionsError("a list holds image files or shards, not both")
    return "files", paths


# Where each torchvision transform may stand: gpuprep applies them in this order, so a Compose
# whose order differs (a crop after a colour jitter, say) would compute something else. The
# operations' places come from the crate's one table of them; the tensor conversions sit between.
_STAGE = {name: stage for name, _field, _flag, _method, stage in _gpuprep.operations()}
_STAGE.update({name: _STAGE["Normalize"] - 2 for name in ("ToTensor", "PILToTensor", "ToImage")})
_STAGE.update({name: _STAGE["Normalize"] - 1 for name in ("ToDtype", "ConvertImageDtype")})
_STAGE["ResizeKeepRatio"] = _STAGE["Resize"]  # timm's: a Resize of a size of its own
_FLIPS = ("RandomHorizontalFlip", "RandomVerticalFlip")
_METHOD = {name: method for name, _field, _flag, method, _stage in _gpuprep.operations()}
# Transforms gpuprep refuses for a reason a user should know.
_REFUSED_WITH_REASON = {
    "AugMix": "torchvision's AugMix is not supported by gpuprep: even on a PIL image it runs "
              "torch's tensor kernels (its shears, translations and rotations through float32 "
              "grid_sample, its blends in float), whose last bits depend on the CPU's vector "
              "unit, not Pillow's arithmetic, which gpuprep computes",
    "MixUp": "MixUp inside a Compose: it mixes batches, not images; translate it on its own "
             "(from_torchvision(MixUp(...))) and give it to Loader(batch_transform=...)",
    "CutMix": "CutMix inside a Compose: it mixes batches, not images; translate it on its own "
              "(from_torchvision(CutMix(...))) and give it to Loader(batch_transform=...)",
}
# timm's transforms that compute what a torchvision one does on a PIL image, as which:
# MaybeToTensor is F.to_tensor, MaybePILToTensor F.pil_to_tensor,
# RandomResizedCropAndInterpolation draws a crop (with Python's random) and resizes it as
# RandomResizedCrop does, its interpolation fixed or drawn from (BILINEAR, BICUBIC), and
# RandomErasing draws its count and boxes (with Python's random) as torchvision's does its box,
# the area shared by the count, and writes zeros or normal values there; ResizeKeepRatio (its
# eval form, no random factors) is a Resize to a size of its own (Transform.resize_keep_ratio),
# and CenterCropOrPad a CenterCrop that pads a smaller image with its fill.
_TIMM = {"MaybeToTensor": "ToTensor", "MaybePILToTensor": "PILToTensor",
         "RandomResizedCropAndInterpolation": "RandomResizedCrop",
         "ResizeKeepRatio": "ResizeKeepRatio", "CenterCropOrPad": "CenterCrop",
         "RandomErasing": "RandomErasing", "RandAugment": "TimmRandAugment",
         "AutoAugment": "TimmAutoAugment", "AugMixAugment": "TimmAugMix"}
_GEOMETRIC = ("RandomRotation", "RandomAffine", "TrivialAugmentWide", "RandAugment",
              "AutoAugment", "TimmRandAugment", "TimmAutoAugment", "TimmAugMix",
              "RandomPerspective")
# The steps that keep the image's size, which run in the Compose's order among themselves.
_SAME_SIZE = (*_GEOMETRIC, "ColorJitter", "RandomGrayscale", *_COLOR_OPERATIONS, "GaussianBlur")
_INTERPOLATIONS = {"NEAREST": "nearest", "BOX": "box", "BILINEAR": "bilinear",
                   "HAMMING": "hamming", "BICUBIC": "bicubic", "LANCZOS": "lanczos"}
# Pillow's filter numbers, which torchvision takes for an interpolation too (as its
# _interpolation_modes_from_int maps them).
_PIL_FILTERS = {0: "NEAREST", 1: "LANCZOS", 2: "BILINEAR", 3: "BICUBIC", 4: "BOX", 5: "HAMMING"}
# The tensor conversions, with the element type of the tensor each makes of a PIL image.
_TO_TENSOR = {"ToTensor": "float32", "PILToTensor": "uint8", "ToImage": "uint8"}
# gpuprep's Transform holds one of each of these: a second transform of the same slot is refused.
_SLOTS = {"RandomResizedCrop": "Resize", "RandomResize": "Resize", "ResizeKeepRatio": "Resize", "RandomShortestSize": "Resize", "PILToTensor": "ToTensor", "ToImage": "ToTensor",
          "ConvertImageDtype": "ToDtype", "TrivialAugmentWide": "RandomRotation",
          "RandomAffine": "RandomRotation",
          "RandAugment": "RandomRotation", "AutoAugment": "RandomRotation",
          "TimmRandAugment": "RandomRotation", "TimmAutoAugment": "RandomRotation",
          "TimmAugMix": "RandomRotation",
          "RandomCrop": "CenterCrop"}
_TWICE = {"Resize": "resize", "ToTensor": "convert to a tensor", "ToDtype": "convert the dtype",
          "RandomRotation": "rotate or augment", "CenterCrop": "crop"}


def _size(size):
    """torchvision's size argument as an int or (h, w)."""
    if isinstance(size, int):
        return size
    size = list(size)
    return size[0] if len(size) == 1 else (int(size[0]), int(size[1]))


def _checked_size(name, size):
    """_size of a transform's size, refused by name unless it is one or two positive integers."""
    sides = [size] if isinstance(size, int) else list(size) if isinstance(size, (list, tuple)) \
        else []
    if not 1 <= len(sides) <= 2 or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 1
                                           for s in sides):
        raise OptionsError(f"{name}(size={size!r}) is not supported: a size is one or two positive "
                           "integers")
    return _size(size)


def _name(step):
    """The torchvision class `step` is, or computes as (timm's, see _TIMM)."""
    name = type(step).__name__
    return _TIMM[name] if _is_timms(step) else name


def _is_timms(step):
    """Whether `step` is one of the timm transforms gpuprep translates."""
    return (type(step).__module__ or "").startswith("timm.") and type(step).__name__ in _TIMM


def _interpolation(step):
    """The name (NEAREST, BILINEAR...) of `step`'s interpolation: an InterpolationMode (or Pillow's
    Resampling) by its name, its value as a string (which newer v2 transforms keep), a Pillow
    filter number as torchvision maps it; else its repr."""
    return _interpolation_name(getattr(step, "interpolation", None))


def _interpolation_name(mode):
    """_interpolation of one interpolation value."""
    name = getattr(mode, "name", None)
    if isinstance(name, str):
        return name.upper()
    if isinstance(mode, str):
        return mode.upper().replace("-", "_")
    if isinstance(mode, int) and not isinstance(mode, bool) and mode in _PIL_FILTERS:
        return _PIL_FILTERS[mode]
    return repr(mode)


def _filter(name, step):
    """gpuprep's name of the resampling filter of `step` (Resize, RandomResizedCrop), refusing
    any other interpolation by name (NEAREST_EXACT among them)."""
    interpolation = _interpolation(step)
    if interpolation not in _INTERPOLATIONS:
        raise OptionsError(f"{name}(interpolation={interpolation}) is not supported: only "
                           f"{', '.join(_INTERPOLATIONS)}")
    return _INTERPOLATIONS[interpolation]


def _number(value):
    """`value` as a float, NaN when it is none."""
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return float("nan")


def _probability(name, p):
    p = _number(p)
    if not 0.0 <= p <= 1.0:
        raise OptionsError(f"{name}(p={p}) is not supported: a probability lies in [0, 1]")
    return p


def _pair(name, what, value, low=None, high=None, positive=False):
    """A transform's (min, max) argument as two finite floats, min <= max, within the bounds
    given, refused by name otherwise (torch's uniform_ refuses min > max when it draws)."""
    import math

    try:
        pair = [_number(v) for v in value]
    except TypeError:
        pair = []
    ok = (len(pair) == 2 and all(math.isfinite(v) for v in pair) and pair[0] <= pair[1]
          and (low is None or pair[0] >= low) and (high is None or pair[1] <= high)
          and (not positive or pair[0] > 0))
    if not ok:
        bounds = " within [0, 1]" if high is not None else ", both positive" if positive else ""
        raise OptionsError(f"{name}({what}={value!r}) is not supported: (min, max) with "
                           f"min <= max{bounds}")
    return tuple(pair)


def _channels(name, what, value):
    """Normalize's mean or std, RandomErasing's value, as three finite floats (R, G, B): one value
    stands for every channel, as torch's broadcasting makes it."""
    import math

    try:
        values = [_number(v) for v in value]
    except TypeError:
        values = [_number(value)]
    if len(values) == 1:
        values = values * 3
    if len(values) != 3 or not all(math.isfinite(v) for v in values):
        raise OptionsError(f"{name}({what}={value!r}) is not supported: one finite number or three "
                           "(R, G, B)")
    return values


def _map_interpolation(name, step):
    """gpuprep's name of the interpolation of `step`'s affine maps (RandomRotation, an
    augmentation policy): NEAREST, BILINEAR or BICUBIC, the filters Pillow's transforms take."""
    interpolation = _interpolation(step)
    if interpolation not in ("NEAREST", "BILINEAR", "BICUBIC"):
        raise OptionsError(f"{name}(interpolation={interpolation}) is not supported: only NEAREST, "
                           "BILINEAR and BICUBIC (Pillow's affine transforms sample with no other)")
    return _INTERPOLATIONS[interpolation]


def _rotation_args(step):
    """RandomRotation's arguments as gpuprep's method takes them, refusing what gpuprep does not
    compute: expand, whose output size would change with each angle."""
    if getattr(step, "expand", False):
        raise OptionsError("RandomRotation(expand=True) is not supported: the rotated image's size "
                           "would change with each angle")
    center = getattr(step, "center", None)
    return dict(degrees=_pair("RandomRotation", "degrees", step.degrees),
                interpolation=_map_interpolation("RandomRotation", step), fill=_fill(step),
                center=None if center is None else (float(center[0]), float(center[1])))


def _affine_args(step):
    """RandomAffine's arguments as gpuprep's method takes them, refusing none of torchvision's
    (its constructor has checked them); v2's computes its matrix in an arithmetic of its own."""
    degrees = _pair("RandomAffine", "degrees", step.degrees)
    pair = lambda v: None if v is None else (float(v[0]), float(v[1]))
    shear = None if step.shear is None else [float(v) for v in step.shear]
    return dict(degrees=degrees, translate=pair(step.translate), scale=pair(step.scale),
                shear=shear, interpolation=_map_interpolation("RandomAffine", step),
                fill=_fill(step), center=pair(step.center), v2=_is_v2(step))


def _fill(step):
    """The fill torchvision's PIL kernels give `step` (RandomRotation, an augmentation policy): a
    number or one per channel, each made an int as its _parse_fill does, none meaning 0. v2's
    fill keyed by type gives a PIL image its "others" entry (none when there is none)."""
    name = type(step).__name__
    fill = getattr(step, "fill", 0)
    if isinstance(fill, dict):
        if any(getattr(key, "__module__", "").startswith("PIL") for key in fill):
            raise OptionsError(f"{name}(fill={fill!r}) is not supported: a fill keyed by a PIL "
                               "image class depends on the image's exact class; give one fill")
        fill = fill.get("others")
    fill = 0 if fill is None else fill
    try:
        values = list(fill) if isinstance(fill, (list, tuple)) else [fill]
        values = [int(v) for v in (values * 3 if len(values) == 1 else values)]
    except (TypeError, ValueError, OverflowError):
        values = []
    if len(values) != 3 or not all(0 <= v <= 255 for v in values):
        raise OptionsError(f"{name}(fill={fill!r}) is not supported: one number or three (R, G, B) "
                           "in 0..255")
    return values


def _padding(step):
    """Pad's or RandomCrop's padding as (left, top, right, bottom): torchvision's int, one, two
    or four ints (v2's Pad keeps them as a list, v2's RandomCrop as left, right, top, bottom),
    none meaning none."""
    padding = getattr(step, "padding", None)
    if not padding:
        return [0] * 4
    if type(step).__name__ == "RandomCrop" and _is_v2(step):
        left, right, top, bottom = padding
        padding = [left, top, right, bottom]
    values = [padding] if isinstance(padding, int) else list(padding)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values) or \
            len(values) not in (1, 2, 4):
        raise OptionsError(f"{type(step).__name__}(padding={padding!r}) is not supported: one, "
                           "two or four non-negative ints")
    if len(values) == 1:
        return values * 4
    return values * 2 if len(values) == 2 else values


def _is_v2(step):
    return (type(step).__module__ or "").startswith("torchvision.transforms.v2")


def _jitter_range(value):
    """ColorJitter's stored [min, max] (None where it leaves the adjustment out) as gpuprep takes
    it: a (min, max) pair, which the crate checks as torchvision's _check_input did."""
    return None if value is None else (float(value[0]), float(value[1]))


def _twice(name, first):
    """The refusal of `name` after `first`, a transform of the same slot of gpuprep's Transform."""
    if name == first:
        return (f"{name} twice in one Compose: torchvision would apply it twice, and gpuprep's "
                f"Transform holds one {name} (the result would differ); keep one")
    what = _TWICE[_SLOTS.get(name, name)]
    return (f"{name} after {first}: torchvision would apply both ({what} twice), and gpuprep's "
            "Transform does it once (the result would differ); keep one")


def _group(step):
    """For torchvision's RandomOrder or RandomChoice (v1 or v2) of steps that keep the image's
    size (each maybe inside RandomApply): (its kind, its steps, RandomChoice's weights); None for
    any other transform. Another RandomOrder or RandomChoice is refused by name."""
    kind, module = type(step).__name__, type(step).__module__ or ""
    if kind not in ("RandomOrder", "RandomChoice") or not module.startswith("torchvision."):
        return None
    members = list(step.transforms)
    names = [_name(_unwrapped(m)[0]) for m in members]
    if not members or not all(n in _SAME_SIZE for n in names):
        raise OptionsError(f"{kind}([{', '.join(names)}]) is not supported: gpuprep draws "
                           f"{kind} among the steps that keep the image's size, each one "
                           "transform (or RandomApply of one): the rotation, RandomAffine or "
                           "policy, RandomPerspective, ColorJitter, RandomGrayscale, "
                           f"{', '.join(_COLOR_OPERATIONS)} and GaussianBlur")
    weights = None
    if kind == "RandomChoice":
        weights = [1.0] * len(members) if step.p is None else [float(w) for w in step.p]
        if len(weights) != len(members) or not all(w >= 0 for w in weights) or \
                not sum(weights) > 0:
            raise OptionsError(f"RandomChoice(p={step.p!r}): one non-negative weight per "
                               "transform, of a positive sum")
    return kind, members, weights


def _steps(compose):
    """The transforms of a torchvision Compose (v1 or v2), a Compose inside it flattened into its
    place (it applies its transforms in turn, as the outer one does), or [compose] for one
    transform; RandomOrder and RandomChoice stay as they are (see _group); any other container
    is refused by name."""
    if isinstance(compose, (tuple, list)):
        raise OptionsError(f"a {type(compose).__name__} of transforms is not supported: give a "
                           "Compose (timm's create_transform(..., separate=True) gives a tuple "
                           "of three: use separate=False)")
    steps = getattr(compose, "transforms", None)
    if steps is None:
        return [compose]
    kind, module = type(compose).__name__, type(compose).__module__ or ""
    if kind != "Compose" or not module.startswith("torchvision."):
        raise OptionsError(f"{kind} is not supported by gpuprep: give a torchvision Compose of "
                           "supported transforms, or one of them")
    flat = []
    for step in steps:
        inner = type(step).__name__ == "Compose" and \
            (type(step).__module__ or "").startswith("torchvision.")
        if _name(step) == "RandomChoice" and _mix.translated(step) is not None:
            raise OptionsError("RandomChoice of MixUp/CutMix inside a Compose: it mixes "
                               "batches, not images; translate it on its own and give it to "
                               "Loader(batch_transform=...)")
        flat.extend(_steps(step) if inner else [step])
    return flat


def _with_groups_flattened(steps):
    """(step, its group's number or None, its group) for each transform of `steps`, a
    RandomOrder's or RandomChoice's steps in their place (see _group)."""
    flat = []
    for number, step in enumerate(steps):
        group = _group(step)
        members = group[1] if group else [step]
        flat.extend((member, number if group else None, group) for member in members)
    return flat


# What RandomApply may wrap in gpuprep's Transform, and each one's parameter where it did not
# apply, as torchvision_params records it (a single-operation transform's: False). ColorJitter,
# GaussianBlur, RandomRotation and RandomAffine, which draw no coin of their own, take its p as
# theirs; a transform that draws one applies in a share p × q of the samples (the same
# distribution; torchvision_params records both draws as torchvision makes them).
_NOT_APPLIED = {"ColorJitter": ("color", {"order": []}), "GaussianBlur": ("blur", None),
                "RandomRotation": ("rotation", 0.0),
                "RandomAffine": ("affine", {"angle": 0.0, "translate": [0, 0], "scale": 1.0,
                                            "shear": [0.0, 0.0]}),
                "RandomHorizontalFlip": ("flip", False), "RandomVerticalFlip": ("vflip", False),
                "RandomGrayscale": ("grayscale", False), "RandomPerspective": ("perspective", None)}
_APPLIABLE = (*_NOT_APPLIED, *_COLOR_OPERATIONS)


def _unwrapped(step):
    """(the transform, the probability RandomApply applies it): a torchvision RandomApply of one
    transform of _APPLIABLE is that transform in a share p of the samples; another RandomApply is
    refused by name."""
    if type(step).__name__ != "RandomApply" or \
            not (type(step).__module__ or "").startswith("torchvision."):
        return step, 1.0
    inner = list(step.transforms)
    if len(inner) != 1 or type(inner[0]).__name__ not in _APPLIABLE:
        names = ", ".join(type(t).__name__ for t in inner)
        raise OptionsError(f"RandomApply([{names}]) is not supported: gpuprep takes RandomApply "
                           f"around one of {', '.join(_APPLIABLE)}")
    return inner[0], _probability("RandomApply", step.p)


def from_torchvision(compose):
    """The Transform that computes what `compose` (a torchvision Compose, v1 or v2 (a Compose
    inside it counting as its transforms in its place), of Resize or
    RandomResizedCrop, Pad, CenterCrop or RandomCrop, RandomHorizontalFlip, RandomVerticalFlip,
    one of RandomRotation, TrivialAugmentWide, RandAugment and AutoAugment (NEAREST, BILINEAR or
    BICUBIC; the policies v1's), then RandomPerspective (v1's or v2's),
    ColorJitter (or RandomApply([ColorJitter(...)], p)), RandomGrayscale, RandomInvert / RandomPosterize / RandomSolarize /
    RandomAdjustSharpness / RandomAutocontrast / RandomEqualize (in any order
    among themselves, which is kept), GaussianBlur (v1's or v2's; or RandomApply([GaussianBlur(...)], p):
    exact given torch's kernels, see Transform.gaussian_blur); RandomApply([X], p) of
    RandomRotation or RandomAffine (an angle of 0, the identity, where it does not apply), or of
    a flip, RandomGrayscale, RandomPerspective or a single-operation transform X of probability
    q (X with probability p × q; torchvision_params draws both coins as torchvision does),
    ToTensor /
    PILToTensor / ToImage (+ ToDtype /
    ConvertImageDtype), Normalize, RandomErasing, in that order (but the steps from the rotation
    or policy to GaussianBlur, which keep the image's size, in any order among themselves, which
    is kept: Transform.order, and in RandomOrder or RandomChoice (v1 or v2) of them, drawn per
    sample), ToPureTensor anywhere (and timm's
    MaybeToTensor, MaybePILToTensor, RandomResizedCropAndInterpolation and RandomErasing in its
    three modes with its counts, as the torchvision transforms they compute as, and its
    RandAugment ('rand-...'), AutoAugment ('original', 'originalr', 'v0', 'v0r', '3a', with
    '-mstd') and AugMix ('augmix-...', blended or not) in the policies' place); the flips
    also after the colour transforms but RandomAdjustSharpness and GaussianBlur, with which
    they do not commute bit for bit, and never after a rotation, RandomAffine, RandomPerspective
    or policy) computes on a PIL image, bit for bit. Anything else is refused here, by name
    (OptionsError): another transform (or one of another library of a torchvision name), an option
    gpuprep does not compute, a transform of which gpuprep's Transform holds one given twice (two
    Resize, a Resize and a RandomResizedCrop, two flips of one axis, two ColorJitter, two
    RandomPosterize ...: torchvision would apply both), a geometric or colour transform after the
    tensor conversion (torchvision would run torch's kernels there, not Pillow's). v2's ToDtype /
    ConvertImageDtype from uint8 to a float type multiply by float32(1/255), as v2 does (not
    ToTensor's division, which differs in the last bit for 126 of the 256 values).
    A batch transform translates to gpuprep's, for Loader(batch_transform=...): v2's MixUp and
    CutMix (with num_classes), a RandomChoice of them (torchvision's reference recipes'
    --mixup-alpha / --cutmix-alpha) and timm's Mixup."""
    mix = _mix.translated(compose)
    if mix is not None:
        return mix
    t = Transform()
    last, latest = -1, None  # the furthest place in the order so far, and the step at it
    rotated = None  # the first rotation, RandomAffine, RandomPerspective or policy
    sharpened = False
    order = []  # the steps that keep the image's size as the Compose lists them, with groups
    seen = {}  # slot -> the transform that took it, and its group's number
    tensor = None  # the transform that made the PIL image a tensor
    dtype = None  # the tensor's element type, once there is one
    for step, number, group in _with_groups_flattened(_steps(compose)):
        step, applied = _unwrapped(step)
        name, module = _name(step), type(step).__module__ or ""
        if name in _REFUSED_WITH_REASON and module.split(".")[0] in ("torchvision", "timm"):
            raise OptionsError(_REFUSED_WITH_REASON[name])
        if _mix.translated(step) is not None:
            raise OptionsError(f"{name} of MixUp/CutMix inside a Compose: it mixes batches, not "
                               "images; translate it on its own and give it to "
                               "Loader(batch_transform=...)")
        if name not in _STAGE and name != "ToPureTensor":
            raise OptionsError(f"{name} is not supported by gpuprep (supported: {sorted(_STAGE)}, "
                               f"RandomApply around one of {', '.join(_APPLIABLE)}, and "
                               "ToPureTensor)")
        if not module.startswith("torchvision.") and not _is_timms(step):
            raise OptionsError(f"{module}.{name} is not torchvision's {name}: gpuprep translates "
                               "torchvision's own transforms (transforms or transforms.v2) and "
                               f"timm's {', '.join(_TIMM)} only")
        v2 = module.startswith("torchvision.transforms.v2")
        if name == "ToPureTensor":
            continue  # a TVTensor becomes a plain tensor of the same values; a PIL image stays
        if tensor is not None and _STAGE[name] < _STAGE["ToTensor"]:
            raise OptionsError(f"{name} after {tensor}(): torchvision would run it on a tensor, "
                               "with torch's kernels, not Pillow's arithmetic, and gpuprep "
                               f"computes the PIL path: put {tensor}() after the geometric and "
                               "colour transforms")
        if name in _FLIPS and sharpened:
            raise OptionsError(f"{name} after RandomAdjustSharpness: Pillow's smoothing adds its "
                               "float products in an order a flip reverses, so the two do not "
                               f"commute bit for bit, and gpuprep flips first: put {name} first")
        # A flip moves pixels without changing them, and the colour steps (but sharpness) change
        # each pixel alone or by a histogram: a flip after them is a flip before them.
        commutes = name in _FLIPS and last <= max(_STAGE[op] for op in _COLOR_OPERATIONS)
        # The steps that keep the image's size run in the Compose's order (Transform.order).
        reordered = name in _SAME_SIZE and latest in _SAME_SIZE
        if _STAGE[name] < last and not commutes and not reordered:
            raise OptionsError(f"{name} after a later step ({latest}): gpuprep applies them in "
                               "torchvision's usual order (resize or crop; pad; centre or random "
                               "crop; flips; then the rotation or augmentation policy, "
                               "RandomPerspective, ColorJitter, RandomGrayscale, "
                               f"{', '.join(_COLOR_OPERATIONS)} and GaussianBlur, in any order "
                               "among themselves; tensor; normalise; erase)")
        if _STAGE[name] > last:
            last, latest = _STAGE[name], name
        sharpened |= name == "RandomAdjustSharpness"
        # Flips and colour commute; a rotation (or augmentation policy) does not, and gpuprep
        # flips first.
        if rotated and name in _FLIPS:
            raise OptionsError(f"{name} after {rotated}: gpuprep flips before the rotation, "
                               "RandomAffine, RandomPerspective or augmentation policy, with "
                               f"which a flip does not commute; put {name} first")
        rotated = rotated or (name in _GEOMETRIC and name)
        if name in _SAME_SIZE:
            order.append((_METHOD[name], number, group))
        target = None
        if name in ("ToDtype", "ConvertImageDtype"):
            target = getattr(step, "dtype", None)
            if isinstance(target, dict):
                raise OptionsError(f"{name} with a dict of dtypes is not supported: give one dtype")
            target = str(target).replace("torch.", "")
            if tensor is None:
                raise OptionsError(f"{name} before a tensor conversion: torchvision passes a PIL "
                                   "image through it (v2) or refuses one (v1); put it after "
                                   "ToImage(), PILToTensor() or ToTensor()")
            if target == dtype:
                continue  # torchvision returns a tensor of that dtype as it is
        if name == "ToImage" and tensor is not None:
            continue  # wraps the tensor as a tv_tensors.Image, its values as they are
        slot = _SLOTS.get(name, name)
        if slot in seen and group is not None and seen[slot][1] == number:
            raise OptionsError(f"{group[0]} of {seen[slot][0]} and {name}: gpuprep's Transform "
                               "holds one rotation, RandomAffine or augmentation policy, and "
                               "one of each other transform, so it cannot draw between or "
                               "order these two")
        if slot in seen:
            raise OptionsError(_twice(name, seen[slot][0]))
        seen[slot] = (name, number)
        if name == "RandomRotation":
            t = t.random_rotation(**_rotation_args(step), p=applied)
        elif name == "RandomAffine":
            t = t.random_affine(**_affine_args(step), p=applied)
        elif name == "RandomPerspective":
            t = t.random_perspective(float(step.distortion_scale),
                                     _probability(name, step.p) * applied,
                                     _map_interpolation(name, step), _fill(step))
        elif name in ("TrivialAugmentWide", "RandAugment", "AutoAugment"):
            t = _with_augmentation_policy(t, step, v2)
        elif name == "TimmRandAugment":
            t = _with_timms_rand_augment(t, step)
        elif name == "TimmAutoAugment":
            t = _with_timms_auto_augment(t, step)
        elif name == "TimmAugMix":
            t = _with_timms_aug_mix(t, step)
        elif name in ("Resize", "RandomResizedCrop", "RandomResize", "RandomShortestSize",
                      "ResizeKeepRatio"):
            if v2 and getattr(step, "antialias", True) not in (True, None, "warn"):
                raise OptionsError(f"transforms.v2.{name}(antialias={step.antialias!r}) is not "
                                   "supported: on a PIL image torchvision antialiases anyway, as "
                                   "gpuprep does, on a tensor it would not; leave antialias=True")
            drawn = isinstance(getattr(step, "interpolation", None), (tuple, list))
            if drawn and [_interpolation_name(m) for m in step.interpolation] != \
                    ["BILINEAR", "BICUBIC"]:
                raise OptionsError(f"{type(step).__name__}(interpolation={step.interpolation!r}) "
                                   "is not supported: gpuprep draws bilinear or bicubic only")
            if not drawn:
                t = t.interpolation(_filter(name, step))
            if name == "Resize":
                t = t.resize(_checked_size(name, step.size), getattr(step, "max_size", None))
            elif name == "ResizeKeepRatio":
                t = _with_keep_ratio(t, step, drawn)
            elif name == "RandomResize":
                t = t.random_resize(step.min_size, step.max_size)
            elif name == "RandomShortestSize":
                t = t.random_shortest_size(list(step.min_size), step.max_size)
            else:
                t = t.random_resized_crop(_checked_size(name, step.size),
                                          _pair(name, "scale", step.scale, positive=True),
                                          _pair(name, "ratio", step.ratio, positive=True),
                                          "random" if drawn else None)
        elif name == "CenterCrop" and _is_timms(step):
            if step.padding_mode != "constant":
                raise OptionsError(f"timm's CenterCropOrPad(padding_mode={step.padding_mode!r}) "
                                   "is not supported: its constant fill is")
            t = t.center_crop(_checked_size(name, step.size), step.fill)
        elif name == "CenterCrop":
            t = t.center_crop(_checked_size(name, step.size))
        elif name == "Pad":
            t = t.pad(_padding(step), _fill(step), step.padding_mode)
        elif name == "RandomCrop":
            if (v2 and step.padding_mode != "constant" and step.pad_if_needed
                    and _padding(step) != [0] * 4):
                raise OptionsError("transforms.v2.RandomCrop(padding=..., pad_if_needed=True, "
                                   f"padding_mode={step.padding_mode!r}) is not supported: v2 "
                                   "pads once by both, v1 twice, and the two mirror differently; "
                                   "gpuprep computes v1's")
            t = t.random_crop(_checked_size(name, step.size), _padding(step), step.pad_if_needed,
                              _fill(step), step.padding_mode)
        elif name == "RandomHorizontalFlip":
            t = t.horizontal_flip(_probability(name, step.p) * applied)
        elif name == "RandomVerticalFlip":
            t = t.vertical_flip(_probability(name, step.p) * applied)
        elif name == "ColorJitter":
            t = t.color_jitter(*(_jitter_range(getattr(step, name)) for name in _ADJUSTMENTS),
                               p=applied)
        elif name == "RandomGrayscale":
            t = t.grayscale(_probability(name, step.p) * applied)
        elif name == "GaussianBlur":
            t = t.gaussian_blur(tuple(step.kernel_size), tuple(step.sigma), p=applied,
                                v2=_is_v2(step))
        elif name in _COLOR_OPERATIONS:
            t = _with_color_operation(t, step, applied)
        elif name in _TO_TENSOR:
            tensor, dtype = name, _TO_TENSOR[name]
            t = t.to_tensor() if dtype == "float32" else t.to("uint8", "chw")
        elif name in ("ToDtype", "ConvertImageDtype"):
            if target not in ("uint8", "float16", "float32"):
                raise OptionsError(f"{name}(torch.{target}) is not supported: gpuprep writes "
                                   "torch.uint8, torch.float16 or torch.float32")
            # Between float types scale changes nothing (a cast either way).
            floats = dtype != "uint8" and target != "uint8"
            if name == "ToDtype" and not getattr(step, "scale", False) and not floats:
                raise OptionsError(f"ToDtype(torch.{target}, scale=False) is not supported: it "
                                   f"casts the {dtype} values unscaled (0 to 255 as floats, or "
                                   "floats truncated to integers), which gpuprep does not write; "
                                   "ToTensor() gives torchvision's division by 255")
            # v2 scales uint8 to float by multiplying by float32(1/255), v1 by dividing by 255:
            # the two differ in the last bit for 126 of the 256 values.
            scale = "multiply" if v2 and dtype == "uint8" and target != "uint8" else "divide"
            dtype = target
            t = t.to_tensor(scale) if dtype == "float32" else t.to_tensor(scale).to(dtype)
        elif name == "Normalize":
            if dtype is None:
                raise OptionsError("Normalize before a tensor conversion: torchvision refuses a "
                                   "PIL image; put ToTensor() before it")
            if dtype == "uint8":
                raise OptionsError("Normalize of a uint8 tensor: torchvision refuses it (a float "
                                   "tensor only); convert with ToTensor() or "
                                   "ConvertImageDtype(torch.float32) first")
            if dtype != "float32":
                raise OptionsError(f"Normalize of a {dtype} tensor is not supported: torchvision "
                                   f"normalises in {dtype}, gpuprep in float32")
            std = _channels(name, "std", step.std)
            if 0.0 in std:
                raise OptionsError(f"Normalize(std={step.std!r}): torchvision refuses a zero std")
            t = t.normalize(_channels(name, "mean", step.mean), std)
        elif name == "RandomErasing":
            if tensor is None:
                raise OptionsError("RandomErasing before a tensor conversion: torchvision "
                                   "refuses a PIL image (v1) or passes it through (v2); put it "
                                   "after ToTensor(), PILToTensor() or ToImage()")
            if _is_timms(step):
                t = _with_timms_erasing(t, step)
                continue
            if step.value is None or isinstance(step.value, str):  # v2 keeps 'random' as None
                if dtype == "uint8":
                    raise OptionsError("RandomErasing(value='random') of a uint8 tensor is not "
                                       "supported: torch casts its negative normal values to "
                                       "uint8 in a way that depends on the platform")
                value = "random"
            else:
                value = _channels(name, "value", step.value)
                if dtype == "uint8" and not all(v == int(v) and 0 <= v <= 255 for v in value):
                    raise OptionsError(f"RandomErasing(value={step.value!r}) of a uint8 tensor "
                                       "is not supported: integers in 0..255 only")
            t = t.random_erasing(_probability(name, step.p),
                                 _pair(name, "scale", step.scale, low=0.0, high=1.0),
                                 _pair(name, "ratio", step.ratio, positive=True), value)
        else:
            # An operation the crate declares (see _STAGE) without a translation here: refused,
            # never dropped in silence.
            raise OptionsError(f"{name} is not translated by this version of gpuprep's Python "
                               "package (its operations table and from_torchvision disagree)")
    if order:
        t = t.order(*_order_entries(order))
    t.validate()  # what the translated options do not fit, refused here rather than later
    return t


def _order_entries(order):
    """Transform.order's entries for `order`, the (method, group number, group) of each step
    that keeps the image's size as the Compose lists them: a method's name, or one entry for
    all the steps of a RandomOrder or RandomChoice."""
    entries, last = [], None  # last: the group of the entry made last
    for method, number, group in order:
        if group is None:
            entries.append(method)
            last = None
            continue
        kind, _members, weights = group
        if last != number:  # the group's first step
            entries.append({"random_order": []} if kind == "RandomOrder"
                           else {"random_choice": [], "p": []})
            last = number
        entry = entries[-1]
        steps = entry.get("random_order", entry.get("random_choice"))
        steps.append(method)
        if weights is not None:
            entry["p"].append(weights[len(steps) - 1])
    return entries


def _with_keep_ratio(t, step, drawn):
    """`t` with timm's ResizeKeepRatio `step` as its eval transforms make it: longest 0 or 1, no
    random scale or aspect, one interpolation; anything else refused by name."""
    if drawn or step.random_scale_prob > 0 or step.random_aspect_prob > 0:
        raise OptionsError("timm's ResizeKeepRatio with a random interpolation, scale or aspect "
                           "(its training form) is not supported: its eval form is")
    if step.longest not in (0.0, 1.0):
        raise OptionsError(f"timm's ResizeKeepRatio(longest={step.longest}) is not supported: "
                           "longest=0 (create_transform's 'center' crop mode) and 1 (its "
                           "'border') are")
    return t.resize_keep_ratio(tuple(step.size), longest=step.longest == 1.0)


def _with_timms_rand_augment(t, step):
    """`t` with timm's RandAugment `step` (rand_augment_transform's): its default or increasing
    operation set, every operation alike (probability, magnitude, noise, bound, fill,
    interpolation, translation share), as a `rand-...` string gpuprep parses; a weighted or
    other operation set is refused by name."""
    from timm.data import auto_augment as timm_aa

    if step.choice_weights is not None:
        raise OptionsError("timm's RandAugment with weighted operations (a 't...' set) is not "
                           "supported: its default and 'inc1' sets are")
    names = [op.name for op in step.ops]
    sets = {tuple(timm_aa._RAND_TRANSFORMS): 0, tuple(timm_aa._RAND_INCREASING_TRANSFORMS): 1}
    if tuple(names) not in sets:
        raise OptionsError(f"timm's RandAugment of the operations {names} is not supported: "
                           "its default and 'inc1' sets are")

    first = step.ops[0]
    if any(_timm_settings(op) != _timm_settings(first) for op in step.ops) or \
            any((op.prob, op.magnitude) != (first.prob, first.magnitude) for op in step.ops):
        raise OptionsError("timm's RandAugment whose operations differ in their settings is "
                           "not supported")
    prob, magnitude = first.prob, first.magnitude
    std, top, translate_pct, fill, resample = _timm_settings(first)
    if magnitude != int(magnitude) or (top is not None and top != int(top)):
        raise OptionsError(f"timm's RandAugment magnitude {magnitude} (max {top}) is not "
                           "supported: timm's strings give integers")
    if 100 < std < float("inf"):
        raise OptionsError(f"timm's RandAugment with magnitude_std={std} (a finite noise above "
                           "100, given in hparams) is not supported: a 'mstd' above 100 means "
                           "uniform magnitudes to gpuprep, as in timm's strings")

    config = f"rand-m{int(magnitude)}-n{step.num_layers}-p{_digits(prob)}"
    if sets[tuple(names)]:
        config += "-inc1"
    if std > 0:  # timm draws no noise for a magnitude_std of 0 or below
        config += "-mstd101" if std == float("inf") else f"-mstd{_digits(std)}"
    if top is not None:
        config += f"-mmax{int(top)}"
    interpolation = _timm_interpolation("RandAugment", resample)
    return t.timm_rand_augment(config, fill, interpolation, float(translate_pct))


def _timm_settings(op):
    """What one of timm's AugmentOps holds besides its operation, probability and magnitude:
    the magnitude's noise and bound, the translation share, the fill and the filter."""
    fill = op.kwargs["fillcolor"]
    return (op.magnitude_std, op.magnitude_max, op.hparams.get("translate_pct", 0.45),
            tuple(fill) if isinstance(fill, (tuple, list)) else fill, op.kwargs["resample"])


def _digits(value):
    """A number as a timm string section holds it: digits only (the string splits at '-', so
    no exponent)."""
    return _np.format_float_positional(float(value), unique=True, trim="-")


def _timm_interpolation(what, resample):
    """gpuprep's name of a timm policy's filter: 'random' for timm's draw of bilinear or
    bicubic; another draw is refused by name."""
    if isinstance(resample, (tuple, list)):
        if [_interpolation_name(r) for r in resample] != ["BILINEAR", "BICUBIC"]:
            raise OptionsError(f"timm's {what} drawing from {resample!r} is not supported: "
                               "gpuprep draws bilinear or bicubic")
        return "random"
    return _INTERPOLATIONS.get(_interpolation_name(resample), repr(resample))


def _with_timms_auto_augment(t, step):
    """`t` with timm's AutoAugment `step` (auto_augment_transform's): one of its policies
    'original', 'originalr', 'v0', 'v0r' and '3a' (as timm builds them), every operation with the
    same settings (noise, fill, interpolation, translation share), as a policy string gpuprep
    parses; any other policy is refused by name."""
    from timm.data import auto_augment as timm_aa

    def table(policy):
        return [[(op.name, op.prob, op.magnitude) for op in sub] for sub in policy]
    given = table(step.policy)
    names = ("original", "originalr", "v0", "v0r", "3a")
    policy = next((name for name in names
                   if table(timm_aa.auto_augment_policy(name, dict(timm_aa._HPARAMS_DEFAULT)))
                   == given), None)
    if policy is None:
        raise OptionsError("timm's AutoAugment of a policy of its own is not supported: "
                           "timm's 'original', 'originalr', 'v0', 'v0r' and '3a' are")
    ops = [op for sub in step.policy for op in sub]
    if any(_timm_settings(op) != _timm_settings(ops[0]) for op in ops):
        raise OptionsError("timm's AutoAugment whose operations differ in their settings is "
                           "not supported")
    std, top, translate_pct, fill, resample = _timm_settings(ops[0])
    if top is not None:
        raise OptionsError(f"timm's AutoAugment with magnitude_max={top} (given in hparams) is "
                           "not supported: its strings have no bound")
    if std == float("inf"):
        raise OptionsError("timm's AutoAugment with an infinite magnitude_std (uniform "
                           "magnitudes, given in hparams) is not supported: its strings give "
                           "a finite 'mstd'")
    config = policy + (f"-mstd{_digits(std)}" if std > 0 else "")
    interpolation = _timm_interpolation("AutoAugment", resample)
    return t.timm_auto_augment(config, fill, interpolation, float(translate_pct))


def _timm_rand_augment_draw(step, width, height):
    """timm's RandAugment.__call__'s draws, in its order: the operations with numpy's global
    RNG, then per operation with Python's random whether it applies, its magnitude's noise,
    its sign and its filter; each as gpuprep records it (the argument timm's operation gets)."""
    import random

    import numpy as np

    ops = np.random.choice(step.ops, step.num_layers, replace=True)
    drawn = (_timm_op_draw(op, width, height) for op in ops)
    return [record for record in drawn if record is not None]


def _with_timms_aug_mix(t, step):
    """`t` with timm's AugMix `step` (augment_and_mix_transform's, blended or not): its
    thirteen operations, every one with the same magnitude and settings, as an `augmix-...`
    string gpuprep parses; another operation set is refused by name."""
    from timm.data import auto_augment as timm_aa

    names = [op.name for op in step.ops]
    if names != list(timm_aa._AUGMIX_TRANSFORMS):
        raise OptionsError(f"timm's AugMix of the operations {names} is not supported: its "
                           "own thirteen are")
    first = step.ops[0]
    if any(_timm_settings(op) != _timm_settings(first) for op in step.ops) or \
            any((op.prob, op.magnitude) != (1.0, first.magnitude) for op in step.ops):
        raise OptionsError("timm's AugMix whose operations differ in their settings is not "
                           "supported")
    std, top, translate_pct, fill, resample = _timm_settings(first)
    if top is not None:
        raise OptionsError(f"timm's AugMix with magnitude_max={top} (given in hparams) is not "
                           "supported: its strings have no bound")
    if first.magnitude != int(first.magnitude):
        raise OptionsError(f"timm's AugMix magnitude {first.magnitude} is not supported: timm's "
                           "strings give integers")
    config = f"augmix-m{int(first.magnitude)}-w{step.width}-a{_digits(step.alpha)}"
    if step.depth > 0:
        config += f"-d{step.depth}"
    if step.blended:
        config += "-b1"
    if std != float("inf"):  # uniform magnitudes are AugMix's default
        config += f"-mstd{_digits(max(std, 0.0))}"
    interpolation = _timm_interpolation("AugMix", resample)
    return t.timm_aug_mix(config, fill, interpolation, float(translate_pct))


def _timm_aug_mix_draw(step, width, height):
    """timm's AugMixAugment.__call__'s draws, in its order: the weights (numpy's Dirichlet, as
    float32) and the blend factor (its Beta, as float32), then per chain its depth and operations
    with numpy's RNG, and each operation's draws with Python's random (_timm_op_draw)."""
    import numpy as np

    weights = np.float32(np.random.dirichlet([step.alpha] * step.width))
    blend = np.float32(np.random.beta(step.alpha, step.alpha))
    if not (np.all(np.isfinite(weights)) and np.isfinite(blend)):
        raise OptionsError(f"timm's AugMix with alpha={step.alpha}: numpy's Dirichlet drew "
                           f"{weights.tolist()} (its Gamma draws underflowed), which timm casts "
                           "to uint8 undefined; a larger alpha draws finite weights")
    chains = []
    for _ in weights:
        depth = step.depth if step.depth > 0 else np.random.randint(1, 4)
        ops = np.random.choice(step.ops, depth, replace=True)
        chains.append([_timm_op_draw(op, width, height) for op in ops])
    return {"weights": [float(w) for w in weights], "blend": float(blend), "chains": chains}


def _timm_auto_augment_draw(step, width, height):
    """timm's AutoAugment.__call__'s draws, in its order: the sub-policy with Python's random,
    then each of its operations as _timm_op_draw draws one."""
    import random

    drawn = (_timm_op_draw(op, width, height) for op in random.choice(step.policy))
    return [record for record in drawn if record is not None]


def _timm_op_draw(op, width, height):
    """timm's AugmentOp.__call__'s draws with Python's random, in its order: whether it
    applies, its magnitude's noise, its sign and its filter; as gpuprep records it (the argument
    timm's operation gets), or None when it does not apply."""
    import random

    if op.prob < 1.0 and random.random() > op.prob:
        return None
    magnitude = op.magnitude
    if op.magnitude_std == float("inf"):
        magnitude = random.uniform(0, magnitude)
    elif op.magnitude_std > 0:
        magnitude = random.gauss(magnitude, op.magnitude_std)
    magnitude = max(0.0, min(magnitude, op.magnitude_max or 10.0))
    args = op.level_fn(magnitude, op.hparams) if op.level_fn is not None else ()
    record = _TIMM_OPS[op.name](args[0] if args else 0.0, width, height)
    resample = op.kwargs["resample"]
    if record["op"] in ("Rotate", "TimmShearX", "TimmShearY", "TimmTranslateX",
                        "TimmTranslateY"):
        if isinstance(resample, (tuple, list)):
            resample = random.choice(resample)
        record["interpolation"] = _INTERPOLATIONS[_interpolation_name(resample)]
    return record


def _timm_blur_radius(level):
    """gaussian_blur_rand's radius, which it draws with Python's random as it runs (after the
    operation's other draws)."""
    import random

    return random.uniform(0.1, 2.0 * level)


def _timm_op(name, argument=lambda a, w, h: float(a)):
    """A recorder of one timm operation as gpuprep's `augment` entry: its name there and its
    argument (timm's level_fn's) as the magnitude."""
    return lambda a, w, h: {"op": name, "magnitude": argument(a, w, h)}


# timm's operations as gpuprep records them: the operations torchvision's spaces share
# (Rotate's degrees, Posterize's bits clipped to 0..8 as ImageOps keeps them, Solarize's
# threshold) by torchvision's names, timm's own with "Timm" (translations in pixels).
_TIMM_OPS = {
    "AutoContrast": _timm_op("AutoContrast"), "Equalize": _timm_op("Equalize"),
    "Invert": _timm_op("Invert"), "Rotate": _timm_op("Rotate"),
    "SolarizeAdd": _timm_op("SolarizeAdd"),
    **{name: _timm_op("Posterize", lambda a, w, h: float(min(max(a, 0), 8)))
       for name in ("Posterize", "PosterizeIncreasing", "PosterizeOriginal")},
    **{name: _timm_op("Solarize") for name in ("Solarize", "SolarizeIncreasing")},
    **{f"{kind}{suffix}": _timm_op(f"Timm{kind}") for kind in
       ("Color", "Contrast", "Brightness", "Sharpness") for suffix in ("", "Increasing")},
    "ShearX": _timm_op("TimmShearX"), "ShearY": _timm_op("TimmShearY"),
    "TranslateXRel": _timm_op("TimmTranslateX", lambda a, w, h: a * w),
    "TranslateYRel": _timm_op("TimmTranslateY", lambda a, w, h: a * h),
    # '3a': desaturate's Color factor, and gaussian_blur_rand's radius.
    "Desaturate": _timm_op("TimmColor", lambda a, w, h: min(1.0, max(0.0, 1.0 - a))),
    "GaussianBlurRand": _timm_op("TimmGaussianBlur", lambda a, w, h: _timm_blur_radius(a)),
}


def _with_timms_erasing(t, step):
    """`t` with timm's RandomErasing `step`: its modes ('const' zeros, 'rand' a normal value per
    channel and box, 'pixel' one per element), its min_count..max_count boxes sharing the area,
    over its area and log-aspect ranges."""
    import math

    value = "random" if step.per_pixel else "random_per_channel" if step.rand_color else 0.0
    ratio = tuple(math.exp(r) for r in step.log_aspect_ratio)
    return t.random_erasing(_probability("RandomErasing", step.probability),
                            _pair("RandomErasing", "scale", (step.min_area, step.max_area),
                                  low=0.0, high=1.0),
                            _pair("RandomErasing", "ratio", ratio, positive=True), value,
                            count=(int(step.min_count), int(step.max_count)))


def _timm_erase_params(step, width, height, dtype):
    """timm's RandomErasing._erase's draws for one image of (width, height), in its order: the
    count and the boxes with Python's random, each box's normal values ('rand', 'pixel') with
    torch's generator in the tensor's `dtype`, as its _get_pixels draws them."""
    import math
    import random

    import torch

    if random.random() > step.probability:
        return []
    area = height * width
    count = step.min_count if step.min_count == step.max_count else \
        random.randint(step.min_count, step.max_count)
    boxes = []
    for _ in range(count):
        for _ in range(10):
            target_area = random.uniform(step.min_area, step.max_area) * area / count
            aspect_ratio = math.exp(random.uniform(*step.log_aspect_ratio))
            h = int(round(math.sqrt(target_area * aspect_ratio)))
            w = int(round(math.sqrt(target_area / aspect_ratio)))
            if w < width and h < height:
                top = random.randint(0, height - h)
                left = random.randint(0, width - w)
                box = {"top": top, "left": left, "height": h, "width": w}
                if step.per_pixel or step.rand_color:
                    shape = (3, h, w) if step.per_pixel else (3, 1, 1)
                    noise = torch.empty(shape, dtype=dtype, device=step.device).normal_()
                    box["noise"] = noise.cpu().flatten().tolist()
                boxes.append(box)
                break
    return boxes


def _with_augmentation_policy(t, step, v2):
    """`t` with the TrivialAugmentWide, RandAugment or AutoAugment `step`, refusing what gpuprep
    does not compute."""
    name = type(step).__name__
    interpolation = _map_interpolation(name, step)
    bins = getattr(step, "num_magnitude_bins", 31)
    if not isinstance(bins, int) or not 2 <= bins <= 1024:
        raise OptionsError(f"{name}(num_magnitude_bins={bins!r}) is not supported: 2 to 1024 bins")
    fill = _fill(step)
    if name == "TrivialAugmentWide":
        return t.trivial_augment_wide(bins, interpolation, fill, v2=v2)
    if name == "AutoAugment":
        return t.auto_augment(step.policy.value, interpolation, fill, v2=v2)
    num_ops, magnitude = step.num_ops, step.magnitude
    if not isinstance(num_ops, int) or not 0 <= num_ops <= 4:
        raise OptionsError(f"RandAugment(num_ops={num_ops!r}) is not supported: 0 to 4 operations")
    if not isinstance(magnitude, int) or not 0 <= magnitude < bins:
        raise OptionsError(f"RandAugment(magnitude={magnitude!r}) is not supported: a bin 0 to "
                           f"{bins - 1} of num_magnitude_bins={bins}")
    return t.rand_augment(num_ops, magnitude, bins, interpolation, fill, v2=v2)


def _with_color_operation(t, step, applied=1.0):
    """`t` with the single-operation transform `step` (RandomPosterize, ...) last, its argument
    and p read by the names the crate's table gives (p times `applied`, RandomApply's around it);
    a value the crate refuses is refused by name."""
    name = type(step).__name__
    method, argument = _COLOR_OPERATIONS[name]
    arguments = () if argument is None else (getattr(step, argument),)
    p = _probability(name, step.p) * applied
    try:
        return getattr(t, method)(*arguments, p=p)
    except OptionsError as e:
        raise OptionsError(f"{step!r} is not supported: {e}") from None


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


def _perspective_draw(step, width, height):
    """RandomPerspective.forward's draws with the torch RNG: whether it applies (v1 where
    `torch.rand(1) < p`, v2 unless `torch.rand(1) >= p`: the same one draw), then its eight
    corner offsets; the coefficients torchvision's own _get_perspective_coeffs makes of them (a
    float64 least-squares solve through the CPU's LAPACK, rounded to float32): the map's
    parameters, with which gpuprep maps exactly as Pillow does. None where it does not apply."""
    import torch

    if not bool(torch.rand(1) < step.p):
        return None
    if _is_v2(step):
        stand_in = torch.empty(1, 1, 1).expand(3, height, width)
        make_params = getattr(step, "make_params", None) or step._get_params
        coefficients = make_params([stand_in])["coefficients"]
    else:
        from torchvision.transforms import functional

        start, end = step.get_params(width, height, step.distortion_scale)
        coefficients = functional._get_perspective_coeffs(start, end)
    return [float(c) for c in coefficients]


def _jitter_params(step):
    """ColorJitter.get_params with the torch RNG: the order, then the factors."""
    order, *factors = step.get_params(step.brightness, step.contrast, step.saturation, step.hue)
    color = {"order": [_ADJUSTMENTS[k] for k in order.tolist() if factors[k] is not None]}
    for adjustment, factor in zip(_ADJUSTMENTS, factors):
        if factor is not None:
            color[adjustment] = float(factor)
    return color


def _blur_params(step):
    """GaussianBlur's sigma drawn as it draws it with the torch RNG, and the two kernels
    torchvision makes of it (torch's own float32 arithmetic, MKL's or SLEEF's exp included; v2's
    its softmax): the blur's parameters, with which gpuprep blurs exactly as torchvision does."""
    import torch

    if _is_v2(step):
        from torchvision.transforms.v2.functional._misc import _get_gaussian_kernel1d
        cpu = torch.device("cpu")
    else:
        from torchvision.transforms._functional_tensor import _get_gaussian_kernel1d
        cpu = "cpu"
    sigma = float(torch.empty(1).uniform_(step.sigma[0], step.sigma[1]).item())
    kernel = [_get_gaussian_kernel1d(k, sigma, torch.float32, cpu).tolist()
              for k in step.kernel_size]
    return {"kernel_x": kernel[0], "kernel_y": kernel[1]}


def _rand_augment_draw(step, width, height):
    """RandAugment.forward's draws with the torch RNG, in its order: per operation, which one,
    then (for a signed one) its sign."""
    import torch

    space = step._augmentation_space(step.num_magnitude_bins, (height, width))
    ops = []
    for _ in range(step.num_ops):
        op = list(space.keys())[int(torch.randint(len(space), (1,)).item())]
        magnitudes, signed = space[op]
        magnitude = float(magnitudes[step.magnitude].item()) if magnitudes.ndim > 0 else 0.0
        if signed and torch.randint(2, (1,)):
            magnitude *= -1.0
        ops.append({"op": op, "magnitude": magnitude})
    return ops


def _auto_augment_draw(step, width, height):
    """AutoAugment.forward's draws with the torch RNG (its get_params: the sub-policy, two
    probabilities, two signs); the operations that apply, in order."""
    policy_id, probs, signs = step.get_params(len(step.policies))
    space = step._augmentation_space(10, (height, width))
    ops = []
    for i, (op, p, bin_) in enumerate(step.policies[policy_id]):
        if probs[i] <= p:
            magnitudes, signed = space[op]
            magnitude = float(magnitudes[bin_].item()) if bin_ is not None else 0.0
            if signed and signs[i] == 0:
                magnitude *= -1.0
            ops.append({"op": op, "magnitude": magnitude})
    return ops


def _v2_policy_draw(step, width, height):
    """transforms.v2's TrivialAugmentWide, RandAugment or AutoAugment forward's draws with the
    torch RNG, in its order (an operation's probability, then its sign, one at a time; bins and
    operations as `_get_random_item` draws them), each operation with the magnitude v2 gives
    it: Solarize's threshold `255.0 * magnitude`."""
    import torch

    space, name = step._AUGMENTATION_SPACE, type(step).__name__

    def drawn(op, bin_, bins):
        magnitudes_fn, signed = space[op]
        magnitudes = magnitudes_fn(bins, height, width)
        if magnitudes is None:
            return {"op": op, "magnitude": 0.0}
        magnitude = float(magnitudes[bin_() if callable(bin_) else bin_])
        if signed and torch.rand(()) <= 0.5:
            magnitude *= -1
        return {"op": op, "magnitude": 255.0 * magnitude if op == "Solarize" else magnitude}

    def any_op():
        keys = tuple(space.keys())
        return keys[int(torch.randint(len(keys), ()))]

    if name == "TrivialAugmentWide":
        bins = step.num_magnitude_bins
        return [drawn(any_op(), lambda: int(torch.randint(bins, ())), bins)]
    if name == "RandAugment":
        return [drawn(any_op(), step.magnitude, step.num_magnitude_bins)
                for _ in range(step.num_ops)]
    ops = []
    for op, probability, bin_ in step._policies[int(torch.randint(len(step._policies), ()))]:
        if torch.rand(()) <= probability:
            ops.append(drawn(op, bin_, 10))
    return ops


def torchvision_params(compose, size):
    """The random parameters `compose` draws for an image of `size` (width, height), drawn by
    torchvision's own get_params and the torch RNG in the order its forward draws them: after
    `torch.manual_seed(s)`, `Pipeline.preprocess([image], from_torchvision(compose),
    params=[torchvision_params(compose, size)])` equals `compose(pil_image)` after the same seed,
    bit for bit. timm's transforms draw their crops, interpolations and erased boxes with
    Python's `random`, and its RandAugment its operations with numpy's global RNG, and v1's
    RandomOrder and RandomChoice draw with Python's `random` too: seed them as well
    (`random.seed(s)`, `numpy.random.seed(s)`) for a compose of them. A GaussianBlur's
    parameters are the kernels torchvision makes of the sigma drawn, torch's own. The dict has
    report.json's form. A compose `from_torchvision` refuses is refused here the same way
    (OptionsError), before any draw."""
    import random
    import torch

    translated = from_torchvision(compose)
    # timm draws its normal values in the tensor's own element type (float16's differ).
    tensor_dtype = torch.float16 if translated.dtype == "float16" else torch.float32
    if not (isinstance(size, (tuple, list)) and len(size) == 2 and
            all(isinstance(v, int) and v > 0 for v in size)):
        raise OptionsError(f"size is the image's (width, height), got {size!r}")
    width, height = size
    params = {}
    pending = _steps(compose)
    grouped = any(_group(step) for step in pending)
    ran = []  # the steps that keep the image's size, in the order they run
    while pending:
        step = pending.pop(0)
        name = _name(step)
        inner = _name(_unwrapped(step)[0])
        if inner in _SAME_SIZE and _METHOD[inner] not in ran:
            ran.append(_METHOD[inner])
        if name in ("RandomOrder", "RandomChoice"):
            # v1 draws with Python's random (shuffle; choices over its weights), v2 with torch.
            members, v2 = list(step.transforms), _is_v2(step)
            if name == "RandomOrder" and v2:
                picked = [int(i) for i in torch.randperm(len(members))]
            elif name == "RandomOrder":
                picked = list(range(len(members)))
                random.shuffle(picked)
            elif v2:
                picked = [int(torch.multinomial(torch.tensor(step.p), 1))]
            else:
                picked = random.choices(range(len(members)), weights=step.p)
            pending[:0] = [members[i] for i in picked]
        elif name == "Resize":
            n = _size(step.size)
            if isinstance(n, int):
                short, long_ = min(width, height), max(width, height)
                new = (n, int(n * long_ / short))
                max_size = getattr(step, "max_size", None)
                if max_size is not None and new[1] > max_size:
                    new = (int(max_size * new[0] / new[1]), max_size)
                width, height = new if width <= height else new[::-1]
            else:
                height, width = n
        elif name == "CenterCrop":
            n = _size(step.size)
            height, width = (n, n) if isinstance(n, int) else n
        elif name == "Pad":
            left, top, right, bottom = _padding(step)
            width, height = width + left + right, height + top + bottom
        elif name == "RandomCrop":
            # forward pads (no draw), then get_params: a row, then a column, unless the
            # padded image is the crop's size.
            left, top, right, bottom = _padding(step)
            width, height = width + left + right, height + top + bottom
            n = _size(step.size)
            th, tw = (n, n) if isinstance(n, int) else n
            if step.pad_if_needed:  # by what a side lacks, on both sides of it
                width, height = width + 2 * max(tw - width, 0), height + 2 * max(th - height, 0)
            # v1 draws both unless the image is the crop's size, v2 each where it is larger.
            v1_draws = (width, height) != (tw, th) and not _is_v2(step)
            i = j = 0
            if v1_draws or height > th:
                i = int(torch.randint(0, height - th + 1, size=(1,)).item())
            if v1_draws or width > tw:
                j = int(torch.randint(0, width - tw + 1, size=(1,)).item())
            params["random_crop"] = {"top": i, "left": j, "height": th, "width": tw}
            height, width = th, tw
        elif name == "RandomResize":  # make_params: torch.randint(min_size, max_size)
            size = int(torch.randint(step.min_size, step.max_size, ()))
            params["resize"] = size
            short, long_ = min(width, height), max(width, height)
            new = (size, int(size * long_ / short))
            width, height = new if width <= height else new[::-1]
        elif name == "RandomShortestSize":  # make_params: one of min_size, the scale in doubles
            size = step.min_size[int(torch.randint(len(step.min_size), ()))]
            params["resize"] = int(size)
            r = size / min(width, height)
            if step.max_size is not None:
                r = min(r, step.max_size / max(width, height))
            width, height = int(width * r), int(height * r)
        elif name == "RandomResizedCrop":
            # get_params reads the image's size alone: a view of one element stands in. timm's
            # draws with Python's random, then its interpolation where it draws one.
            stand_in = torch.empty(1, 1, 1).expand(1, height, width)
            i, j, h, w = step.get_params(stand_in, step.scale, step.ratio)
            params["crop"] = {"top": int(i), "left": int(j), "height": int(h), "width": int(w)}
            if isinstance(getattr(step, "interpolation", None), (tuple, list)):
                drawn = _interpolation_name(random.choice(step.interpolation))
                params["interpolation"] = _INTERPOLATIONS[drawn]
            n = _size(step.size)
            height, width = (n, n) if isinstance(n, int) else n
        elif name == "RandomHorizontalFlip":
            params["flip"] = bool(torch.rand(1) < step.p)
        elif name == "RandomVerticalFlip":
            params["vflip"] = bool(torch.rand(1) < step.p)
        elif name == "RandomApply":
            # One draw, compared as torchvision compares it (p as a float32: v1 skips where
            # `p < rand`, v2 where `rand >= p`), then the transform's own draws where it applies.
            r = torch.rand(1)
            applies = bool(r < step.p) if _is_v2(step) else not bool(step.p < r)
            inner = step.transforms[0]
            inner_name = _name(inner)
            if applies:
                pending.insert(0, inner)
            elif inner_name in _COLOR_OPERATIONS:
                params.setdefault("color_ops", {})[_COLOR_OPERATIONS[inner_name][0]] = False
            else:
                key, value = _NOT_APPLIED[inner_name]
                params[key] = _copy.deepcopy(value)
        elif name == "ColorJitter":
            params["color"] = _jitter_params(step)
        elif name == "GaussianBlur":
            params["blur"] = _blur_params(step)
        elif name == "RandomRotation":
            params["rotation"] = float(step.get_params(step.degrees))
        elif name == "RandomAffine":
            angle, (tx, ty), scale, (sx, sy) = step.get_params(
                step.degrees, step.translate, step.scale, step.shear, [width, height])
            params["affine"] = {"angle": float(angle), "translate": [int(tx), int(ty)],
                                "scale": float(scale), "shear": [float(sx), float(sy)]}
        elif name == "RandomPerspective":
            params["perspective"] = _perspective_draw(step, width, height)
        elif name in ("TrivialAugmentWide", "RandAugment", "AutoAugment") and _is_v2(step):
            params["augment"] = _v2_policy_draw(step, width, height)
        elif name == "TrivialAugmentWide":
            params["augment"] = [_trivial_augment_draw(step, width, height)]
        elif name == "RandAugment":
            params["augment"] = _rand_augment_draw(step, width, height)
        elif name == "AutoAugment":
            params["augment"] = _auto_augment_draw(step, width, height)
        elif name == "TimmRandAugment":
            params["augment"] = _timm_rand_augment_draw(step, width, height)
        elif name == "TimmAutoAugment":
            params["augment"] = _timm_auto_augment_draw(step, width, height)
        elif name == "TimmAugMix":
            params["aug_mix"] = _timm_aug_mix_draw(step, width, height)
        elif name == "RandomGrayscale":
            params["grayscale"] = bool(torch.rand(1) < step.p)
        elif name in _COLOR_OPERATIONS:
            # v1 applies when `torch.rand(1).item() < p`, v2 returns early when
            # `torch.rand(1) >= p`: the same one draw.
            method = _COLOR_OPERATIONS[name][0]
            params.setdefault("color_ops", {})[method] = bool(torch.rand(1) < step.p)
        elif name == "RandomErasing" and _is_timms(step):
            params["erase"] = _timm_erase_params(step, width, height, tensor_dtype)
        elif name == "RandomErasing":
            params["erase"] = []
            if torch.rand(1) < step.p:
                value = step.value
                if value is None or isinstance(value, str):
                    value = None  # 'random': get_params draws the normal values
                elif isinstance(value, (int, float)):
                    value = [float(value)]
                else:
                    value = [float(v) for v in value]
                stand_in = torch.empty(1, 1, 1).expand(3, height, width)
                x, y, h, w, v = step.get_params(stand_in, scale=step.scale, ratio=step.ratio,
                                                value=value)
                if (h, w) != (height, width):  # torchvision's fallback erases nothing
                    box = {"top": int(x), "left": int(y), "height": int(h), "width": int(w)}
                    if value is None:
                        box["noise"] = v.flatten().tolist()
                    params["erase"].append(box)
    if grouped:
        params["steps"] = ran
    return params


class Loader:
    """Batches of a dataset through a Transform, as a torch DataLoader over torchvision's PIL
    transforms would give them, bit for bit for the same parameters.

    source: a folder in ImageFolder layout (class folders, sorted, give the labels), a list of
    image files (labels -1), or WebDataset shards (paths, a glob, a .tar, or URLs as webdataset
    takes them: brace patterns such as "s3://bucket/train-{000000..000127}.tar", lists joined
    by "::", file:, http:// and https:// (no query strings), s3:// and gs:// objects with
    credentials from the environment, web identity, an AWS profile's static keys (AWS_PROFILE,
    ~/.aws/credentials and ~/.aws/config, its region and endpoint_url too) or instance metadata
    (AWS_ENDPOINT_URL for an S3-compatible store), and pipe:COMMAND, a command's output, refused where
    GPUPREP_SECURE is set; labels from .cls or .json members, -1 without; a label member that
    holds no label fails its sample). Remote shards are read as they arrive (4 MiB ranges,
    four at a time; the next three shards fetched while one is read, about 24 MiB of each
    ahead); every rank counts every shard's samples when its loader is made (reading remote
    ones through), unless the source is the shards' index: one .json path or URL in
    webdataset's wids format (its shardlist's "url" and "nsamples"), as write_shard_index() or
    `gpuprep index` writes it, from which the split is made without reading a shard (a shard
    that holds other than its count fails under `errors` when it is read); a request that fails transiently, or whose answer breaks off, is retried up
    to `retries` times with backoff (resumed where it broke off, if the object is still the
    same), every wait bounded by `timeout` seconds; then each of that shard's samples not read
    fails under `errors`. `resampled=True` (webdataset's): each rank draws its shards at random
    with replacement from all of them (from the seed, the epoch and the rank), an epoch still
    `len(loader)` batches: for endless streams, and fewer
    shards than ranks. Iterating yields (images, labels): torch tensors when torch is importable,
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
    Epochs: each iteration is a new epoch, in a new order (with `shuffle`) and with new random
    parameters, as DataLoader's RandomSampler reshuffles at every `iter()`; `set_epoch(e)`
    (DistributedSampler's) makes the next iteration epoch `e`. Everything is drawn from `seed`
    and the epoch, so a run is repeatable.
    Ranks: rank/world_size split each epoch as DistributedSampler does, and every rank gets
    the same number of batches, `len(loader)`: files and folders are split sample by sample
    (the tail padded by repetition, or dropped with drop_last); WebDataset shards go to ranks
    whole (webdataset's split_by_node; at least one shard per rank), their samples counted when
    the loader is made, and each rank reads ceil(samples / world_size) of them (floor with
    drop_last): a rank whose shards hold fewer reads its shards again from the first, one whose
    shards hold more stops there. drop_last also drops the short last batch.
    Errors: a source that cannot be read raises when the loader is made. A sample that fails
    (a corrupt or truncated image, a missing file, a broken shard) raises its exception (a
    DecodeError subclass or ReadError, naming the file or shard member) with errors="raise"
    (the default, as DataLoader raises a worker's exception); with errors="skip" it is left out
    of its batch, counted in `stats["failed"]` and `stats["epoch_failed"]`, and the epoch warns
    once at its end with the count (a batch all of whose samples fail comes out empty, so that
    every rank still gets `len(loader)` batches; with drop_last, spare samples refill it).
    Decoding runs ahead in Rust threads with the GIL released (on the GPU one stream that runs
    on from an epoch iterated to its end into the next; `prefetch` finished batches held
    ready, 1 to 64; on the CPU `prefetch` batches made at once). Ctrl-C interrupts a wait for
    a batch within a fraction of a second. `stats` holds the last step's figures; an epoch in
    which the loop waited more than `wait_warning` of a step for data (after the first step)
    warns once, at its end, with its data-wait share and worst steps (None: never).
    `batch_transform`: MixUp, CutMix, RandomChoice of them or TimmMixup (from_torchvision
    translates torchvision's v2 ones and timm's Mixup): each batch mixed as torchvision's or
    timm's call on it computes, bit for bit, its parameters drawn from the seed, the epoch, the
    rank and the step and recorded in the batch's "mix" (see `batches`); labels then come as
    float32 soft targets (batch, num_classes). It runs with torch's own operations where the
    batch is handed over (on the GPU with device="cuda"; on the host it makes a new array,
    pinned again where pin_memory asks), or numpy's (the same bits) in `batches()` and without
    torch.
    `threads`: decoding threads of this process (default: all cores, or under torchrun this
    rank's share, cores / LOCAL_WORLD_SIZE); they are started once per process, so the first
    loader or pipeline sets them (`threads` then holds the number).
    `adapter`: the GPU, by number or a part of its name as `gpuprep info` lists them, or
    "cuda:N" for the GPU CUDA calls device N; with `device="cuda:N"` on a machine of several
    GPUs it defaults to that device's, so that each rank's loader runs on its rank's GPU.
    `reason` says why backend="auto" chose the CPU, when it did.
    """

    def __init__(self, source, transform, batch_size, shuffle=False, seed=0, rank=0,
                 world_size=1, drop_last=False, threads=None, backend="auto", prefetch=2,
                 adapter=None, shuffle_buffer=1000, wait_warning=0.1, pin_memory=None,
                 device=None, errors="raise", batch_transform=None, retries=10, timeout=30.0,
                 resampled=False):
        if errors not in ("raise", "skip"):
            raise OptionsError(f'errors is "raise" or "skip", got {errors!r}')
        for name, value, least in (("batch_size", batch_size, 1), ("rank", rank, 0),
                                   ("world_size", world_size, 1), ("prefetch", prefetch, 1),
                                   ("shuffle_buffer", shuffle_buffer, 0), ("retries", retries, 0)):
            if not isinstance(value, int) or value < least:
                raise OptionsError(f"{name} is an int of at least {least}, got {value!r}")
        if retries > 1000:
            raise OptionsError(f"retries is at most 1000, got {retries}")
        if isinstance(seed, bool) or not isinstance(seed, (int, _np.integer)):
            raise OptionsError(f"seed is an int, got {seed!r}")
        seed = int(seed) % 2**64  # torch takes any int as a seed; its bits are what count
        if wait_warning is not None and not 0 <= wait_warning <= 1:
            raise OptionsError(f"wait_warning is a share of a step, 0 to 1, or None, got "
                               f"{wait_warning!r}")
        _check_batch_transform(batch_transform, transform)
        kind, paths = _resolve(source)
        if batch_transform is not None and kind == "files":
            raise OptionsError("a list of image files has no labels (each is -1), and "
                               f"{batch_transform!r} mixes class labels: give an ImageFolder "
                               "tree or WebDataset shards with .cls or .json labels")
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
                                       shuffle_buffer, 1.0 if wait_warning is None else wait_warning,
                                       pin_for, self.device,
                                       refill=errors == "skip" and drop_last,
                                       retries=retries, timeout=timeout, resampled=resampled)
        unread = self._loader.unread()
        if unread:
            _warnings.warn(f"the shards split unevenly between the {world_size} ranks: each rank "
                           f"reads {self._loader.samples()} samples an epoch, and {unread} "
                           "samples of ranks with more are never read (the split is the same "
                           "every epoch without shuffle): use shuffle=True, or as many samples "
                           "in each rank's shards", RuntimeWarning, stacklevel=2)
        self.errors = errors
        self.batch_transform = batch_transform
        self._mix_key = (seed, rank)
        self._layout = transform.layout
        self.wait_warning = wait_warning
        self.epoch = 0
        self._epoch_given = False
        self._iterated = False
        self._yielded = 0  # batches of the current epoch handed over
        self._resume = None  # (epoch, first batch) that load_state_dict left to resume
        self._seed, self._rank, self._world_size = seed, rank, world_size
        self._batch_size, self._shuffle, self._drop_last = batch_size, bool(shuffle), drop_last
        self._shuffle_buffer, self._resampled, self._transform = shuffle_buffer, resampled, transform
        self._source_digest = _hashlib.sha256("\n".join([kind] + list(paths)).encode()).hexdigest()[:16]
        self._finished = False  # the last iteration ran to its end
        self.stats = {}
        self.last = None
        self.classes = self._loader.classes()
        if batch_transform is not None and batch_transform.even_batches:
            full = self._loader.samples() % batch_size == 0 and errors == "raise"
            if batch_size % 2 or not (drop_last or full):
                raise OptionsError(
                    f"timm's Mixup mixes batches of an even number of samples: give an even "
                    f"batch_size, and drop_last=True unless every batch is full (batch_size "
                    f"{batch_size}, {self._loader.samples()} samples a rank, errors={errors!r})")
        if self.classes and batch_transform is not None \
                and len(self.classes) > batch_transform.num_classes:
            raise OptionsError(f"the dataset has {len(self.classes)} classes, and the batch "
                               f"transform's {batch_transform.num_classes}: give num_classes="
                               f"{len(self.classes)}")

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

    @property
    def reason(self):
        """Why backend="auto" chose the CPU (no GPU, or only a software one), else None."""
        return self._loader.reason()

    def set_epoch(self, epoch):
        """The epoch the next iteration draws its order and parameters for
        (DistributedSampler's `set_epoch`); without it each iteration takes the next epoch.
        After load_state_dict, setting the saved epoch keeps its resumption; another epoch
        starts afresh."""
        if isinstance(epoch, bool) or not isinstance(epoch, (int, _np.integer)) or \
                not 0 <= epoch < 2**64:
            raise OptionsError(f"epoch is an int of 0 or more, got {epoch!r}")
        if self._resume is not None and self._resume[0] != int(epoch):
            self._resume = None
        if self._resume is None:
            self._yielded = 0
        self.epoch = int(epoch)
        self._epoch_given = True

    def _next_epoch(self):
        """(epoch, first batch) of an iteration starting now: a resumed epoch where
        load_state_dict left one mid-way; else the one set_epoch gave, else the one after the
        last iteration's (0 for the first), from its first batch."""
        if self._resume is not None:
            (epoch, first), self._resume = self._resume, None
            self.epoch, self._iterated, self._epoch_given = epoch, True, False
            return epoch, first
        if self._iterated and not self._epoch_given:
            self.epoch += 1
        self._iterated, self._epoch_given = True, False
        return self.epoch, 0

    def state_dict(self):
        """Where the loader stands, as torchdata's StatefulDataLoader gives it: the epoch and
        the batches it yielded of it, with what must match for a resumption (seed, split, batch
        size, samples an epoch). Small (no sample lists), picklable and JSON-able. A loader
        given it by `load_state_dict` yields, bit for bit, the batches this one yields next."""
        mid_epoch = 0 < self._yielded < len(self)
        if mid_epoch and self.errors == "skip" and self._drop_last:
            raise OptionsError("with errors='skip' and drop_last=True each batch is topped up "
                               "with later samples, so it depends on which samples failed "
                               "before it: a loader resumes from an epoch's start or end, not "
                               f"after batch {self._yielded} of {len(self)}")
        return {"version": 1, "epoch": self.epoch, "batches": self._yielded,
                "finished": self._finished, "iterated": self._iterated,
                "epoch_given": self._epoch_given, **self._identity()}

    def load_state_dict(self, state):
        """Resumes from `state_dict()`'s state: the next iteration yields what the saved
        loader's next iteration would have (mid-epoch: the rest of that epoch). The seed, the
        split, the batch size and the samples an epoch must be this loader's."""
        if not isinstance(state, dict) or state.get("version") != 1:
            raise OptionsError(f"not a gpuprep Loader state: {state!r:.80}")
        for key, value in self._identity().items():
            if state.get(key) != value:
                raise OptionsError(f"the state is of a loader with {key}={state.get(key)!r}, "
                                   f"and this loader has {key}={value!r}: a resumption replays "
                                   "the same order, so they must match")
        epoch, batches = state.get("epoch"), state.get("batches")
        if not isinstance(epoch, int) or not 0 <= epoch < 2**64 or \
                not isinstance(batches, int) or not 0 <= batches <= len(self):
            raise OptionsError(f"the state's epoch ({epoch!r}) and batches ({batches!r}) are not "
                               f"an epoch and 0 to {len(self)} batches of it")
        self.epoch, self._yielded = epoch, batches
        self._iterated, self._epoch_given = bool(state["iterated"]), bool(state["epoch_given"])
        self._finished = bool(state.get("finished"))
        # Mid-epoch (or after its last batch, its loop not yet ended: an empty rest) the epoch
        # resumes; an epoch whose loop ended resumes as the next one, as StatefulDataLoader's.
        self._resume = (epoch, batches) if batches > 0 and not self._finished else None

    def _identity(self):
        """What a state must share with the loader that takes it: what orders and draws the
        batches (every rank makes as many batches, so one rank's state serves them all)."""
        return {"seed": self._seed, "world_size": self._world_size,
                "batch_size": self._batch_size, "shuffle": self._shuffle,
                "drop_last": self._drop_last, "shuffle_buffer": self._shuffle_buffer,
                "resampled": self._resampled, "samples_per_epoch": self._loader.samples(),
                "source": self._source_digest, "transform": repr(self._transform)}

    def __len__(self):
        """Batches per epoch, the same on every rank (see the class's doc)."""
        return self._loader.batches()

    def batches(self):
        """This epoch's batches with everything gpuprep knows of them: dicts with images,
        labels, indices, params (each sample's, report.json's form), failed (the samples left
        out with errors="skip": (index, exception name, message)) and stats; with a
        batch_transform, images and labels mixed and its parameters in "mix" (CUDA batches then
        torch tensors)."""
        for batch in self._batches():
            if self.batch_transform is not None:
                images = batch["images"]
                if isinstance(images, _gpuprep.CudaBatch):
                    images = _torch().from_dlpack(images)
                batch["images"], batch["labels"] = self.batch_transform.apply(
                    batch["mix"], images, batch["labels"], self._layout)
            yield batch

    def _batches(self):
        """The next epoch's batches as `batches` yields them; its warnings point at the loop
        iterating `batches()` or the loader (two frames up)."""
        epoch, first = self._next_epoch()
        self._yielded, self._finished = first, False
        if first >= len(self):
            self._finished = True
            return
        failed_in_epoch, slow = 0, []
        for step, (images, labels, indices, params, failed, stats) in \
                enumerate(self._loader.epoch(epoch, first), start=first):
            if failed and self.errors == "raise":
                _, kind, message = failed[0]
                raise getattr(_errors, kind, GpuprepError)(message)
            failed_in_epoch += len(failed)
            stats["failed"] = len(failed)
            stats["epoch_failed"] = failed_in_epoch
            stats.pop("warning", None)
            if self.wait_warning is not None and stats["step"] > 0 \
                    and stats["data_wait_share"] > self.wait_warning:
                slow.append((stats["data_wait_share"], stats["step"]))
            self.stats = stats
            batch = {"images": images, "labels": labels, "indices": indices, "params": params,
                     "failed": failed, "stats": stats}
            if self.batch_transform is not None:
                batch["mix"] = self._mix_params(epoch, step, images)
            self._yielded = step + 1
            yield batch
        self._finished = True
        if failed_in_epoch:
            _warnings.warn(f"epoch {epoch}: {failed_in_epoch} sample(s) failed and were left "
                           "out (errors='skip'); each batch's 'failed' says which and why",
                           RuntimeWarning, stacklevel=3)
        if slow:
            worst = ", ".join(f"step {step} {share:.0%}" for share, step in sorted(slow)[::-1][:3])
            share = self.stats.get("epoch_data_wait_share", 0.0)
            _warnings.warn(f"epoch {epoch}: the loop waited for data {share:.0%} of the epoch; "
                           f"{len(slow)} step(s) waited more than {self.wait_warning:.0%} of "
                           f"the step (worst: {worst}): more prefetch, more decoding threads "
                           "or a larger batch may help", RuntimeWarning, stacklevel=3)

    def __iter__(self):
        torch = _torch()
        pin = self.pin_memory and torch is not None and torch.cuda.is_available()
        # device="cuda" where CUDA is there but not in place: copied up from pinned memory.
        up = self.device is not None and pin
        for batch in self._batches():
            self.last = batch
            images, labels = batch["images"], batch["labels"]
            if torch is None:
                yield self._mixed(batch, images, labels)
                continue
            labels = torch.from_dlpack(labels)
            if isinstance(images, _gpuprep.CudaBatch):
                # In place: torch's current stream waits for the batch's copies.
                images, labels = self._mixed(batch, torch.from_dlpack(images), labels)
                yield images, labels.to(images.device, non_blocking=True)
                continue
            images = torch.from_dlpack(images)
            if not up:  # mixed where they are handed over: in host memory
                images, labels = self._mixed(batch, images, labels)
            if pin:
                images = images if images.is_pinned() else _pinned(torch, images)
                labels = labels if up and self.batch_transform is not None else \
                    labels.pin_memory()  # mixed on the device into soft labels there
            if up:
                cuda = torch.device("cuda", self.device)
                images = images.to(cuda, non_blocking=True)
                images, labels = self._mixed(batch, images, labels)
                labels = labels.to(cuda, non_blocking=True)
            yield images, labels

    def _mix_params(self, epoch, step, images):
        """The batch transform's parameters for batch `step` of `epoch`, drawn from the seed,
        the epoch, the rank and the step (repeatable, different on each rank)."""
        seed, rank = self._mix_key
        bits = _np.random.MT19937(_np.random.SeedSequence([seed, epoch, rank, step]))
        height, width = _mix._spatial(images.shape, self._layout)
        return self.batch_transform.draw(_np.random.RandomState(bits), images.shape[0], height,
                                         width)

    def _mixed(self, batch, images, labels):
        """(images, labels) through the batch transform, if there is one (torch's arithmetic,
        on the images' device; labels as soft targets there)."""
        if self.batch_transform is None:
            return images, labels
        return self.batch_transform.apply(batch["mix"], images, labels, self._layout)


def _check_batch_transform(batch_transform, transform):
    """Refuses by name a batch_transform the Loader cannot run on `transform`'s batches."""
    if batch_transform is None:
        return
    if not isinstance(batch_transform, _mix.BatchTransform):
        raise OptionsError(f"batch_transform is gpuprep's MixUp, CutMix, RandomChoice or "
                           f"TimmMixup (from_torchvision translates torchvision's and timm's), "
                           f"got {batch_transform!r}")
    if batch_transform.mixes_values and transform.dtype == "uint8":
        raise OptionsError(f"{batch_transform!r} blends pixel values, and the transform gives "
                           "uint8 (torchvision's MixUp fails on uint8 too): end it with "
                           "to_tensor() or to('float32')")
    minmax, size = getattr(batch_transform, "cutmix_minmax", None), transform.output_size
    if minmax is not None and size is not None and \
            any(int(side * minmax[0]) >= int(side * minmax[1]) for side in size):
        raise OptionsError(f"timm's cutmix_minmax={minmax} leaves no box sides to draw from on "
                           f"{size[1]}x{size[0]} images (timm's randint would fail)")


def _cuda_device(torch, device):
    """The CUDA ordinal `device` names ("cuda", "cuda:N", a torch.device, N), or None; where
    torch has no CUDA, torch's own error (as `torch.zeros(1, device="cuda")` raises)."""
    if device is None or device == "cpu":
        return None
    text = str(device)
    if not isinstance(device, int) and not text.startswith("cuda"):
        raise OptionsError(f"device must be None, 'cpu' or a CUDA device, got {device!r}")
    if torch is None:
        raise OptionsError(f"device={device!r} needs torch with CUDA, and torch is not installed")
    if not torch.cuda.is_available():
        torch.cuda.init()  # raises torch's error: not compiled with CUDA, or no driver or GPU
        raise RuntimeError(f"device={device!r}: torch sees no CUDA device")
    if isinstance(device, int):
        return device
    if ":" in text:
        return int(text.split(":", 1)[1])
    return torch.cuda.current_device()


def _pinned(torch, tensor):
    """`tensor` copied into a page-locked one (torch's caching host allocator keeps the blocks),
    on all cores: `Tensor.pin_memory()` copies on one thread, several times slower."""
    pinned = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
    _gpuprep.copy_into(pinned.numpy().reshape(-1).view("uint8"),
                       tensor.numpy().reshape(-1).view("uint8"))
    return pinned
