"""from_torchvision composes exactly or refuses: against the real torchvision (transforms and
transforms.v2) and timm, where they are installed (this module is skipped without torchvision).
A refusal is an OptionsError raised by from_torchvision itself, naming the transform."""
import glob
import os
import warnings

import numpy as np
import pytest

import gpuprep

from support import pipeline

torch = pytest.importorskip("torch")
T = pytest.importorskip("torchvision.transforms")
v2 = pytest.importorskip("torchvision.transforms.v2")
Image = pytest.importorskip("PIL.Image")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHOTOS = sorted(glob.glob(os.path.join(ROOT, "tests", "data", "photos", "*.jpg")))
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def refused(compose, *words):
    """The OptionsError from_torchvision raises for `compose`, which names every one of `words`."""
    with pytest.raises(gpuprep.OptionsError) as caught:
        gpuprep.from_torchvision(compose)
    for word in words:
        assert word in str(caught.value), (word, str(caught.value))
    return caught.value


def outputs(transform, paths=PHOTOS):
    """gpuprep's batch of `paths` through `transform`, on the CPU backend."""
    batch, _ = gpuprep.Pipeline("cpu").preprocess(paths, transform)
    return batch


def torchvision_output(compose, path):
    """torchvision's own result of `compose` on the PIL image of `path`, as numpy."""
    out = compose(Image.open(path).convert("RGB"))
    if isinstance(out, torch.Tensor):
        return out.as_subclass(torch.Tensor).numpy()
    return np.asarray(out)


def assert_same(a, b):
    """Two Transforms that compute the same: the same properties, the same arrays on the photos."""
    assert (a.output_size, a.dtype, a.is_random) == (b.output_size, b.dtype, b.is_random)
    assert np.array_equal(outputs(a), outputs(b))


def every_byte():
    """An RGB image holding every uint8 value in each channel."""
    values = np.arange(256, dtype=np.uint8).reshape(16, 16)
    return Image.fromarray(np.stack([values, values[::-1], values.T], -1), "RGB")


def test_the_photos_are_there():
    assert len(PHOTOS) >= 2


def test_a_repeated_resize_is_refused():
    # torchvision resizes twice (different pixels from one Resize(256)); gpuprep holds one resize.
    for compose in (T.Compose([T.Resize(512), T.Resize(256)]),
                    v2.Compose([v2.Resize(512), v2.Resize(256)])):
        refused(compose, "Resize twice", "torchvision would apply it twice")
    refused(T.Compose([T.Resize(256), T.CenterCrop(240), T.CenterCrop(224)]),
            "CenterCrop twice", "torchvision would apply it twice")


def test_repeated_flips_are_refused():
    # Flipped twice is never flipped: not one RandomHorizontalFlip(1.0).
    for flip in (T.RandomHorizontalFlip, T.RandomVerticalFlip, v2.RandomHorizontalFlip,
                 v2.RandomVerticalFlip):
        refused(T.Compose([flip(1.0), flip(1.0)]), f"{flip.__name__} twice",
                "torchvision would apply it twice")
    # One flip of each axis is one of each: with p=1, torchvision's own pixels.
    compose = T.Compose([T.CenterCrop(64), T.RandomHorizontalFlip(1.0), T.RandomVerticalFlip(1.0),
                         T.PILToTensor()])
    batch = outputs(gpuprep.from_torchvision(compose))
    for image, path in zip(batch, PHOTOS):
        assert np.array_equal(image, torchvision_output(compose, path)), path


def test_repeated_color_jitters_and_others_are_refused():
    cases = [
        ([T.ColorJitter(0.4), T.ColorJitter(contrast=0.3)], "ColorJitter"),
        ([v2.ColorJitter(0.4), v2.ColorJitter(0.4)], "ColorJitter"),
        ([T.RandomGrayscale(0.2), T.RandomGrayscale(0.2)], "RandomGrayscale"),
        ([T.RandomRotation(10), T.RandomRotation(10)], "RandomRotation"),
        ([T.TrivialAugmentWide(), T.TrivialAugmentWide()], "TrivialAugmentWide"),
        ([T.ToTensor(), T.Normalize(MEAN, STD), T.Normalize(MEAN, STD)], "Normalize"),
        ([T.ToTensor(), T.RandomErasing(), T.RandomErasing()], "RandomErasing"),
        ([T.RandomInvert(), T.RandomEqualize(), T.RandomInvert()], "RandomInvert"),
        ([v2.RandomPosterize(3), v2.RandomPosterize(2)], "RandomPosterize"),
        ([T.PILToTensor(), T.PILToTensor()], "PILToTensor"),
        ([T.ToTensor(), T.ConvertImageDtype(torch.float16), T.ConvertImageDtype(torch.uint8)],
         "ConvertImageDtype"),
    ]
    for steps, name in cases:
        refused(T.Compose(steps), f"{name} twice", "torchvision would apply it twice")
    refused(T.Compose([T.ToTensor(), T.PILToTensor()]), "PILToTensor after ToTensor",
            "torchvision would apply both")


def test_nearest_exact_is_refused_by_name():
    refused(T.Compose([T.Resize(256, interpolation=T.InterpolationMode.NEAREST_EXACT)]),
            "Resize(interpolation=NEAREST_EXACT) is not supported")
    refused(v2.Compose([v2.RandomResizedCrop(224,
                                             interpolation=v2.InterpolationMode.NEAREST_EXACT)]),
            "RandomResizedCrop(interpolation=NEAREST_EXACT) is not supported")
    # The supported ones are still taken.
    bicubic = T.InterpolationMode.BICUBIC
    t = gpuprep.from_torchvision(T.Compose([T.Resize(256, interpolation=bicubic),
                                            T.CenterCrop(224)]))
    assert t.output_size == (224, 224)


def test_timms_random_erasing_beyond_sixteen_boxes_or_of_noise_in_uint8_is_refused_by_name():
    timm_erasing = pytest.importorskip("timm.data.random_erasing")
    erasing = timm_erasing.RandomErasing(probability=0.25, max_count=17, device="cpu")
    refused(T.Compose([T.ToTensor(), erasing]), "max_count) must be 1 <= min <= max <= 16")
    erasing = timm_erasing.RandomErasing(probability=0.25, mode="pixel", device="cpu")
    refused(T.Compose([T.PILToTensor(), erasing]),
            "normal values need a float32 or float16 output")


def test_timms_eval_transforms_give_timms_pixels():
    """timm's create_transform for evaluation (Resize by crop_pct, CenterCrop, its MaybeToTensor,
    Normalize): timm's own output, bit for bit."""
    timm_data = pytest.importorskip("timm.data")
    for kwargs in ({}, {"crop_pct": 0.95, "interpolation": "bicubic"},
                   {"crop_pct": 1.0, "mean": (0.5, 0.5, 0.5), "std": (0.5, 0.5, 0.5)}):
        compose = timm_data.create_transform(96, is_training=False, **kwargs)
        t = gpuprep.from_torchvision(compose)
        for path in PHOTOS:
            assert np.array_equal(outputs(t, [path])[0], torchvision_output(compose, path)), \
                (kwargs, path)


def test_timms_eval_transforms_of_a_non_square_size_keep_the_ratio_as_timm_does():
    """A non-square input size: timm's ResizeKeepRatio (both sides by the smaller ratio, each
    rounded as Python rounds) before the centre crop, bit for bit; its training form (random
    scale or aspect) and a longest between 0 and 1 are refused by name."""
    timm_data = pytest.importorskip("timm.data")
    for size, kwargs in (((3, 64, 80), {}), ((3, 72, 56), {"crop_pct": 0.9,
                                                            "interpolation": "bicubic"})):
        compose = timm_data.create_transform(size, is_training=False, **kwargs)
        t = gpuprep.from_torchvision(compose)
        assert "ResizeKeepRatio" in repr(t), repr(t)
        for path in PHOTOS:
            assert np.array_equal(outputs(t, [path])[0], torchvision_output(compose, path)), \
                (size, kwargs, path)
    from timm.data.transforms import CenterCropOrPad, ResizeKeepRatio
    refused(T.Compose([ResizeKeepRatio(64, random_scale_prob=0.5)]), "training form")
    refused(T.Compose([ResizeKeepRatio(64, longest=0.5)]), "longest=0.5")
    refused(T.Compose([CenterCropOrPad(64, padding_mode="reflect")]), "padding_mode='reflect'")


def test_timms_border_crop_mode_pads_with_the_mean_as_timm_does():
    """crop_mode='border': the longest side to the scale size (ResizeKeepRatio, longest=1), then
    CenterCropOrPad pads the shorter with the mean's colour and crops: timm's own output."""
    timm_data = pytest.importorskip("timm.data")
    for size in (64, (3, 48, 72)):
        compose = timm_data.create_transform(size, is_training=False, crop_mode="border")
        t = gpuprep.from_torchvision(compose)
        assert "CenterCropOrPad" in repr(t) and "longest=1.0" in repr(t), repr(t)
        for path in PHOTOS:
            assert np.array_equal(outputs(t, [path])[0], torchvision_output(compose, path)), \
                (size, path)


