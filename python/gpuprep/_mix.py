"""Batch transforms for the Loader: MixUp and CutMix as torchvision.transforms.v2 computes them
(and RandomChoice between them), and timm's Mixup.

Each draws its parameters once per batch (the loader records them in the batch's "mix") and
mixes with the arithmetic of the library it mirrors: torch's own operations on the batch's
tensor, on its device, or, where torch is absent, numpy's with the same roundings (a product
with a scalar is computed in float32, torch's arithmetic type for float16 too, and stored in the
tensor's type). Labels become soft targets, float32 of shape (batch, num_classes). Given the
recorded parameters, `apply` is exact: the same bits as torchvision's or timm's call.
"""
import math
import numbers
import operator

import numpy as np

from ._errors import LabelError, OptionsError

_FLOAT32 = np.float32


class BatchTransform:
    """What the Loader's `batch_transform` takes: `draw` picks a batch's parameters (a dict of
    plain numbers, JSON's form), `apply` mixes a batch with them."""

    mixes_values = True  # whether it multiplies pixel values (which needs a float batch)
    even_batches = False  # whether it refuses a batch of an odd number of samples

    def draw(self, rng, batch_size, height, width):  # pragma: no cover (abstract)
        raise NotImplementedError

    def apply(self, params, images, labels, layout="chw"):  # pragma: no cover (abstract)
        raise NotImplementedError

    last_params = None  # the parameters of the last call

    def __call__(self, images, labels, rng=None, layout="chw"):
        """(mixed images, soft labels) of one batch, as torchvision's and timm's calls return
        them, with parameters drawn from `rng` (a numpy RandomState; a fresh unseeded one by
        default) and kept in `last_params`."""
        rng = np.random.RandomState() if rng is None else rng
        height, width = _spatial(images.shape, layout)
        self.last_params = self.draw(rng, len(images), height, width)
        return self.apply(self.last_params, images, labels, layout)


