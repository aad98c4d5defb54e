from os import PathLike
from typing import Any, Iterator, Literal, Optional, Sequence, Union

import numpy as np

# bytes-like (bytes, bytearray, memoryview), a path, a uint8 (H, W, 3) or (H, W) array, or a PIL
# image.
Image = Union[bytes, bytearray, memoryview, str, PathLike, np.ndarray, Any]

__version__: str

class GpuprepError(Exception): ...
class DecodeError(GpuprepError): ...
class TruncatedError(DecodeError): ...
class CorruptError(DecodeError): ...
class UnsupportedError(DecodeError): ...
class TooLargeError(DecodeError): ...
class OptionsError(GpuprepError, ValueError): ...
class LabelError(GpuprepError, ValueError): ...
class GpuError(GpuprepError): ...
class HandoffError(GpuError): ...
class ReadError(GpuprepError, OSError): ...

class Transform:
    """What Pillow + torchvision do between the decoded image and the tensor: at most one of each
    operation (a method called again replaces it), applied in torchvision's usual order whatever
    order the methods were called in (resize or random resized crop, pad, centre or random crop,
    flips, then the steps that keep the image's size: the rotation, RandomAffine or policy,
    RandomPerspective, ColorJitter, RandomGrayscale, the single-operation transforms in the order
    their methods were first called, GaussianBlur; then ToTensor, Normalize, RandomErasing), or
    with the steps that keep the size in the order given to `order(...)`; the repr lists them in
    the order they run."""
    def __init__(self) -> None: ...
    @staticmethod
    def imagenet_eval() -> Transform: ...
    @staticmethod
    def imagenet_train() -> Transform: ...
    @staticmethod
    def timm_eval(size: int = 224, crop_pct: float = 0.875) -> Transform: ...
    @staticmethod
    def timm_train() -> Transform: ...
    def resize(self, size: Union[int, tuple[int, int]],
               max_size: Optional[int] = None) -> Transform: ...
    def center_crop(self, size: Union[int, tuple[int, int]]) -> Transform: ...
    def pad(self, padding: Union[int, Sequence[int]], fill: Union[None, int, Sequence[int]] = None,
            padding_mode: str = "constant") -> Transform: ...
    def random_crop(self, size: Union[int, tuple[int, int]],
                    padding: Union[None, int, Sequence[int]] = None, pad_if_needed: bool = False,
                    fill: Union[None, int, Sequence[int]] = None,
                    padding_mode: str = "constant") -> Transform: ...
    def random_resize(self, min_size: int, max_size: int) -> Transform: ...
    def random_shortest_size(self, min_size: Union[int, Sequence[int]],
                             max_size: Optional[int] = None) -> Transform: ...
    def random_resized_crop(self, size: Union[int, tuple[int, int]],
                            scale: tuple[float, float] = (0.08, 1.0),
                            ratio: tuple[float, float] = (0.75, 1.3333333333333333),
                            interpolation: Optional[str] = None) -> Transform: ...
    def interpolation(self, name: str) -> Transform: ...
    def horizontal_flip(self, p: float = 0.5) -> Transform: ...
    def vertical_flip(self, p: float = 0.5) -> Transform: ...
    def color_jitter(self, brightness: Union[None, float, tuple[float, float]] = None,
                     contrast: Union[None, float, tuple[float, float]] = None,
                     saturation: Union[None, float, tuple[float, float]] = None,
                     hue: Union[None, float, tuple[float, float]] = None,
                     p: float = 1.0) -> Transform: ...
    def random_rotation(self, degrees: Union[float, tuple[float, float]],
                        interpolation: str = "nearest",
                        fill: Union[None, int, Sequence[int]] = None,
                        center: Optional[tuple[float, float]] = None,
                        p: float = 1.0) -> Transform: ...
    def random_affine(self, degrees: Union[float, tuple[float, float]],
                      translate: Optional[tuple[float, float]] = None,
                      scale: Optional[tuple[float, float]] = None,
                      shear: Union[None, float, Sequence[float]] = None,
                      interpolation: str = "nearest",
                      fill: Union[None, int, Sequence[int]] = None,
                      center: Optional[tuple[float, float]] = None,
                      v2: bool = False, p: float = 1.0) -> Transform: ...
    def random_perspective(self, distortion_scale: float = 0.5, p: float = 0.5,
                           interpolation: str = "bilinear",
                           fill: Union[None, int, Sequence[int]] = None) -> Transform: ...
    def trivial_augment_wide(self, num_magnitude_bins: int = 31, interpolation: str = "nearest",
                             fill: Union[None, int, Sequence[int]] = None,
                             v2: bool = False) -> Transform: ...
    def rand_augment(self, num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31,
                     interpolation: str = "nearest",
                     fill: Union[None, int, Sequence[int]] = None,
                     v2: bool = False) -> Transform: ...
    def auto_augment(self, policy: str = "imagenet", interpolation: str = "nearest",
                     fill: Union[None, int, Sequence[int]] = None,
                     v2: bool = False) -> Transform: ...
    def timm_rand_augment(self, config: str = "rand-m9-mstd0.5-inc1",
                          fill: Union[None, int, Sequence[int]] = None,
                          interpolation: Literal["random", "nearest", "bilinear",
                                                 "bicubic"] = "random",
                          translate_pct: float = 0.45) -> Transform: ...
    def timm_auto_augment(self, config: str = "v0",
                          fill: Union[None, int, Sequence[int]] = None,
                          interpolation: Literal["random", "nearest", "bilinear",
                                                 "bicubic"] = "random",
                          translate_pct: float = 0.45) -> Transform: ...
    def timm_aug_mix(self, config: str = "augmix-m3-w3",
                     fill: Union[None, int, Sequence[int]] = None,
                     interpolation: Literal["random", "nearest", "bilinear", "bicubic"] = "random",
                     translate_pct: float = 0.45) -> Transform: ...
    def grayscale(self, p: float = 0.1) -> Transform: ...
    # The single-operation transforms, made at import from the crate's table of them.
    def random_invert(self, p: float = 0.5) -> Transform: ...
    def random_posterize(self, bits: int, p: float = 0.5) -> Transform: ...
    def random_solarize(self, threshold: float, p: float = 0.5) -> Transform: ...
    def random_adjust_sharpness(self, sharpness_factor: float, p: float = 0.5) -> Transform: ...
    def random_autocontrast(self, p: float = 0.5) -> Transform: ...
    def random_equalize(self, p: float = 0.5) -> Transform: ...
    def gaussian_blur(self, kernel_size: Union[int, tuple[int, int]],
                      sigma: Union[None, float, tuple[float, float]] = None,
                      p: float = 1.0, v2: bool = False) -> Transform: ...
    def random_erasing(self, p: float = 0.5, scale: tuple[float, float] = (0.02, 0.33),
                       ratio: tuple[float, float] = (0.3, 3.3),
                       value: Union[None, float, Sequence[float],
                                    Literal["random", "random_per_channel"]] = None,
                       count: Union[None, int, tuple[int, int]] = None) -> Transform: ...
    def normalize(self, mean: Sequence[float], std: Sequence[float]) -> Transform: ...
    def to_tensor(self, scale: Literal["divide", "multiply"] = "divide") -> Transform: ...
    def to(self, dtype: str, layout: Optional[Literal["chw", "hwc"]] = None) -> Transform: ...
    def order(self, *entries: Union[str, dict[str, Any]]) -> Transform:
        """The order of the steps that keep the image's size: method names, and
        {"random_order": [names]} or {"random_choice": [names], "p": [weights]} groups."""
        ...
    def with_seed(self, seed: int) -> Transform: ...
    @property
    def is_random(self) -> bool: ...
    @property
    def output_size(self) -> Optional[tuple[int, int]]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def layout(self) -> Literal["chw", "hwc"]: ...
    def validate(self) -> None:
        """Raises OptionsError naming what does not fit (every call using it checks so too)."""
        ...
    def __eq__(self, other: object) -> bool: ...