def test_timms_train_transforms_with_its_seeds_give_timms_pixels():
    """timm's create_transform for training without auto_augment
    (RandomResizedCropAndInterpolation, a flip, ColorJitter, MaybeToTensor, Normalize, and
    re_prob's RandomErasing), its crop, interpolation and box drawn with Python's random and the
    rest with torch's: given what torchvision_params draws after the same seeds, timm's pixels;
    what gpuprep does not compute (timm's own RandAugment) is refused by name."""
    timm_data = pytest.importorskip("timm.data")
    for interpolation in ("random", "bicubic"):
        compose = timm_data.create_transform(64, is_training=True, interpolation=interpolation)
        t = gpuprep.from_torchvision(compose)
        assert ("interpolation=random(bilinear, bicubic)" in repr(t)) == (interpolation == "random")
        seeded = seeded_against_torchvision(compose, range(10))
        drawn = {params.get("interpolation") for params in seeded}
        assert drawn == ({"bilinear", "bicubic"} if interpolation == "random" else {None})
    # With timm's RandomErasing ('const', one box) after Normalize: its boxes drawn with
    # Python's random, zeros written there.
    compose = timm_data.create_transform(64, is_training=True, re_prob=0.5)
    t = gpuprep.from_torchvision(compose)
    assert "RandomErasing(p=0.5, scale=(0.02, 0.3333333333333333)" in repr(t), repr(t)
    seeded = seeded_against_torchvision(compose, range(12))
    erased = sum(bool(params["erase"]) for params in seeded)
    assert 0 < erased < 12


@pytest.mark.parametrize("config,interpolation,seeds", [
    ("rand-m9-mstd0.5-inc1", "bilinear", 24),  # timm's ImageNet recipe, create_transform's default
    ("rand-m9-n4-mstd0.5-p1.0-inc1", "random", 40),  # every operation, drawn filters
    ("rand-m7-n3-mstd101-p0.9", "bicubic", 24),  # the default set, uniform magnitudes
    ("rand-m15-mmax15-n4-p1.0", "bilinear", 24),  # beyond 10: posterize keeps no bits
])
def test_timms_rand_augment_with_its_seeds_gives_timms_pixels(config, interpolation, seeds):
    """timm's own RandAugment in create_transform (its fifteen operations and level rules, the
    magnitude's noise, its fill of the mean, its interpolation or drawn ones), its operations
    drawn with numpy's RNG and the rest with Python's: given what torchvision_params draws after
    the same seeds, timm's pixels."""
    timm_data = pytest.importorskip("timm.data")
    compose = timm_data.create_transform(64, is_training=True, auto_augment=config,
                                         interpolation=interpolation, re_prob=0.25)
    t = gpuprep.from_torchvision(compose)
    assert "TimmRandAugment(" in repr(t) and "fill=[124, 116, 104]" in repr(t), repr(t)
    seeded = seeded_against_torchvision(compose, range(seeds))
    ops = {op["op"] for params in seeded for op in params["augment"]}
    assert len(ops) >= 8, ops
    if "p1.0" in config:
        assert len(ops) == 15, ops


@pytest.mark.parametrize("config,interpolation,seeds", [
    ("original", "random", 40),  # train.py's --aa original, drawn filters
    ("originalr-mstd0.5", "bilinear", 30),  # the research posterize, noisy magnitudes
    ("v0", "bicubic", 40),  # timm's default policy: its SolarizeAdd and TranslateYRel
    ("v0r-mstd3", "random", 30),
])
def test_timms_auto_augment_with_its_seeds_gives_timms_pixels(config, interpolation, seeds):
    """timm's own AutoAugment in create_transform (its policies, level rules and noise, its fill
    of the mean, its interpolation or drawn ones), its sub-policy and operations drawn with
    Python's random: given what torchvision_params draws after the same seeds, timm's pixels."""
    timm_data = pytest.importorskip("timm.data")
    compose = timm_data.create_transform(64, is_training=True, auto_augment=config,
                                         interpolation=interpolation, re_prob=0.25)
    t = gpuprep.from_torchvision(compose)
    policy = config.split("-")[0]
    assert f"TimmAutoAugment(policy='{policy}'" in repr(t) and "fill=[124, 116, 104]" in repr(t), \
        repr(t)
    seeded = seeded_against_torchvision(compose, range(seeds))
    ops = {op["op"] for params in seeded for op in params["augment"]}
    assert len(ops) >= 5, ops


@pytest.mark.parametrize("config,interpolation", [("3a", "bicubic"), ("3a-mstd2", "random")])
def test_timms_three_augment_with_its_seeds_gives_timms_pixels(config, interpolation):
    """DeiT III's three-augment in create_transform: one of solarize, grey and Pillow's Gaussian
    blur (its radius drawn with Python's random as the blur runs), then the ColorJitter
    create_transform keeps for '3a': given what torchvision_params draws after the same seeds,
    timm's pixels, on both backends."""
    timm_data = pytest.importorskip("timm.data")
    compose = timm_data.create_transform(64, is_training=True, auto_augment=config,
                                         interpolation=interpolation, color_jitter=0.3)
    t = gpuprep.from_torchvision(compose)
    assert "TimmAutoAugment(policy='3a'" in repr(t) and "ColorJitter" in repr(t), repr(t)
    seeded = seeded_against_torchvision(compose, range(30), backends=("cpu", "gpu"))
    ops = {op["op"] for params in seeded for op in params["augment"]}
    assert ops == {"Solarize", "TimmColor", "TimmGaussianBlur"}, ops


@pytest.mark.parametrize("config,interpolation,seeds", [
    ("augmix-m3-w3", "random", 30),  # create_transform's AugMix: uniform magnitudes, 1-3 deep
    ("augmix-m9-w2-d3-a0.5-mstd0.5", "bilinear", 24),  # fixed depth, noisy magnitudes, Beta(.5)
    ("augmix-m5-w1-d2", "bicubic", 12),
    ("augmix-m3-w3-b1", "random", 30),  # blended: one Image.blend a chain
    ("augmix-m9-w2-d3-a0.5-b0", "bilinear", 24),  # b0: not blended (timm's bool(int(val)))
])
def test_timms_aug_mix_with_its_seeds_gives_timms_pixels(config, interpolation, seeds):
    """timm's AugMix in create_transform (its weights from numpy's Dirichlet and Beta, its chains
    of thirteen operations, their float32 sum, the blend; or, blended, its float32 blended
    weights and one blend a chain), its weights, depths and operations
    drawn with numpy's RNG and the rest with Python's: given what torchvision_params draws after
    the same seeds, timm's pixels, on both backends."""
    timm_data = pytest.importorskip("timm.data")
    compose = timm_data.create_transform(64, is_training=True, auto_augment=config,
                                         interpolation=interpolation, re_prob=0.25)
    t = gpuprep.from_torchvision(compose)
    assert "TimmAugMix(" in repr(t) and "translate_pct=0.3" in repr(t), repr(t)
    mix = next(s for s in compose.transforms if type(s).__name__ == "AugMixAugment")
    assert ("blended=True" in repr(t)) == mix.blended, (repr(t), mix.blended)
    seeded = seeded_against_torchvision(compose, range(seeds), backends=("cpu", "gpu"))
    ops = {op["op"] for params in seeded for chain in params["aug_mix"]["chains"]
           for op in chain}
    assert len(ops) >= 8, ops


def test_v2_random_resizes_with_torchs_seed_give_torchvisions_pixels():
    """v2's RandomResize and RandomShortestSize (their sizes drawn with torch.randint, the
    shortest size's scale in doubles, each side truncated) before a crop: given what
    torchvision_params draws after the same seeds, torchvision's pixels, on both backends."""
    compose = v2.Compose([v2.RandomResize(40, 72), v2.RandomCrop(48, pad_if_needed=True),
                          v2.RandomHorizontalFlip(), v2.PILToTensor()])
    assert "RandomResize(min_size=40, max_size=72)" in repr(gpuprep.from_torchvision(compose))
    seeded = seeded_against_torchvision(compose, range(12), backends=("cpu", "gpu"))
    assert len({params["resize"] for params in seeded}) > 4
    compose = v2.Compose([v2.RandomShortestSize([40, 48, 56], max_size=90,
                                                interpolation=v2.InterpolationMode.BICUBIC),
                          v2.CenterCrop(40), v2.ToImage(), v2.ToDtype(torch.float32, scale=True),
                          v2.Normalize(MEAN, STD)])
    seeded = seeded_against_torchvision(compose, range(12), backends=("cpu", "gpu"))
    assert {params["resize"] for params in seeded} == {40, 48, 56}
    refused(v2.Compose([v2.Resize(64), v2.RandomResize(40, 72)]), "RandomResize after Resize")
    with pytest.raises(gpuprep.OptionsError, match="min_size < max_size"):
        gpuprep.Transform().random_resize(40, 40).validate()