def _number(name, what, value, low=0.0, high=math.inf, low_open=False):
    """`value` as a float (numpy's numbers too), refused by name outside [low, high] (or
    (low, high] with low_open) or when it is no number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
            not (low < value if low_open else low <= value) or not value <= high:
        bounds = f"{'above' if low_open else 'at least'} {low}" + \
            (f" and at most {high}" if high != math.inf else "")
        raise OptionsError(f"{name}: {what} is a number {bounds}, got {value!r}")
    return float(value)


def _checked_alpha(name, alpha):
    return _number(name, "alpha", alpha, low_open=True)


def _checked_classes(name, num_classes):
    try:
        count = operator.index(num_classes)
    except TypeError:
        count = 0
    if isinstance(num_classes, bool) or count < 1:
        raise OptionsError(f"{name}: num_classes is a positive int (the labels are class "
                           f"indices), got {num_classes!r}")
    return count


def _checked_batch(images, mixes_values):
    """Refuses by name a batch the libraries would not mix as gpuprep does: MixUp multiplies,
    which torch refuses in place on an integer tensor (gpuprep computes float32 and float16,
    the Loader's float types), and copying boxes takes any of the Loader's types."""
    dtype = str(images.dtype).replace("torch.", "")
    allowed = ("float32", "float16") if mixes_values else ("float32", "float16", "uint8")
    if dtype not in allowed:
        raise OptionsError(f"a batch of {dtype} is not mixed by gpuprep "
                           f"({' or '.join(allowed)}: the Loader's types" +
                           ("; torchvision's MixUp refuses integer batches)" if mixes_values
                            else ")"))


class _TorchvisionMix(BatchTransform):
    """What torchvision's MixUp and CutMix share: their arguments (torchvision's
    _BaseMixUpCutMix), with num_classes required, as class-index labels need it."""

    def __init__(self, *, alpha=1.0, num_classes):
        name = type(self).__name__
        self.alpha = _checked_alpha(name, alpha)
        self.num_classes = _checked_classes(name, num_classes)

    def __repr__(self):
        return f"{type(self).__name__}(alpha={self.alpha}, num_classes={self.num_classes})"


class MixUp(_TorchvisionMix):
    """torchvision.transforms.v2.MixUp: each image blended with the one before it in the batch
    (the first with the last), lam ~ Beta(alpha, alpha) per batch."""

    def draw(self, rng, batch_size, height, width):
        return {"kind": "mixup", "lam": float(rng.beta(self.alpha, self.alpha))}

    def apply(self, params, images, labels, layout="chw"):
        _checked_batch(images, True)
        ops = _Ops(images)
        lam = params["lam"]
        mixed = ops.add(ops.scaled(ops.rolled(images), 1.0 - lam), ops.scaled(images, lam))
        return mixed, _torchvision_targets(ops, labels, self.num_classes, lam)


class CutMix(_TorchvisionMix):
    """torchvision.transforms.v2.CutMix: a box of each image replaced by the same box of the one
    before it in the batch; the box's side ~ sqrt(1 - lam), lam ~ Beta(alpha, alpha), its centre
    uniform; the labels mixed by the share of the image the box leaves."""

    mixes_values = False

    def draw(self, rng, batch_size, height, width):
        lam = float(rng.beta(self.alpha, self.alpha))
        centre_x, centre_y = int(rng.randint(width)), int(rng.randint(height))
        # torchvision's make_params from here on, in its arithmetic.
        r = 0.5 * math.sqrt(1.0 - lam)
        half_w, half_h = int(r * width), int(r * height)
        x1, y1 = max(centre_x - half_w, 0), max(centre_y - half_h, 0)
        x2, y2 = min(centre_x + half_w, width), min(centre_y + half_h, height)
        lam_adjusted = float(1.0 - (x2 - x1) * (y2 - y1) / (width * height))
        return {"kind": "cutmix", "lam": lam, "box": [x1, y1, x2, y2],
                "lam_adjusted": lam_adjusted}

    def apply(self, params, images, labels, layout="chw"):
        _checked_batch(images, False)
        ops = _Ops(images)
        x1, y1, x2, y2 = params["box"]
        mixed = ops.copy(images)
        box = _box(layout, y1, y2, x1, x2)
        mixed[box] = ops.rolled(images)[box]
        return mixed, _torchvision_targets(ops, labels, self.num_classes, params["lam_adjusted"])


class RandomChoice(BatchTransform):
    """torchvision.transforms.v2.RandomChoice of MixUp and CutMix: one of them per batch, with
    probabilities p (equal by default)."""

    def __init__(self, transforms, p=None):
        transforms = list(transforms)
        if not transforms or not all(isinstance(t, (MixUp, CutMix)) for t in transforms):
            raise OptionsError(f"RandomChoice takes gpuprep's MixUp and CutMix, got {transforms!r}")
        p = [1.0] * len(transforms) if p is None else list(p)
        if len(p) != len(transforms) or not all(isinstance(q, numbers.Real) and
                                                not isinstance(q, bool) and 0 <= q < math.inf
                                                for q in p) or sum(p) <= 0:
            raise OptionsError(f"RandomChoice: p holds a non-negative weight per transform, "
                               f"not all zero, got {p!r}")
        p = [float(q) for q in p]
        if len({t.num_classes for t in transforms}) > 1:
            raise OptionsError(f"RandomChoice of {transforms!r}: one num_classes for all, so "
                               "that every batch's soft labels have one shape")
        self.transforms, self.num_classes = transforms, transforms[0].num_classes
        self.p = [q / sum(p) for q in p]
        self.mixes_values = any(t.mixes_values for t in transforms)

    def __repr__(self):
        return f"RandomChoice({self.transforms!r}, p={self.p})"

    def draw(self, rng, batch_size, height, width):
        u, choice = rng.random_sample(), len(self.p) - 1
        for i, share in enumerate(np.cumsum(self.p)[:-1]):
            if u < share:
                choice = i
                break
        params = self.transforms[choice].draw(rng, batch_size, height, width)
        return {**params, "choice": choice}

    def apply(self, params, images, labels, layout="chw"):
        return self.transforms[params["choice"]].apply(params, images, labels, layout)


class TimmMixup(BatchTransform):
    """timm.data.Mixup (its arguments, but multi_label): MixUp or CutMix per batch, per pair of
    samples or per sample (`mode`), pairing each sample with its mirror in the batch, with
    timm's draws (its probabilities, CutMix's box and min-max box, lam's correction) and its
    label smoothing. Batches must hold an even number of samples, as timm asserts."""

    even_batches = True  # timm's labels take the batch's type: a float batch only (mixes_values)

    def __init__(self, mixup_alpha=1.0, cutmix_alpha=0.0, cutmix_minmax=None, prob=1.0,
                 switch_prob=0.5, mode="batch", correct_lam=True, label_smoothing=0.1,
                 num_classes=1000, mixup_enabled=True):
        mixup_alpha = _number("TimmMixup", "mixup_alpha", mixup_alpha, high=1e6)
        cutmix_alpha = _number("TimmMixup", "cutmix_alpha", cutmix_alpha, high=1e6)
        if cutmix_minmax is not None:
            pair = list(cutmix_minmax) if isinstance(cutmix_minmax, (list, tuple)) else []
            if len(pair) != 2:
                raise OptionsError(f"TimmMixup: cutmix_minmax is (min, max), got "
                                   f"{cutmix_minmax!r}")
            lo, hi = (_number("TimmMixup", "cutmix_minmax", v, high=1.0) for v in pair)
            if not lo < hi:
                raise OptionsError(f"TimmMixup: cutmix_minmax is (min, max) with min < max, got "
                                   f"{cutmix_minmax!r}")
            cutmix_minmax, cutmix_alpha = (lo, hi), 1.0  # timm forces alpha 1 with min-max
        if mixup_alpha <= 0 and cutmix_alpha <= 0:
            raise OptionsError("TimmMixup: mixup_alpha or cutmix_alpha (or cutmix_minmax) must "
                               "be positive")
        prob, switch_prob, label_smoothing = (
            _number("TimmMixup", name, value, high=1.0) for name, value in
            (("prob", prob), ("switch_prob", switch_prob), ("label_smoothing", label_smoothing)))
        if mode not in ("batch", "pair", "elem"):
            raise OptionsError(f'TimmMixup: mode is "batch", "pair" or "elem", got {mode!r} '
                               "(timm's 'half' mixes half a batch, which gpuprep does not)")
        self.mixup_alpha, self.cutmix_alpha = float(mixup_alpha), float(cutmix_alpha)
        self.cutmix_minmax, self.mix_prob, self.switch_prob = cutmix_minmax, prob, switch_prob
        self.mode, self.correct_lam, self.label_smoothing = mode, correct_lam, label_smoothing
        self.num_classes = _checked_classes("TimmMixup", num_classes)
        self._enabled, self._timm = bool(mixup_enabled), None

    @property
    def mixup_enabled(self):
        """Whether batches are mixed: timm's train loop sets it False at mixup_off_epoch (on
        timm's Mixup this was translated from, too, which it follows)."""
        return self._timm.mixup_enabled if self._timm is not None else self._enabled

    @mixup_enabled.setter
    def mixup_enabled(self, value):
        self._enabled = bool(value)
        if self._timm is not None:
            self._timm.mixup_enabled = self._enabled
    def __repr__(self):
        return (f"TimmMixup(mixup_alpha={self.mixup_alpha}, cutmix_alpha={self.cutmix_alpha}, "
                f"cutmix_minmax={self.cutmix_minmax}, prob={self.mix_prob}, "
                f"switch_prob={self.switch_prob}, mode={self.mode!r}, "
                f"correct_lam={self.correct_lam}, label_smoothing={self.label_smoothing}, "
                f"num_classes={self.num_classes})")

    def draw(self, rng, batch_size, height, width):
        """timm's draws, in its order, from `rng` (np.random itself draws what timm's call
        draws)."""
        if batch_size % 2:
            raise OptionsError(f"timm's Mixup mixes batches of an even number of samples, and "
                               f"this one holds {batch_size} (drop_last=True leaves out a "
                               "short last batch)")
        if self.mode == "batch":
            lam, cutmix = self._per_batch(rng)
            box = None
            if lam != 1.0 and cutmix:
                box, lam = self._box(rng, lam, height, width)
            return {"kind": "timm", "mode": "batch", "lam": float(lam), "cutmix": bool(cutmix),
                    "box": box}
        lams, cutmix = self._per_sample(rng, batch_size if self.mode == "elem" else
                                        batch_size // 2)
        boxes = [None] * len(lams)
        for i, lam in enumerate(lams):
            if lam != 1.0 and cutmix[i]:
                boxes[i], lams[i] = self._box(rng, lam, height, width)
        return {"kind": "timm", "mode": self.mode, "lam": [float(v) for v in lams],
                "cutmix": [bool(c) for c in cutmix], "box": boxes}

    def _alphas(self, rng, size=None):
        """(whether CutMix, lam) drawn as timm draws them, for one or `size` samples."""
        mixup, cutmix = self.mixup_alpha, self.cutmix_alpha
        if mixup > 0 and cutmix > 0:
            use_cutmix = rng.rand(*(() if size is None else (size,))) < self.switch_prob
            if size is None:
                return use_cutmix, (rng.beta(cutmix, cutmix) if use_cutmix else
                                    rng.beta(mixup, mixup))
            return use_cutmix, np.where(use_cutmix, rng.beta(cutmix, cutmix, size=size),
                                        rng.beta(mixup, mixup, size=size))
        alpha = mixup if mixup > 0 else cutmix
        use_cutmix = mixup <= 0 if size is None else np.full(size, mixup <= 0)
        return use_cutmix, rng.beta(alpha, alpha, size=size)

    def _per_batch(self, rng):
        if not (self.mixup_enabled and rng.rand() < self.mix_prob):
            return 1.0, False
        use_cutmix, lam = self._alphas(rng)
        return float(lam), bool(use_cutmix)

    def _per_sample(self, rng, count):
        lam = np.ones(count, dtype=np.float32)
        use_cutmix = np.zeros(count, dtype=bool)
        if self.mixup_enabled:
            use_cutmix, mixed = self._alphas(rng, count)
            lam = np.where(rng.rand(count) < self.mix_prob, mixed.astype(np.float32), lam)
        return lam, use_cutmix

    def _box(self, rng, lam, height, width):
        """([top, bottom, left, right], lam): timm's cutmix_bbox_and_lam in its arithmetic
        (lam a Python float per batch, a float32 per sample, as timm's are)."""
        if self.cutmix_minmax is not None:
            lo, hi = self.cutmix_minmax
            cut_h = rng.randint(int(height * lo), int(height * hi))
            cut_w = rng.randint(int(width * lo), int(width * hi))
            top, left = rng.randint(0, height - cut_h + 1), rng.randint(0, width - cut_w + 1)
            bottom, right = top + cut_h, left + cut_w
        else:
            ratio = np.sqrt(1 - lam)
            cut_h, cut_w = int(height * ratio), int(width * ratio)
            centre_y, centre_x = rng.randint(0, height), rng.randint(0, width)
            top = np.clip(centre_y - cut_h // 2, 0, height)
            bottom = np.clip(centre_y + (cut_h + 1) // 2, 0, height)
            left = np.clip(centre_x - cut_w // 2, 0, width)
            right = np.clip(centre_x + (cut_w + 1) // 2, 0, width)
        if self.correct_lam or self.cutmix_minmax is not None:
            lam = 1.0 - (bottom - top) * (right - left) / float(height * width)
        return [int(top), int(bottom), int(left), int(right)], lam

    def apply(self, params, images, labels, layout="chw"):
        _checked_batch(images, True)
        ops = _Ops(images)
        if len(images) % 2:
            raise OptionsError(f"timm's Mixup mixes batches of an even number of samples, and "
                               f"this one holds {len(images)}")
        if params["mode"] == "batch":
            lam = float(params["lam"])
            mixed = ops.copy(images)
            if lam != 1.0 and params["cutmix"]:
                box = _box(layout, *params["box"])
                mixed[box] = ops.flipped(images)[box]
            elif lam != 1.0:
                mixed = ops.add(ops.scaled(images, lam), ops.scaled(ops.flipped(images), 1.0 - lam))
            weights = lam
        else:
            mixed, weights = self._mix_samples(ops, params, images, layout)
        return mixed, self._targets(ops, labels, weights)

    def _mix_samples(self, ops, params, images, layout):
        """timm's _mix_elem and _mix_pair: sample i mixed with sample n-1-i (and, per pair, that
        one with i), each by its own lam; the per-sample weights of the labels."""
        n, mixed = len(images), ops.copy(images)
        lams = np.asarray(params["lam"], dtype=np.float32)
        for i, (lam, box) in enumerate(zip(lams, params["box"])):
            if box is None and (lam == 1.0 or params["cutmix"][i]):
                continue  # not mixed
            j = n - i - 1
            for a, b in [(i, j)] if params["mode"] == "elem" else [(i, j), (j, i)]:
                if box is not None:
                    inside = _box(layout, *box)[1:]
                    mixed[a][inside] = images[b][inside]
                else:
                    mixed[a] = ops.add(ops.scaled(images[a], lam),
                                       ops.scaled(images[b], 1 - lam))
        if params["mode"] == "pair":
            lams = np.concatenate((lams, lams[::-1]))
        return mixed, ops.column(lams)

    def _targets(self, ops, labels, lam):
        """timm's mixup_target: smoothed one-hot labels (in torch's default type, as timm's
        torch.full makes them), mixed with the batch's mirror by lam (a float, or a column of
        per-sample weights in the batch's type)."""
        off = self.label_smoothing / self.num_classes
        on = 1.0 - self.label_smoothing + off
        first = ops.one_hot(labels, self.num_classes, on, off, default_type=True)
        second = ops.flipped(first)
        if isinstance(lam, float):
            return ops.add(ops.scaled(first, lam), ops.scaled(second, 1.0 - lam))
        return ops.add(ops.times(first, lam), ops.times(second, ops.one_minus(lam)))


def _torchvision_targets(ops, labels, num_classes, lam):
    """torchvision's _mixup_label: one-hot float32 labels mixed with the batch's roll by lam."""
    one_hot = ops.one_hot(labels, num_classes, 1.0, 0.0)
    return ops.add(ops.scaled(ops.rolled(one_hot), 1.0 - lam), ops.scaled(one_hot, lam))


def _spatial(shape, layout):
    """(height, width) of a batch of `shape` in `layout`."""
    return (shape[2], shape[3]) if layout == "chw" else (shape[1], shape[2])


def _box(layout, top, bottom, left, right):
    """The index of a box in every image of a batch in `layout`."""
    rows, columns = slice(top, bottom), slice(left, right)
    if layout == "chw":
        return (slice(None), slice(None), rows, columns)
    return (slice(None), rows, columns, slice(None))


class _Ops:
    """The operations mixing takes, on torch tensors when the batch is one, else on numpy
    arrays rounded as torch's kernels round: a tensor times a scalar is float32(x) *
    float32(scalar), stored in the tensor's type; a sum float32(a) + float32(b), stored so."""

    def __init__(self, images):
        self.torch = not isinstance(images, np.ndarray)
        self.device = None if not self.torch else images.device
        self.dtype = images.dtype

    def copy(self, x):
        return x.clone() if self.torch else x.copy()

    def rolled(self, x):
        return x.roll(1, 0) if self.torch else np.roll(x, 1, 0)

    def flipped(self, x):
        return x.flip(0) if self.torch else x[::-1].copy()

    def scaled(self, x, scalar):
        if self.torch:
            return x.mul(float(scalar))
        return (x.astype(_FLOAT32, copy=False) * _FLOAT32(scalar)).astype(x.dtype, copy=False)

    def add(self, a, b):
        if self.torch:
            return a.add_(b)
        return (a.astype(_FLOAT32, copy=False) + b.astype(_FLOAT32, copy=False)).astype(
            a.dtype, copy=False)

    def times(self, x, column):
        """x (float32) times a column of the batch's type, promoted to float32 as torch does."""
        if self.torch:
            return x * column
        return x * column.astype(_FLOAT32)

    def column(self, values):
        """A float32 array as a column of the batch's type, as timm's torch.tensor(...,
        dtype=x.dtype).unsqueeze(1) makes it."""
        if self.torch:
            import torch
            return torch.tensor(values, device=self.device, dtype=self.dtype).unsqueeze(1)
        return values.astype(self.dtype)[:, None]

    def one_minus(self, column):
        """1 - column, in the column's type (torch's `1. - tensor`)."""
        if self.torch:
            return 1.0 - column
        return (np.float32(1.0) - column.astype(_FLOAT32)).astype(column.dtype)

    def one_hot(self, labels, num_classes, on, off, default_type=False):
        """float32 (batch, num_classes): `on` at each label, `off` elsewhere (with torch and
        default_type, torch's default float type, as timm's torch.full makes it)."""
        values = labels.tolist() if self.torch or isinstance(labels, np.ndarray) else list(labels)
        for i, label in enumerate(values):
            if not 0 <= label < num_classes:
                raise LabelError(
                    f"mixing needs each sample's class, 0 to {num_classes - 1}: sample {i} of "
                    f"the batch has label {label}" + (" (no label: its source gives none)"
                                                      if label == -1 else ""))
        if self.torch:
            import torch
            dtype = None if default_type else torch.float32
            targets = torch.full((len(values), num_classes), off, device=self.device, dtype=dtype)
            index = torch.as_tensor(values, device=self.device).view(-1, 1)
            return targets.scatter_(1, index, on)
        targets = np.full((len(values), num_classes), off, dtype=_FLOAT32)
        targets[np.arange(len(values)), values] = _FLOAT32(on)
        return targets


def translated(transform):
    """gpuprep's batch transform for torchvision's v2 MixUp, CutMix or RandomChoice of them, or
    timm's Mixup; None for anything else (a per-image transform)."""
    kind, module = type(transform).__name__, type(transform).__module__ or ""
    if module.startswith("torchvision.") and kind in ("MixUp", "CutMix"):
        if transform.num_classes is None:
            raise OptionsError(f"{kind}(num_classes=None) takes one-hot labels; the loader's "
                               "are class indices: give num_classes")
        return (MixUp if kind == "MixUp" else CutMix)(alpha=transform.alpha,
                                                      num_classes=transform.num_classes)
    if module.startswith("torchvision.") and kind == "RandomChoice":
        inner = [type(t).__name__ for t in transform.transforms]
        if not inner or not set(inner) <= {"MixUp", "CutMix"}:
            return None  # a RandomChoice of per-image transforms: from_torchvision's to refuse
        mixes = [translated(t) for t in transform.transforms]
        if None in mixes:
            raise OptionsError(f"RandomChoice of {inner}: gpuprep translates torchvision's v2 "
                               "MixUp and CutMix")
        return RandomChoice(mixes, transform.p)
    if module.startswith("timm.") and kind == "Mixup":
        if getattr(transform, "multi_label", False):
            raise OptionsError("timm's Mixup(multi_label=True) is not supported by gpuprep: the "
                               "loader's labels are class indices")
        mix = TimmMixup(transform.mixup_alpha, transform.cutmix_alpha, transform.cutmix_minmax,
                        transform.mix_prob, transform.switch_prob, transform.mode,
                        transform.correct_lam, transform.label_smoothing,
                        transform.num_classes, transform.mixup_enabled)
        # Its switch stays timm's: the train loop's `mixup_fn.mixup_enabled = False` (at
        # mixup_off_epoch) turns gpuprep's mixing off too.
        mix._timm = transform
        return mix
    if module.startswith("timm.") and kind == "FastCollateMixup":
        raise OptionsError("timm's FastCollateMixup (mixing uint8 samples while collating, with "
                           "its own rounding) is not supported by gpuprep: use timm's Mixup, "
                           "which gpuprep translates")
    return None