class Pipeline:
    """Decodes and transforms images on a backend ("auto", "gpu" or "cpu")."""
    def __init__(self, backend: str = "auto", adapter: Optional[str] = None) -> None: ...
    @property
    def backend(self) -> str: ...
    @property
    def reason(self) -> Optional[str]:
        """Why backend="auto" chose the CPU, else None."""
        ...
    def preprocess(self, images: Sequence[Image], transform: Transform,
                   indices: Optional[Sequence[int]] = None,
                   params: Optional[Sequence[dict[str, Any]]] = None,
                   errors: Literal["raise", "skip"] = "raise") -> tuple[np.ndarray, list[dict[str, Any]]]: ...

class Loader:
    """Batches of a dataset through a Transform (see the module's docstring)."""
    epoch: int
    stats: dict[str, Any]
    classes: list[str]
    threads: int
    def __init__(self, source: Union[str, PathLike, Sequence[Union[str, PathLike]]],
                 transform: Transform, batch_size: int, shuffle: bool = False, seed: int = 0,
                 rank: int = 0, world_size: int = 1, drop_last: bool = False,
                 threads: Optional[int] = None, backend: str = "auto", prefetch: int = 2,
                 adapter: Optional[str] = None, shuffle_buffer: int = 1000,
                 wait_warning: Optional[float] = 0.1, pin_memory: Optional[bool] = None,
                 device: Union[None, str, int, Any] = None,
                 errors: Literal["raise", "skip"] = "raise",
                 batch_transform: Optional[BatchTransform] = None, retries: int = 10,
                 timeout: float = 30.0, resampled: bool = False) -> None: ...
    batch_transform: Optional[BatchTransform]
    @property
    def memory(self) -> str: ...
    @property
    def reason(self) -> Optional[str]: ...
    @property
    def handed_over(self) -> str: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...
    def set_epoch(self, epoch: int) -> None: ...
    def __len__(self) -> int:
        """Batches per epoch, the same on every rank."""
        ...
    def batches(self) -> Iterator[dict[str, Any]]: ...
    def __iter__(self) -> Iterator[tuple[Any, Any]]: ...