def test_timms_aug_mix_of_other_settings_is_refused_by_name():
    timm_aa = pytest.importorskip("timm.data.auto_augment")
    with pytest.raises(gpuprep.OptionsError, match="at most 14 steps"):
        gpuprep.Transform().timm_aug_mix("augmix-w4").validate()
    own = timm_aa.AugMixAugment(timm_aa.augmix_ops(3, transforms=["Rotate", "Equalize"]))
    refused(T.Compose([own]), "timm's AugMix of the operations")
    # numpy's Dirichlet underflows at a tiny alpha (NaN weights, which timm casts undefined).
    tiny = T.Compose([timm_aa.augment_and_mix_transform("augmix-a0.0001-w2", {})])
    failed = 0
    for seed in range(10):
        np.random.seed(seed)
        try:
            gpuprep.torchvision_params(tiny, (16, 16))
        except gpuprep.OptionsError as e:
            assert "Dirichlet" in str(e), e
            failed += 1
    assert failed > 0
    assert "policy='v0'" in repr(gpuprep.Transform().timm_auto_augment())


def test_timms_auto_augment_of_other_settings_is_refused_by_name():
    timm_aa = pytest.importorskip("timm.data.auto_augment")
    with pytest.raises(gpuprep.OptionsError, match="starts with original"):
        gpuprep.Transform().timm_auto_augment("3b")
    with pytest.raises(gpuprep.OptionsError, match="starts with original"):
        gpuprep.Transform().timm_auto_augment("rand-m9")
    with pytest.raises(gpuprep.OptionsError, match="unknown timm AutoAugment section"):
        gpuprep.Transform().timm_auto_augment("v0-m9")
    bounded = timm_aa.auto_augment_transform("v0", dict(timm_aa._HPARAMS_DEFAULT, magnitude_max=8))
    refused(T.Compose([bounded]), "magnitude_max=8")
    own = timm_aa.AutoAugment([[timm_aa.AugmentOp("Rotate", 0.5, 3)]])
    refused(T.Compose([own]), "a policy of its own")


def test_timms_rand_augment_strings_translate_or_are_refused():
    timm_aa = pytest.importorskip("timm.data.auto_augment")
    assert "magnitude=9, magnitude_std=inf" in repr(gpuprep.Transform().timm_rand_augment(
        "rand-m9-mstd200"))
    with pytest.raises(gpuprep.OptionsError, match="operation set \"tweights\""):
        gpuprep.Transform().timm_rand_augment("rand-m9-tweights")
    with pytest.raises(gpuprep.OptionsError, match="starts with `rand-`"):
        gpuprep.Transform().timm_rand_augment("augmix-m5")
    weighted = timm_aa.rand_augment_transform("rand-m9-tweights", {})
    refused(T.Compose([weighted]), "weighted operations")
    refused(T.Compose([timm_aa.rand_augment_transform("rand-m9-t3a", {})]),
            "timm's RandAugment of the operations")


def test_augmix_and_batch_transforms_in_a_compose_are_refused_with_their_reason():
    refused(T.Compose([T.RandomResizedCrop(8), T.AugMix()]),
            "torchvision's AugMix is not supported", "grid_sample")
    refused(v2.Compose([v2.RandomResizedCrop(8), v2.PILToTensor(), v2.MixUp(num_classes=3)]),
            "MixUp inside a Compose", "batch_transform=")


def test_resize_with_random_resized_crop_is_refused_at_translation():
    refused(T.Compose([T.Resize(256), T.RandomResizedCrop(224), T.ToTensor()]),
            "RandomResizedCrop after Resize", "torchvision would apply both", "resize twice")
    refused(T.Compose([T.RandomResizedCrop(224), T.Resize(256)]),
            "Resize after RandomResizedCrop", "torchvision would apply both")
    refused(v2.Compose([v2.Resize(256), v2.RandomResizedCrop(224)]),
            "RandomResizedCrop after Resize")


def test_to_pure_tensor_is_accepted_and_changes_nothing():
    with_it = T.Compose([v2.ToPureTensor(), T.Resize(72), v2.ToPureTensor(), T.CenterCrop(64),
                         T.RandomHorizontalFlip(), T.ToTensor(), v2.ToPureTensor(),
                         T.Normalize(MEAN, STD), v2.ToPureTensor()])
    without = T.Compose([T.Resize(72), T.CenterCrop(64), T.RandomHorizontalFlip(), T.ToTensor(),
                         T.Normalize(MEAN, STD)])
    assert_same(gpuprep.from_torchvision(with_it), gpuprep.from_torchvision(without))
    compose = v2.Compose([v2.Resize(72), v2.CenterCrop(64), v2.ToImage(), v2.ToPureTensor()])
    t = gpuprep.from_torchvision(compose)
    assert_same(t, gpuprep.from_torchvision(v2.Compose(compose.transforms[:-1])))
    for image, path in zip(outputs(t), PHOTOS):
        assert np.array_equal(image, torchvision_output(compose, path)), path
    # ToImage of a tensor is a type conversion alone as well.
    assert_same(gpuprep.from_torchvision(T.Compose([T.CenterCrop(64), T.ToTensor(), v2.ToImage()])),
                gpuprep.from_torchvision(T.Compose([T.CenterCrop(64), T.ToTensor()])))


def test_v2_spellings_give_v1s_arrays():
    bicubic = T.InterpolationMode.BICUBIC
    pairs = [
        (T.Compose([T.Resize(72), T.CenterCrop(64), T.ToTensor(),
                    T.ConvertImageDtype(torch.float16)]),
         v2.Compose([v2.Resize(72), v2.CenterCrop(64), v2.ToImage(),
                     v2.ToDtype(torch.float16, scale=True)]), True),
        (T.Compose([T.Resize(72, interpolation=bicubic), T.CenterCrop((64, 56)), T.PILToTensor()]),
         v2.Compose([v2.Resize([72], interpolation=bicubic, antialias=True),
                     v2.CenterCrop((64, 56)), v2.ToImage()]), True),
        (T.Compose([T.Resize((70, 60)), T.CenterCrop(56), T.PILToTensor(),
                    T.ConvertImageDtype(torch.float32), T.Normalize(MEAN, STD),
                    T.RandomErasing(0.5, value=(0.1, 0.2, 0.3))]),
         v2.Compose([v2.Resize((70, 60)), v2.CenterCrop(56), v2.PILToTensor(),
                     T.ConvertImageDtype(torch.float32), v2.Normalize(MEAN, STD),
                     v2.RandomErasing(0.5, value=(0.1, 0.2, 0.3))]), False),
        (T.Compose([T.RandomResizedCrop(48, scale=(0.2, 1.0)), T.RandomHorizontalFlip(),
                    T.RandomVerticalFlip(0.3), T.RandomRotation(20, fill=[10, 20, 30]),
                    T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(0.3), T.PILToTensor(),
                    T.RandomErasing(0.7, value=3)]),
         v2.Compose([v2.RandomResizedCrop(48, scale=(0.2, 1.0)), v2.RandomHorizontalFlip(),
                     v2.RandomVerticalFlip(0.3), v2.RandomRotation(20, fill=[10, 20, 30]),
                     v2.ColorJitter(0.4, 0.4, 0.4, 0.1), v2.RandomGrayscale(0.3), v2.ToImage(),
                     v2.RandomErasing(0.7, value=3)]), False),
    ]
    for v1_compose, v2_compose, deterministic in pairs:
        t = gpuprep.from_torchvision(v2_compose)
        assert_same(gpuprep.from_torchvision(v1_compose), t)
        if deterministic:  # and then they are torchvision's own pixels
            for image, path in zip(outputs(t), PHOTOS):
                assert np.array_equal(image, torchvision_output(v2_compose, path)), path
    # v2's deprecated ToTensor is v1's.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(gpuprep.from_torchvision(v2.Compose([v2.CenterCrop(64), v2.ToTensor()])),
                    gpuprep.from_torchvision(T.Compose([T.CenterCrop(64), T.ToTensor()])))


def test_v2_transforms_after_to_image_are_refused():
    refused(v2.Compose([v2.ToImage(), v2.Resize(256), v2.CenterCrop(224),
                        v2.ToDtype(torch.float16, scale=True)]),
            "Resize after ToImage()", "torch's kernels", "PIL path",
            "put ToImage() after the geometric and colour transforms")
    refused(v2.Compose([v2.RandomResizedCrop(224), v2.ToImage(), v2.RandomHorizontalFlip()]),
            "RandomHorizontalFlip after ToImage()")
    refused(T.Compose([T.CenterCrop(224), T.ToTensor(), T.ColorJitter(0.4)]),
            "ColorJitter after ToTensor()")
    # After the geometric and colour transforms, ToImage is the tensor conversion.
    t = gpuprep.from_torchvision(v2.Compose([v2.Resize(256), v2.CenterCrop(224),
                                             v2.ColorJitter(0.2), v2.ToImage()]))
    assert (t.output_size, t.dtype, t.is_random) == ((224, 224), "uint8", True)


def test_v2s_float_conversion_of_uint8_is_its_multiplication():
    """v2 scales uint8 to float by multiplying by float32(1/255), v1 (ToTensor, ConvertImageDtype)
    by dividing by 255: the two differ in the last bit, and each translates to its own, exactly,
    normalised too (the reference recipes' v2 preset: ToImage, ToDtype(scale=True), Normalize)."""
    image = every_byte()
    expected = T.ToTensor()(image)
    multiplied = v2.ToDtype(torch.float32, scale=True)(v2.ToImage()(image))
    assert not torch.equal(multiplied.as_subclass(torch.Tensor), expected)
    norm = dict(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
    for compose in (T.Compose([T.PILToTensor(), T.ConvertImageDtype(torch.float32)]),
                    v2.Compose([v2.ToImage(), T.ConvertImageDtype(torch.float32)]),
                    v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)]),
                    v2.Compose([v2.PILToTensor(), v2.ConvertImageDtype(torch.float32)]),
                    v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True),
                                v2.Normalize(**norm), v2.ToPureTensor()]),
                    v2.Compose([v2.ToImage(), v2.ToDtype(torch.float16, scale=True)]),
                    T.Compose([T.ToTensor(), v2.ToDtype(torch.float32, scale=True)])):
        want = compose(image).as_subclass(torch.Tensor)
        t = gpuprep.from_torchvision(compose)
        for backend in ("cpu", "gpu"):
            batch, _ = pipeline(backend).preprocess([np.asarray(image)], t)
            assert np.array_equal(batch[0], want.numpy()), (compose, backend)


def test_the_reference_recipes_v2_preset_gives_torchvisions_pixels():
    """references/classification/presets.py's ClassificationPresetTrain(use_v2=True) without an
    auto-augment policy: PILToTensor, ToDtype(torch.float, scale=True), Normalize,
    RandomErasing, ToPureTensor, with torch's seeds."""
    compose = v2.Compose([v2.RandomResizedCrop(64, antialias=True), v2.RandomHorizontalFlip(0.5),
                          v2.PILToTensor(), v2.ToDtype(torch.float, scale=True),
                          v2.Normalize(mean=MEAN, std=STD), v2.RandomErasing(p=0.5),
                          v2.ToPureTensor()])
    seeded = seeded_against_torchvision(compose, range(10))
    assert 0 < sum(bool(params["erase"]) for params in seeded) < 10


@pytest.mark.parametrize("module", [T, v2], ids=["v1", "v2"])
def test_with_torchs_seed_random_erasing_of_normal_values_is_torchvisions(module):
    """RandomErasing(value='random') after Normalize: the box and torch's own normal values, as
    torchvision_params takes them from get_params, written where torchvision writes them, on
    both backends; of a uint8 tensor it is refused by name."""
    to_float = [T.ToTensor()] if module is T else [v2.PILToTensor(),
                                                   v2.ToDtype(torch.float32, scale=True)]
    compose = module.Compose([module.RandomResizedCrop(48), *to_float,
                              module.Normalize(MEAN, STD), module.RandomErasing(0.7, value="random")])
    assert "value='random'" in repr(gpuprep.from_torchvision(compose))
    seeded = seeded_against_torchvision(compose, range(10), backends=("cpu", "gpu"))
    erased = [params["erase"][0] for params in seeded if params["erase"]]
    assert 0 < len(erased) < 10
    assert all(len(box["noise"]) == 3 * box["height"] * box["width"] for box in erased)
    refused(module.Compose([module.PILToTensor(), module.RandomErasing(value="random")]),
            "RandomErasing(value='random') of a uint8 tensor is not supported")


@pytest.mark.parametrize("mode", ["pixel", "rand", "const"])
def test_timms_random_erasing_modes_and_counts_with_its_seeds_are_timms(mode):
    """timm's RandomErasing in create_transform (re_mode 'pixel', 'rand' or 'const', re_count
    3: one to three boxes sharing the area), its count and boxes drawn with Python's random and
    its normal values with torch's: timm's pixels on both backends."""
    timm_data = pytest.importorskip("timm.data")
    compose = timm_data.create_transform(48, is_training=True, re_prob=0.9, re_mode=mode,
                                         re_count=3)
    value = {"pixel": "'random'", "rand": "'random_per_channel'", "const": "[0.0, 0.0, 0.0]"}
    assert f"value={value[mode]}, count=(1, 3))" in repr(gpuprep.from_torchvision(compose))
    seeded = seeded_against_torchvision(compose, range(16), backends=("cpu", "gpu"))
    counts = {len(params["erase"]) for params in seeded}
    assert {2, 3} <= counts, counts


def test_timms_pixel_noise_in_a_float16_tensor_is_drawn_in_float16():
    """timm draws its 'pixel' values in the tensor's own element type: torch's float16 normal_
    is not its float32 one rounded, and torchvision_params draws as timm does."""
    timm_erasing = pytest.importorskip("timm.data.random_erasing")
    compose = T.Compose([T.Resize(40), T.CenterCrop(40), T.ToTensor(),
                         T.ConvertImageDtype(torch.float16),
                         timm_erasing.RandomErasing(0.9, mode="pixel", max_count=3, device="cpu")])
    seeded = seeded_against_torchvision(compose, range(8), backends=("cpu", "gpu"))
    assert sum(len(params["erase"]) for params in seeded) > 4


@pytest.mark.parametrize("module", [T, v2], ids=["v1", "v2"])
def test_resize_with_max_size_gives_torchvisions_pixels(module):
    compose = module.Compose([module.Resize(160, max_size=200), module.PILToTensor()])
    t = gpuprep.from_torchvision(compose)
    assert "Resize(160, max_size=200" in repr(t)
    capped = 0
    for path in PHOTOS:
        expected = torchvision_output(compose, path)
        capped += max(expected.shape) == 200
        assert np.array_equal(outputs(t, [path])[0], expected), path
    assert capped > 0  # a photo whose longer side the cap shortened


def seeded_against_torchvision(compose, seeds, backends=("cpu",)):
    """`compose` as torchvision (or timm) runs it on a photo after torch.manual_seed(s),
    random.seed(s) and numpy.random.seed(s) (timm's draws), against gpuprep (on each of
    `backends`) given what torchvision_params draws after the same seeds, for each seed; their
    params."""
    import random

    transform = gpuprep.from_torchvision(compose)
    pipelines = [pipeline(backend) for backend in backends]
    drawn = []
    for seed in seeds:
        path = PHOTOS[seed % len(PHOTOS)]
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        expected = torchvision_output(compose, path)
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        params = gpuprep.torchvision_params(compose, Image.open(path).size)
        for p, backend in zip(pipelines, backends):
            batch, _ = p.preprocess([path], transform, params=[params])
            assert np.array_equal(batch[0], expected), (compose, path, seed, params, backend)
        drawn.append(params)
    return drawn