def write_shard_index(shards: Union[str, PathLike, Sequence[Union[str, PathLike]]],
                      path: Union[str, PathLike], *, retries: int = 10,
                      timeout: float = 30.0) -> list[tuple[str, int]]:
    """Counts WebDataset shards' samples and writes their index (webdataset's wids JSON)."""
    ...

def write_shards(source: Union[str, PathLike, Sequence[Union[str, PathLike]]],
                 out: Union[str, PathLike], *, resize: int, filter: str = "bilinear",
                 draft: bool = False, quality: int = 75, subsampling: Optional[str] = None,
                 optimize: bool = False, shard_samples: int = 100_000,
                 shard_size: int = 3_000_000_000,
                 labels: Union[str, PathLike, None] = None, recursive: bool = False,
                 index: Union[str, PathLike, None] = None,
                 backend: str = "auto",
                 adapter: Optional[str] = None) -> dict[str, Any]:
    """Resizes a dataset and writes it as WebDataset shards of Pillow-identical JPEGs."""
    ...

class BatchTransform:
    """A batch transform for Loader(batch_transform=...): parameters drawn per batch, applied
    with torch's (or the same-rounding numpy) arithmetic; labels become float32 soft targets."""
    mixes_values: bool
    even_batches: bool
    def draw(self, rng: np.random.RandomState, batch_size: int, height: int,
             width: int) -> dict[str, Any]: ...
    def apply(self, params: dict[str, Any], images: Any, labels: Any,
              layout: Literal["chw", "hwc"] = "chw") -> tuple[Any, Any]: ...
    def __call__(self, images: Any, labels: Any, rng: Optional[np.random.RandomState] = None,
                 layout: Literal["chw", "hwc"] = "chw") -> tuple[Any, Any, dict[str, Any]]: ...

class MixUp(BatchTransform):
    """torchvision.transforms.v2.MixUp (its "mix": {"kind": "mixup", "lam"})."""
    alpha: float
    num_classes: int
    def __init__(self, *, alpha: float = 1.0, num_classes: int) -> None: ...

class CutMix(BatchTransform):
    """torchvision.transforms.v2.CutMix (its "mix": {"kind": "cutmix", "lam", "box": [x1, y1,
    x2, y2], "lam_adjusted"})."""
    alpha: float
    num_classes: int
    def __init__(self, *, alpha: float = 1.0, num_classes: int) -> None: ...

class RandomChoice(BatchTransform):
    """torchvision.transforms.v2.RandomChoice of MixUp and CutMix (its "mix": the chosen one's,
    with "choice", its index)."""
    transforms: list[Union[MixUp, CutMix]]
    p: list[float]
    num_classes: int
    def __init__(self, transforms: Sequence[Union[MixUp, CutMix]],
                 p: Optional[Sequence[float]] = None) -> None: ...

class TimmMixup(BatchTransform):
    """timm.data.Mixup (its "mix": {"kind": "timm", "mode", "lam", "cutmix", "box": [top, bottom,
    left, right]}, per batch, or lists per sample or pair). `mixup_enabled = False` turns mixing
    off, as timm's train loop does at mixup_off_epoch."""
    mixup_alpha: float
    cutmix_alpha: float
    cutmix_minmax: Optional[tuple[float, float]]
    mix_prob: float
    switch_prob: float
    mode: str
    correct_lam: bool
    label_smoothing: float
    num_classes: int
    mixup_enabled: bool
    def __init__(self, mixup_alpha: float = 1.0, cutmix_alpha: float = 0.0,
                 cutmix_minmax: Optional[tuple[float, float]] = None, prob: float = 1.0,
                 switch_prob: float = 0.5, mode: Literal["batch", "pair", "elem"] = "batch",
                 correct_lam: bool = True, label_smoothing: float = 0.1,
                 num_classes: int = 1000, mixup_enabled: bool = True) -> None: ...

def from_torchvision(compose: Any) -> Any:
    """The Transform that computes what a torchvision Compose of supported transforms computes;
    for a batch transform (v2 MixUp, CutMix, a RandomChoice of them, timm's Mixup) gpuprep's
    BatchTransform, for Loader(batch_transform=...)."""
    ...

def torchvision_params(compose: Any, size: tuple[int, int]) -> dict[str, Any]:
    """The random parameters a torchvision Compose draws for an image of (width, height), with
    torchvision's get_params and the torch RNG."""
    ...