@pytest.mark.parametrize("module", [T, v2], ids=["v1", "v2"])
def test_with_torchs_seed_a_randomly_applied_jitter_is_torchvisions(module):
    """SimCLR's colour distortion: RandomApply([ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8) and
    RandomGrayscale(0.2), its one draw and the jitter's after torch.manual_seed."""
    compose = module.Compose([module.RandomResizedCrop(64), module.RandomHorizontalFlip(),
                              module.RandomApply([module.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8),
                              module.RandomGrayscale(0.2), module.PILToTensor()])
    transform = gpuprep.from_torchvision(compose)
    assert "RandomApply([ColorJitter(" in repr(transform) and "p=0.8)" in repr(transform)
    drawn = seeded_against_torchvision(compose, range(24))
    assert {bool(params["color"]["order"]) for params in drawn} == {True, False}


@pytest.mark.parametrize("module", [T, v2], ids=["v1", "v2"])
def test_with_torchs_seed_color_jitter_ranges_are_torchvisions(module):
    jitter = module.ColorJitter(brightness=(0.5, 1.2), contrast=(1.0, 1.8), saturation=0.3,
                                hue=(-0.3, 0.1))
    compose = module.Compose([module.CenterCrop(64), jitter, module.PILToTensor()])
    transform = gpuprep.from_torchvision(compose)
    assert "brightness=(0.5, 1.2)" in repr(transform), repr(transform)
    for params in seeded_against_torchvision(compose, range(16)):
        assert 1.0 <= params["color"]["contrast"] <= 1.8, params


@pytest.mark.parametrize("module", [T, v2], ids=["v1", "v2"])
def test_with_torchs_seed_random_crops_and_pads_are_torchvisions(module):
    """RandomCrop with each padding mode (and pad_if_needed, padding twice over, mirrored again)
    and Pad before a centre crop, after torch.manual_seed, through torchvision_params."""
    composes = [
        module.Compose([module.Resize((32, 32)), module.RandomCrop(32, padding=4),
                        module.RandomHorizontalFlip(), module.PILToTensor()]),
        module.Compose([module.Resize(40), module.RandomCrop((30, 36), padding=(2, 3, 5, 1),
                                                             padding_mode="reflect"),
                        module.PILToTensor()]),
        module.Compose([module.Resize((12, 20)), module.RandomCrop((40, 48), pad_if_needed=True,
                                                                   padding_mode="symmetric"),
                        module.PILToTensor()]),
        module.Compose([module.Resize((40, 40)), module.Pad(6, fill=(200, 100, 50)),
                        module.RandomCrop(36, padding=2, fill=(10, 20, 30)),
                        module.RandomRotation(30, fill=[1, 2, 3]), module.PILToTensor()]),
        module.Compose([module.Resize((24, 30)), module.Pad((5, 0, 7, 2), padding_mode="edge"),
                        module.CenterCrop((20, 48)), module.PILToTensor()]),
    ]
    if module is T:  # v1 pads twice: first by padding, then by what a side lacks
        composes.append(T.Compose([T.Resize((12, 20)), T.RandomCrop(48, padding=3,
                                                                    pad_if_needed=True,
                                                                    padding_mode="reflect"),
                                   T.PILToTensor()]))
    for compose in composes:
        seeded_against_torchvision(compose, range(6))


def test_torchvision_params_refuses_what_from_torchvision_refuses_before_drawing():
    state = torch.get_rng_state()
    for compose in [T.Compose([T.RandomResizedCrop(64), T.ElasticTransform()]),
                    T.Compose([T.RandomApply([T.TrivialAugmentWide()], p=0.5)]),
                    v2.Compose([v2.ElasticTransform()])]:
        with pytest.raises(gpuprep.OptionsError):
            gpuprep.torchvision_params(compose, (100, 80))
    assert torch.equal(torch.get_rng_state(), state)  # nothing drawn


def test_a_float_to_float_to_dtype_needs_no_scale():
    unscaled = v2.Compose([v2.CenterCrop(32), v2.ToTensor(), v2.ToDtype(torch.float16)])
    scaled = v2.Compose([v2.CenterCrop(32), v2.ToTensor(), v2.ToDtype(torch.float16, scale=True)])
    assert repr(gpuprep.from_torchvision(unscaled)) == repr(gpuprep.from_torchvision(scaled))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # v2.ToTensor is deprecated
        expected = torchvision_output(unscaled, PHOTOS[0])
    assert np.array_equal(outputs(gpuprep.from_torchvision(unscaled), PHOTOS[:1])[0], expected)
    refused(v2.Compose([v2.PILToTensor(), v2.ToDtype(torch.float32)]), "scale=False",
            "ToTensor()")


def test_an_order_refusal_names_the_step_it_comes_after():
    refused(T.Compose([T.RandomHorizontalFlip(), T.RandomResizedCrop(64)]),
            "RandomResizedCrop after a later step (RandomHorizontalFlip)")
    refused(T.Compose([T.RandomRotation(5), T.RandAugment()]),
            "(rotate or augment twice)")


def test_random_crops_are_refused_where_torchvision_differs_or_refuses():
    refused(v2.Compose([v2.RandomCrop(48, padding=3, pad_if_needed=True,
                                      padding_mode="reflect")]),
            "v2.RandomCrop", "v1's")
    refused(T.Compose([T.CenterCrop(32), T.RandomCrop(16)]), "RandomCrop after CenterCrop",
            "torchvision would apply both")
    refused(T.Compose([T.RandomCrop(16), T.Resize(8)]), "Resize after a later step")
    refused(T.Compose([T.CenterCrop(16), T.Pad(2)]), "Pad after a later step")
    t = gpuprep.from_torchvision(T.Compose([T.RandomCrop(4000)]))
    with pytest.raises(gpuprep.OptionsError, match="larger than this image"):
        outputs(t, PHOTOS[:1])


def test_augmentation_policies_translate_or_are_refused_by_name():
    t = gpuprep.from_torchvision(T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                                            T.RandAugment(), T.PILToTensor()]))
    assert "RandAugment(num_ops=2, magnitude=9, num_magnitude_bins=31" in repr(t)
    t = gpuprep.from_torchvision(T.Compose([T.AutoAugment(T.AutoAugmentPolicy.CIFAR10, fill=7)]))
    assert "AutoAugment(policy='cifar10', interpolation=nearest, fill=[7, 7, 7])" in repr(t)
    t = gpuprep.from_torchvision(T.Compose([T.AutoAugment(
        interpolation=T.InterpolationMode.BICUBIC)]))
    assert "AutoAugment(policy='imagenet', interpolation=bicubic" in repr(t)
    refused(T.Compose([T.RandAugment(interpolation=T.InterpolationMode.BOX)]),
            "RandAugment(interpolation=BOX) is not supported", "NEAREST, BILINEAR and BICUBIC")
    t = gpuprep.from_torchvision(v2.Compose([v2.RandAugment(magnitude=20), v2.PILToTensor()]))
    assert "num_magnitude_bins=31, interpolation=nearest, fill=[0, 0, 0], v2=True)" in repr(t)
    refused(T.Compose([T.RandAugment(num_ops=5)]), "RandAugment(num_ops=5)", "0 to 4")
    refused(T.Compose([T.RandAugment(magnitude=31)]), "RandAugment(magnitude=31)")
    refused(T.Compose([T.RandAugment(), T.AutoAugment()]), "AutoAugment after RandAugment",
            "torchvision would apply both")
    refused(T.Compose([T.RandomRotation(5), T.RandAugment()]), "RandAugment after RandomRotation")
    refused(T.Compose([T.RandomRotation(5), T.ColorJitter(0.4), T.AutoAugment()]),
            "AutoAugment after RandomRotation")


def test_random_rotation_names_what_it_refuses():
    refused(T.Compose([T.RandomRotation(10, expand=True)]), "RandomRotation(expand=True)")
    refused(v2.Compose([v2.RandomRotation(10, center=(5, 5), expand=True)]),
            "RandomRotation(expand=True)")


@pytest.mark.parametrize("module", [T, v2], ids=["v1", "v2"])
def test_with_torchs_seed_rotations_about_a_point_are_torchvisions(module):
    """RandomRotation(center=...): Pillow maps every angle about the point (no shortcut for 0,
    90, 180 or 270 degrees), in pixels of the image as the rotation finds it."""
    bilinear = module.InterpolationMode.BILINEAR
    for compose in [
        module.Compose([module.Resize((40, 32)), module.RandomRotation(60, center=(5, 27.5),
                                                                      fill=[10, 200, 30]),
                        module.PILToTensor()]),
        module.Compose([module.RandomResizedCrop(48), module.RandomRotation(
            (-180, 180), interpolation=bilinear, center=[-3, 41]), module.PILToTensor()]),
        module.Compose([module.Resize((48, 32)), module.RandomRotation((180, 180), center=(10, 10)),
                        module.PILToTensor()]),
        # Pillow walks this half turn in doubles: its start lies 2e-7 short of a whole pixel.
        module.Compose([module.Resize((48, 40)), module.RandomRotation(
            (180, 180), center=(3.2499999, 27.7499999)), module.PILToTensor()]),
    ]:
        seeded_against_torchvision(compose, range(6))


def test_v2_policies_are_torchvisions():
    """transforms.v2's TrivialAugmentWide, RandAugment and AutoAugment on a PIL image: v1's
    operations, Solarize at v2's 255 × linspace(1, 0) (at bin 20 of 31, 85.0000025: the value
    85 is not inverted, as v1's 85.0 inverts it); v2's own draws replayed after torch's seed.
    Each policy's seeds draw a Solarize whose threshold inverts from another value than v1's
    (found by a search; asserted, so that the comparison keeps telling v1 from v2)."""
    import math

    def differing(bins):
        v1s = torch.linspace(255.0, 0.0, bins).tolist()
        v2s = [255.0 * m for m in torch.linspace(1.0, 0.0, bins).tolist()]
        return {b for a, b in zip(v1s, v2s) if math.ceil(a) != math.ceil(b)}

    mode = v2.InterpolationMode.BILINEAR
    first = list(range(16))
    for policy, seeds, bins in (
            (v2.TrivialAugmentWide(interpolation=mode), first + [43, 77, 117, 153], 31),
            (v2.RandAugment(num_ops=3, magnitude=20, fill=[10, 20, 30]), range(24), 31),
            (v2.AutoAugment(v2.AutoAugmentPolicy.IMAGENET), first + [34, 35, 38], 10),
            (v2.AutoAugment(v2.AutoAugmentPolicy.SVHN, interpolation=mode), first + [39, 62, 65],
             10)):
        drawn = seeded_against_torchvision(v2.Compose([v2.RandomResizedCrop(64), policy,
                                                       v2.PILToTensor()]), seeds)
        thresholds = {op["magnitude"] for params in drawn for op in params["augment"]
                      if op["op"] == "Solarize"}
        assert thresholds & differing(bins), (policy, thresholds)
    # Bin 20's threshold, recorded as v2 gives it to ImageOps.solarize.
    t = gpuprep.Transform().resize((40, 40)).rand_augment(4, 20, v2=True)
    paths = [PHOTOS[i % len(PHOTOS)] for i in range(64)]
    _, outcomes = gpuprep.Pipeline("cpu").preprocess(paths, t, indices=list(range(64)))
    thresholds = {op["magnitude"] for outcome in outcomes for op in outcome["params"]["augment"]
                  if op["op"] == "Solarize"}
    assert thresholds == {85.0000025331974}, thresholds


def test_random_affine_translates_in_v1_and_v2():
    # v2's computes its matrix in an order of its own (whose doubles can differ in the last bit).
    for module, tail in ((T, ")"), (v2, ", v2=True)")):
        t = gpuprep.from_torchvision(module.Compose([module.RandomAffine(
            10, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=5,
            interpolation=module.InterpolationMode.BILINEAR, fill=3)]))
        assert ("RandomAffine(degrees=(-10.0, 10.0), translate=(0.1, 0.1), scale=(0.9, 1.1), "
                "shear=(-5.0, 5.0), interpolation=bilinear, fill=[3, 3, 3]" + tail) in repr(t)
    seeded_against_torchvision(v2.Compose([
        v2.RandomResizedCrop(80), v2.RandomAffine(20, translate=(0.1, 0.1), scale=(0.8, 1.2),
                                                  shear=(-5, 5, -5, 5),
                                                  interpolation=v2.InterpolationMode.BICUBIC),
        v2.PILToTensor()]), range(6))
    refused(T.Compose([T.RandomAffine(10), T.RandomRotation(5)]),
            "RandomRotation after RandomAffine")
    refused(T.Compose([T.RandomAffine(10, interpolation=T.InterpolationMode.LANCZOS)]),
            "RandomAffine(interpolation=LANCZOS) is not supported")
    # Lists as torchvision takes them.
    t = gpuprep.Transform().random_affine([-5, 5], translate=[0.1, 0.1], scale=[0.9, 1.1],
                                          shear=[1, 2, 3, 4], center=[3, 4])
    assert "shear=(1.0, 2.0, 3.0, 4.0)" in repr(t) and "center=(3.0, 4.0)" in repr(t)
    # A corner 32768 pixels away: Pillow walks such a nearest map in doubles, not offered.
    far = gpuprep.from_torchvision(T.Compose([T.Resize((200, 200)),
                                              T.RandomAffine((45, 45), scale=(0.003, 0.003))]))
    with pytest.raises(gpuprep.OptionsError, match="check_fixed"):
        outputs(far, PHOTOS[:1])


def test_the_steps_that_keep_the_size_run_in_the_composes_order():
    """A rotation, RandomAffine, policy or RandomPerspective after the colour steps, the colour
    steps in any order, GaussianBlur before them: the Transform keeps the Compose's order
    (Transform.order) and computes what torchvision does, v1 and v2; the usual order is no
    order at all; what gpuprep does not reorder (a resize after them, a flip after a rotation)
    is still refused by name."""
    composes = [
        [T.RandomResizedCrop(64), T.RandomHorizontalFlip(), T.ColorJitter(0.4, 0.4, 0.4, 0.1),
         T.RandomGrayscale(0.3), T.RandomRotation(20), T.PILToTensor()],
        [T.CenterCrop(56), T.RandomEqualize(0.7), T.RandomPerspective(0.5, p=0.8),
         T.RandomSolarize(128, p=0.5), T.RandomAffine(10, translate=(0.1, 0.1),
                                                       interpolation=T.InterpolationMode.BILINEAR),
         T.PILToTensor()],
        [T.Resize(48), T.RandomApply([T.GaussianBlur(5)], p=0.7), T.RandomInvert(0.5),
         T.RandAugment(interpolation=T.InterpolationMode.BILINEAR), T.ToTensor()],
        [T.CenterCrop(48), T.RandomAdjustSharpness(2.0, 0.5), T.RandomGrayscale(0.5),
         T.ColorJitter(0.3, 0.3, 0.5, 0.2), T.PILToTensor()],
    ]
    for steps in composes:
        t = gpuprep.from_torchvision(T.Compose(steps))
        shown = repr(t)
        kept = [type(s).__name__ for s in steps if type(s).__name__ in gpuprep._SAME_SIZE]
        at = [shown.index(name) for name in kept]
        assert at == sorted(at), (kept, shown)
        seeded_against_torchvision(T.Compose(steps), range(6))
    for module in (T, v2):
        seeded_against_torchvision(module.Compose([
            module.RandomResizedCrop(64), module.ColorJitter(0.4, 0.4), module.RandomRotation(15),
            module.RandomGrayscale(0.5), module.PILToTensor()]), range(4))
    usual = T.Compose([T.RandomRotation(10), T.ColorJitter(0.4), T.RandomInvert()])
    assert gpuprep.from_torchvision(usual) == gpuprep.Transform().random_rotation(10) \
        .color_jitter(0.4).random_invert()
    refused(T.Compose([T.ColorJitter(0.4), T.RandomResizedCrop(64)]),
            "RandomResizedCrop after a later step (ColorJitter)")
    refused(T.Compose([T.RandomAffine(10), T.ColorJitter(0.4), T.RandomHorizontalFlip()]),
            "RandomHorizontalFlip after RandomAffine")


@pytest.mark.parametrize("module", [T, v2], ids=["v1", "v2"])
def test_random_order_and_random_choice_draw_as_torchvision_does(module):
    """RandomOrder and RandomChoice of the steps that keep the image's size, v1's drawn with
    Python's random (shuffle, choices over p), v2's with torch (randperm, multinomial): after
    the same seeds, gpuprep given torchvision_params's draws is torchvision, every order and
    every choice seen."""
    compose = module.Compose([
        module.RandomResizedCrop(56), module.RandomHorizontalFlip(),
        module.RandomChoice([module.RandomRotation(15), module.RandomPerspective(0.4, p=1.0),
                             module.RandomAdjustSharpness(2.0, p=1.0)], p=[1.0, 2.0, 1.0]),
        module.RandomOrder([module.ColorJitter(0.4, 0.4, 0.4, 0.1), module.RandomGrayscale(0.3),
                            module.RandomApply([module.RandomSolarize(128)], p=0.8)]),
        module.PILToTensor()])
    t = gpuprep.from_torchvision(compose)
    shown = repr(t)
    p = [float(w) for w in compose.transforms[2].p]  # v2 normalises them
    assert "RandomChoice([RandomRotation(" in shown and f"p={p})" in shown, shown
    assert "RandomOrder([ColorJitter(" in shown, shown
    drawn = seeded_against_torchvision(compose, range(16))
    assert {p["steps"][0] for p in drawn} == {"random_rotation", "random_perspective",
                                             "random_adjust_sharpness"}
    assert len({tuple(p["steps"][1:]) for p in drawn}) >= 4
    for p in drawn:  # what RandomChoice did not choose draws nothing
        sharpened = "random_adjust_sharpness" in p.get("color_ops", {})
        assert sum(key in p for key in ("rotation", "perspective")) + sharpened == 1, p
    uniform = module.Compose([module.CenterCrop(48),
                              module.RandomChoice([module.GaussianBlur(5, (0.1, 2.0))
                                                   if module is T else module.RandomInvert(1.0),
                                                   module.RandomEqualize(1.0)]),
                              module.PILToTensor()])
    seeded_against_torchvision(uniform, range(6))


def test_random_order_and_random_choice_refuse_what_gpuprep_does_not_draw():
    refused(T.Compose([T.RandomChoice([T.Resize(32), T.CenterCrop(32)])]),
            "RandomChoice([Resize, CenterCrop]) is not supported", "keep the image's size")
    refused(T.Compose([T.RandomOrder([T.ColorJitter(0.4), T.RandomOrder([T.RandomInvert()])])]),
            "RandomOrder([ColorJitter, RandomOrder]) is not supported")
    refused(T.Compose([T.RandomOrder([T.RandomHorizontalFlip(), T.ColorJitter(0.4)])]),
            "RandomOrder([RandomHorizontalFlip, ColorJitter]) is not supported")
    refused(T.Compose([T.RandomChoice([T.ColorJitter(0.4), T.RandomInvert()], p=[0, 0])]),
            "RandomChoice(p=[0, 0])")
    refused(T.Compose([T.RandomChoice([T.RandomRotation(10), T.RandAugment()])]),
            "RandomChoice of RandomRotation and RandAugment", "cannot draw between")
    refused(T.Compose([T.RandomRotation(10), T.RandomOrder([T.RandAugment(), T.RandomInvert()])]),
            "RandAugment after RandomRotation", "torchvision would apply both")
    refused(v2.Compose([v2.RandomChoice([v2.MixUp(num_classes=10), v2.CutMix(num_classes=10)])]),
            "RandomChoice of MixUp/CutMix inside a Compose")
    refused(T.Compose([T.RandomOrder([T.RandomRotation(10), T.ColorJitter(0.4)]),
                       T.RandomHorizontalFlip()]),
            "RandomHorizontalFlip after RandomRotation")


def test_a_compose_inside_a_compose_is_its_transforms_in_its_place():
    """torchvision applies an inner Compose's transforms in turn, as the outer one would: the
    same Transform, and the same draws, as the flat Compose."""
    for module in (T, v2):
        nested = module.Compose([module.RandomResizedCrop(64), module.Compose([
            module.RandomHorizontalFlip(), module.Compose([module.ColorJitter(0.4, 0.4)])]),
            module.PILToTensor()])
        flat = module.Compose([module.RandomResizedCrop(64), module.RandomHorizontalFlip(),
                               module.ColorJitter(0.4, 0.4), module.PILToTensor()])
        assert repr(gpuprep.from_torchvision(nested)) == repr(gpuprep.from_torchvision(flat))
        seeded_against_torchvision(nested, range(3))
    refused(T.Compose([T.Compose([T.ColorJitter(0.4)]), T.RandomResizedCrop(64)]),
            "RandomResizedCrop after a later step (ColorJitter)")


def test_random_apply_around_a_transform_that_draws_a_coin_is_torchvisions():
    """RandomApply around a flip, RandomGrayscale, RandomPerspective or a single-operation
    transform: its coin, then the transform's own where it applies, as torchvision draws them;
    in gpuprep's Transform the two probabilities' product."""
    for module in (T, v2):
        compose = module.Compose([
            module.RandomResizedCrop(64),
            module.RandomApply([module.RandomHorizontalFlip(0.8)], p=0.5),
            module.RandomApply([module.RandomPerspective(0.5, p=0.8)], p=0.5),
            module.RandomApply([module.RandomGrayscale(0.5)], p=0.6),
            module.RandomApply([module.RandomSolarize(128, p=0.9)], p=0.5),
            module.PILToTensor()])
        shown = repr(gpuprep.from_torchvision(compose))
        for part in ("RandomHorizontalFlip(p=0.4)", "RandomPerspective(distortion_scale=0.5, p=0.4",
                     "RandomGrayscale(p=0.3)", "RandomSolarize(threshold=128, p=0.45)"):
            assert part in shown, (part, shown)
        seeded_against_torchvision(compose, range(8))
    refused(T.Compose([T.RandomApply([T.TrivialAugmentWide()], p=0.5)]),
            "RandomApply([TrivialAugmentWide]) is not supported")


def test_random_apply_around_a_rotation_or_affine_map_is_torchvisions():
    """RandomApply([RandomRotation]) and RandomApply([RandomAffine]): RandomApply's coin, then
    the map's draws where it applies; where it does not, the angle 0 or the identity's draw (a
    copy, as torchvision returns the image as it is)."""
    for module in (T, v2):
        bilinear = module.InterpolationMode.BILINEAR
        compose = module.Compose([
            module.RandomResizedCrop(64),
            module.RandomApply([module.RandomRotation(25, bilinear, fill=[9, 9, 9])], p=0.5),
            module.PILToTensor()])
        assert "RandomApply([RandomRotation(degrees=(-25.0, 25.0)" in \
            repr(gpuprep.from_torchvision(compose))
        params = seeded_against_torchvision(compose, range(10))
        assert {p["rotation"] == 0.0 for p in params} == {True, False}, params
        affine = module.Compose([
            module.RandomResizedCrop(64),
            module.RandomApply([module.RandomAffine(15, translate=(0.1, 0.1))], p=0.4),
            module.PILToTensor()])
        seeded_against_torchvision(affine, range(10))


def test_random_perspective_translates_after_the_rotation_in_v1_and_v2():
    for module in (T, v2):
        t = gpuprep.from_torchvision(module.Compose([
            module.RandomRotation(10), module.RandomPerspective(0.4, p=0.3, fill=2)]))
        assert ("RandomPerspective(distortion_scale=0.4, p=0.3, interpolation=bilinear, "
                "fill=[2, 2, 2])") in repr(t)
    seeded_against_torchvision(T.Compose([
        T.RandomResizedCrop(80), T.RandomHorizontalFlip(), T.RandAugment(),
        T.RandomPerspective(0.5, p=0.7), T.ColorJitter(0.3, 0.3), T.PILToTensor()]), range(6))
    refused(T.Compose([T.RandomPerspective(), T.RandomHorizontalFlip()]),
            "RandomHorizontalFlip after RandomPerspective", "gpuprep flips before")
    refused(T.Compose([T.RandomPerspective(), T.RandomPerspective()]),
            "RandomPerspective twice")
    refused(T.Compose([T.RandomPerspective(interpolation=T.InterpolationMode.BOX)]),
            "RandomPerspective(interpolation=BOX) is not supported")


def test_gaussian_blur_with_torchs_kernels_is_torchvisions():
    """GaussianBlur (SimCLR's, and the write-up's kernel_size 7), alone and in RandomApply after
    the colour steps: given torchvision_params' draws (torch's own kernels), torchvision's pixels
    on the CPU and, where there is one, the GPU."""
    simclr = T.Compose([T.RandomResizedCrop(64), T.RandomHorizontalFlip(),
                        T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8),
                        T.RandomGrayscale(0.2), T.RandomApply([T.GaussianBlur(23)], p=0.5),
                        T.ToTensor(), T.Normalize(MEAN, STD)])
    t = gpuprep.from_torchvision(simclr)
    assert "RandomApply([GaussianBlur(kernel_size=(23, 23), sigma=(0.1, 2.0))], p=0.5)" in repr(t)
    drawn = seeded_against_torchvision(simclr, range(12))
    assert {params["blur"] is None for params in drawn} == {True, False}
    for compose in (T.Compose([T.CenterCrop(48), T.GaussianBlur(7, sigma=(0.5, 3.0)),
                               T.PILToTensor()]),
                    T.Compose([T.Resize(40), T.GaussianBlur((5, 9), sigma=1.5),
                               T.PILToTensor()])):
        for params in seeded_against_torchvision(compose, range(6)):
            assert len(params["blur"]["kernel_x"]) == compose.transforms[1].kernel_size[0]
    refused(T.Compose([T.GaussianBlur(3), T.RandomHorizontalFlip()]),
            "RandomHorizontalFlip after a later step")
    # transforms.v2's: its kernels a softmax, recorded as torch makes them; its blur v1's.
    v2_blur = v2.Compose([v2.CenterCrop(48), v2.GaussianBlur((9, 5), sigma=(0.3, 3.0)),
                          v2.PILToTensor()])
    assert "GaussianBlur(kernel_size=(9, 5), sigma=(0.3, 3.0), v2=True)" in repr(
        gpuprep.from_torchvision(v2_blur))
    for params in seeded_against_torchvision(v2_blur, range(6)):
        assert len(params["blur"]["kernel_x"]) == 9
    refused(T.Compose([T.RandomApply([T.GaussianBlur(3), T.ColorJitter(0.1)])]),
            "RandomApply([GaussianBlur, ColorJitter]) is not supported")


def test_gaussian_blur_drawn_by_gpuprep_is_torchs_blur_with_its_recorded_kernels():
    """Drawn by gpuprep (kernels of torchvision's formula, each exp correctly rounded), the blur
    is torch's conv2d of the reflect-padded image with the recorded kernels, bit for bit."""
    t = gpuprep.Transform().resize((48, 64)).gaussian_blur((23, 5), (0.1, 4.0)).to("uint8", "hwc")
    for seed in range(4):
        batch, outcomes = gpuprep.Pipeline("cpu").preprocess(PHOTOS, t.with_seed(seed))
        for image, path, outcome in zip(batch, PHOTOS, outcomes):
            blur = outcome["params"]["blur"]
            resized = Image.open(path).convert("RGB").resize((64, 48), Image.BILINEAR)
            pixels = torch.from_numpy(np.array(resized)).permute(2, 0, 1).float()[None]
            kernel = torch.outer(torch.tensor(blur["kernel_y"]), torch.tensor(blur["kernel_x"]))
            padded = torch.nn.functional.pad(pixels, [11, 11, 2, 2], mode="reflect")
            blurred = torch.nn.functional.conv2d(padded, kernel.expand(3, 1, 5, 23), groups=3)
            expected = blurred[0].round().to(torch.uint8).permute(1, 2, 0).numpy()
            assert np.array_equal(image, expected), (path, seed)


def test_refusals_are_gpuprep_errors_raised_by_from_torchvision():
    tv_tensors = pytest.importorskip("torchvision.tv_tensors")
    nearest_exact = T.InterpolationMode.NEAREST_EXACT
    composes = [
        T.Compose([T.Resize(512), T.Resize(256)]),
        T.Compose([T.RandomHorizontalFlip(1.0), T.RandomHorizontalFlip(1.0)]),
        T.Compose([T.ColorJitter(0.4), T.ColorJitter(0.4)]),
        T.Compose([T.Resize(256, interpolation=nearest_exact)]),
        T.Compose([T.Resize(256), T.RandomResizedCrop(224)]),
        v2.Compose([v2.Resize(256, antialias=False)]),
        v2.Compose([v2.ToImage(), v2.Resize(256)]),
        T.Compose([T.PILToTensor(), T.Normalize(MEAN, STD)]),
        T.Compose([T.CenterCrop(224), T.Normalize(MEAN, STD)]),
        T.Compose([T.ToTensor(), T.Normalize((0.5,), (0.0,))]),
        T.Compose([T.PILToTensor(), T.RandomErasing(value="random")]),
        T.Compose([T.CenterCrop(8), T.RandomErasing()]),
        T.Compose([T.PILToTensor(), T.RandomErasing(value=0.5)]),
        T.Compose([T.RandomRotation(10), T.TrivialAugmentWide()]),
        T.Compose([T.RandomRotation(10, fill=300)]),
        T.Compose([T.ToTensor(), T.ConvertImageDtype(torch.float64)]),
        T.Compose([T.ToTensor(), T.ToTensor()]),
        v2.Compose([v2.CenterCrop(8), v2.ToDtype(torch.float16, scale=True)]),
        v2.Compose([v2.ToImage(), v2.ToDtype({tv_tensors.Image: torch.float16, "others": None},
                                             scale=True)]),
        v2.Compose([v2.ToImage(), v2.ToDtype(torch.float16)]),
        T.Compose([T.Compose([T.Resize(256), T.ElasticTransform()])]),
        T.Compose([T.RandomApply([T.ColorJitter(0.4), T.RandomGrayscale()], p=0.5)]),
        v2.RandomChoice([v2.RandomHorizontalFlip(), v2.RandomVerticalFlip()]),
        T.Compose([T.ElasticTransform()]),
        T.Compose([T.RandomPosterize(9)]),
        v2.Compose([v2.RandomSolarize(float("nan"))]),
        T.Compose([T.RandomAdjustSharpness(2.0, p=1.5)]),
        T.Compose([T.ToTensor(), T.RandomEqualize()]),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        composes.append(T.Compose([T.RandomResizedCrop(224, scale=(0.9, 0.1))]))
    timm_erasing = None
    try:
        import timm.data.random_erasing as timm_erasing
    except ImportError:
        pass
    if timm_erasing is not None:
        composes.append(T.Compose([T.PILToTensor(), timm_erasing.RandomErasing(
            probability=0.25, mode="pixel", device="cpu")]))
        composes.append(T.Compose([timm_erasing.RandomErasing(probability=0.25, device="cpu")]))
    for compose in composes:
        with pytest.raises(gpuprep.GpuprepError) as caught:
            gpuprep.from_torchvision(compose)
        assert isinstance(caught.value, gpuprep.OptionsError), (compose, caught.value)


# A value of each argument the crate's table of single-operation transforms names.
ARGUMENTS = {"bits": 3, "threshold": 100.5, "sharpness_factor": 2.0}


def single_operations(module, p):
    """`module`'s (transforms' or v2's) single-operation transforms, as the crate's table lists
    them, each with probability p."""
    return [getattr(module, torchvision)(*([ARGUMENTS[argument[0]]] if argument else []), p=p)
            for torchvision, _method, _summary, argument in gpuprep._gpuprep.color_operations()]


def test_single_operation_transforms_give_torchvisions_pixels():
    for module, to_tensor in ((T, T.PILToTensor()), (v2, v2.ToImage())):
        for step in single_operations(module, 1.0):
            compose = module.Compose([module.CenterCrop(96), step, to_tensor])
            for image, path in zip(outputs(gpuprep.from_torchvision(compose)), PHOTOS):
                assert np.array_equal(image, torchvision_output(compose, path)), (step, path)
    # In the Compose's order, which matters, after RandomGrayscale.
    compose = T.Compose([T.CenterCrop(96), T.RandomGrayscale(0.0), T.RandomSolarize(128, p=1.0),
                         T.RandomPosterize(2, p=1.0), T.PILToTensor()])
    t = gpuprep.from_torchvision(compose)
    assert "RandomSolarize(threshold=128, p=1), RandomPosterize(bits=2, p=1)" in repr(t)
    for image, path in zip(outputs(t), PHOTOS):
        assert np.array_equal(image, torchvision_output(compose, path)), path


def test_flips_after_the_colour_steps_that_commute_with_them_give_torchvisions_pixels():
    # Every colour step but sharpness changes a pixel alone or through the image's histogram, so
    # gpuprep's flip before them is torchvision's after them, bit for bit.
    commuting = [step for step in single_operations(T, 1.0)
                 if type(step).__name__ != "RandomAdjustSharpness"]
    compose = T.Compose([T.CenterCrop(96), T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(1.0),
                         T.RandomHorizontalFlip(1.0), *commuting, T.RandomVerticalFlip(1.0),
                         T.PILToTensor()])
    t = gpuprep.from_torchvision(compose)
    p = gpuprep.Pipeline("cpu")
    for seed, path in enumerate(PHOTOS):
        torch.manual_seed(seed)
        expected = torchvision_output(compose, path)
        torch.manual_seed(seed)
        params = gpuprep.torchvision_params(compose, Image.open(path).size)
        assert params["flip"] and params["vflip"] and params["grayscale"]
        batch, _ = p.preprocess([path], t, params=[params])
        assert np.array_equal(batch[0], expected), (path, params)


def test_single_operation_transforms_are_refused_where_gpuprep_cannot_put_them():
    names = [torchvision for torchvision, *_ in gpuprep._gpuprep.color_operations()]
    refused(T.Compose([T.RandomPosterize(3), T.Resize(40)]), "Resize after a later step", *names)
    refused(T.Compose([T.PILToTensor(), T.RandomAutocontrast()]),
            "RandomAutocontrast after PILToTensor()")
    refused(T.Compose([T.RandomAdjustSharpness(2.0), T.RandomEqualize(), T.RandomVerticalFlip()]),
            "RandomVerticalFlip after RandomAdjustSharpness", "do not commute")
    refused(T.Compose([T.RandomPosterize(9)]), "RandomPosterize", "bits", "0 to 8")
    refused(T.Compose([T.RandomEqualize(), T.RandomEqualize()]), "RandomEqualize twice")


@pytest.mark.parametrize("module", [T, v2], ids=["v1", "v2"])
def test_with_torchs_seed_single_operation_transforms_are_torchvisions(module):
    """Whether each applies, as torchvision draws it after torch.manual_seed (v1's
    `rand < p`, v2's `rand >= p` to skip), through torchvision_params and params=."""
    if module is T:  # with v1's other draws before them
        steps = [T.RandomResizedCrop(64), T.RandomHorizontalFlip(), T.RandomGrayscale(0.3)]
        to_tensor = T.PILToTensor()
    else:
        steps, to_tensor = [v2.CenterCrop(64)], v2.ToImage()
    compose = module.Compose([*steps, *single_operations(module, 0.5), to_tensor])
    transform = gpuprep.from_torchvision(compose)
    p = gpuprep.Pipeline("cpu")
    seen = set()
    for seed in range(24):
        path = PHOTOS[seed % len(PHOTOS)]
        image = Image.open(path).convert("RGB")
        torch.manual_seed(seed)
        expected = torchvision_output(compose, path)
        torch.manual_seed(seed)
        params = gpuprep.torchvision_params(compose, image.size)
        seen.update(params["color_ops"].items())
        batch, _ = p.preprocess([path], transform, params=[params])
        assert np.array_equal(batch[0], expected), (path, seed, params)
    assert len(seen) == 2 * len(gpuprep._gpuprep.color_operations()), seen
