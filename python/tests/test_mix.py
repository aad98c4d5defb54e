"""MixUp and CutMix (torchvision's v2 and timm's Mixup) as the Loader's batch transform: exact
against goldens from the real libraries (tests/goldens/mix.json, made by tools/mix_goldens.py),
against the libraries themselves where torch is installed, and through the Loader."""
import json
import os

import numpy as np
import pytest

import gpuprep
from gpuprep import _mix

from support import ROOT
from test_contract import image_folder

GOLDENS = os.path.join(ROOT, "tests", "goldens")


def golden_cases():
    with open(os.path.join(GOLDENS, "mix.json")) as f:
        cases = json.load(f)
    return cases["cases"], np.load(os.path.join(GOLDENS, "mix.npz"))


def ours(case):
    if case["library"] == "timm":
        return gpuprep.TimmMixup(**case["args"])
    kind = gpuprep.MixUp if case["kind"] == "mixup" else gpuprep.CutMix
    return kind(num_classes=5, **case["args"])


def test_goldens_cover_every_mode_and_type():
    cases, _ = golden_cases()
    kinds = {(c["kind"], c["args"].get("mode"), c["dtype"], c["layout"]) for c in cases}
    for mode in ("batch", "pair", "elem"):
        assert ("timm", mode, "float16", "chw") in kinds and ("timm", mode, "float32", "hwc") in kinds
    assert {("mixup", None, "float16", "chw"), ("cutmix", None, "uint8", "chw"),
            ("cutmix", None, "float32", "hwc")} <= kinds
    # The cases draw what they are there for: CutMix and MixUp rows, unmixed ones (prob 0.5).
    timm = [c["params"] for c in cases if c["kind"] == "timm"]
    flags = [f for p in timm for f in (p["cutmix"] if isinstance(p["cutmix"], list)
                                       else [p["cutmix"]])]
    assert True in flags and False in flags
    assert any(1.0 in (p["lam"] if isinstance(p["lam"], list) else [p["lam"]]) for p in timm)


@pytest.mark.parametrize("case", golden_cases()[0], ids=lambda c: c["name"])
def test_numpy_arithmetic_is_the_libraries_bit_for_bit(case):
    """Replayed with numpy (no torch): every bit of the images and soft labels the real library
    gave for these parameters; and gpuprep's draw from the case's seed gives these parameters
    (for timm, the ones timm drew itself from numpy's RNG seeded so)."""
    _, arrays = golden_cases()
    chw = {"float32": np.float32, "float16": np.float16, "uint8": np.uint8}[case["dtype"]]
    transform = ours(case)
    images = arrays[case["name"] + ".images"]
    assert images.dtype == chw
    before = _golden_input(case, arrays)
    height, width = _mix._spatial(before.shape, case["layout"])
    params = transform.draw(np.random.RandomState(case["seed"]), 8, height, width)
    assert params == case["params"]
    mixed, targets = transform.apply(params, before, arrays["labels"], case["layout"])
    assert mixed.dtype == images.dtype and targets.dtype == np.float32
    assert mixed.tobytes() == images.tobytes()
    assert targets.tobytes() == arrays[case["name"] + ".targets"].tobytes()


def _golden_input(case, arrays):
    """The batch the case started from."""
    batch = arrays["input." + case["dtype"]]
    return batch if case["layout"] == "chw" else batch.transpose(0, 2, 3, 1).copy()


def test_the_libraries_live_on_random_batches():
    """Where torch, torchvision and timm are installed: torch's arithmetic (gpuprep on torch
    tensors, on the CPU and CUDA) and numpy's all give the CPU libraries' bits, over many seeds
    and batches."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    timm_mixup = pytest.importorskip("timm.data").Mixup
    from torchvision.transforms import v2
    rng = np.random.RandomState(5)
    for seed in range(40):
        dtype = [np.float32, np.float16][seed % 2]
        x = (rng.standard_normal((6, 3, 9, 7)) * 2).astype(dtype)
        y = rng.randint(0, 10, 6)
        for real in (v2.MixUp(alpha=0.3, num_classes=10), v2.CutMix(alpha=1.0, num_classes=10)):
            mine = gpuprep.from_torchvision(real)
            params = mine.draw(np.random.RandomState(seed), 6, 9, 7)
            labels = torch.from_numpy(y)  # torchvision tells the labels by identity
            given = {**params, "labels": labels, "batch_size": 6}
            want = (real.transform(torch.from_numpy(x), given), real.transform(labels, given))
            for got in applied(mine, params, x, y, torch):
                for a, b in zip(got, want):
                    assert a.tobytes() == b.numpy().tobytes()
        mode = ["batch", "pair", "elem"][seed % 3]
        real = timm_mixup(mixup_alpha=0.8, cutmix_alpha=1.0, mode=mode, prob=0.8,
                          num_classes=10)
        mine = gpuprep.from_torchvision(real)
        np.random.seed(seed)
        want = real(torch.from_numpy(x.copy()), torch.from_numpy(y))
        params = mine.draw(np.random.RandomState(seed), 6, 9, 7)
        for got in applied(mine, params, x, y, torch):
            for a, b in zip(got, want):
                assert a.tobytes() == b.numpy().tobytes()


def applied(mine, params, x, y, torch):
    """`mine` applied with numpy, with torch on the CPU and, where there is one, on CUDA."""
    yield mine.apply(params, x, y)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        images, labels = mine.apply(params, torch.from_numpy(x).to(device), torch.from_numpy(y))
        assert images.device.type == labels.device.type == device
        yield images.cpu().numpy(), labels.cpu().numpy()


def test_reference_recipes_translate():
    """torchvision's reference recipe (RandomChoice of MixUp and CutMix, v2) and timm's Mixup
    translate; what gpuprep cannot run is refused by name."""
    pytest.importorskip("torchvision")
    from torchvision.transforms import v2
    choice = gpuprep.from_torchvision(v2.RandomChoice([v2.MixUp(alpha=0.2, num_classes=1000),
                                                       v2.CutMix(alpha=1.0, num_classes=1000)]))
    assert isinstance(choice, gpuprep.RandomChoice) and choice.p == [0.5, 0.5]
    assert [type(t) for t in choice.transforms] == [gpuprep.MixUp, gpuprep.CutMix]
    with pytest.raises(gpuprep.OptionsError, match="num_classes=None"):
        gpuprep.from_torchvision(v2.MixUp(alpha=0.2))
    with pytest.raises(gpuprep.OptionsError, match="RandomChoice is not supported"):
        gpuprep.from_torchvision(v2.RandomChoice([v2.RandomHorizontalFlip()]))


def test_options_are_checked():
    with pytest.raises(gpuprep.OptionsError, match="alpha is a number above 0.0"):
        gpuprep.MixUp(alpha=0, num_classes=3)
    with pytest.raises(gpuprep.OptionsError, match="num_classes is a positive int"):
        gpuprep.CutMix(alpha=1.0, num_classes=0)
    with pytest.raises(TypeError, match="num_classes"):
        gpuprep.CutMix(alpha=1.0)  # torchvision's too needs it for class indices
    with pytest.raises(gpuprep.OptionsError, match="prob is a number"):
        gpuprep.TimmMixup(prob=None)
    with pytest.raises(gpuprep.OptionsError, match="cutmix_minmax is \\(min, max\\)"):
        gpuprep.TimmMixup(cutmix_minmax=(0.2, 0.5, 0.8))
    with pytest.raises(gpuprep.OptionsError, match="p holds"):
        gpuprep.RandomChoice([gpuprep.MixUp(num_classes=3)], p=["x"])
    # numpy's numbers are numbers, as torchvision and timm take them.
    assert gpuprep.MixUp(alpha=np.float32(0.5), num_classes=np.int64(3)).num_classes == 3
    with pytest.raises(gpuprep.OptionsError, match="a batch of float64"):
        gpuprep.MixUp(num_classes=3).apply({"lam": 0.5}, np.zeros((2, 3, 4, 4)), [0, 1])
    with pytest.raises(gpuprep.OptionsError, match="a batch of uint8"):
        gpuprep.MixUp(num_classes=3).apply({"lam": 0.5}, np.zeros((2, 3, 4, 4), np.uint8), [0, 1])
    with pytest.raises(gpuprep.OptionsError, match="mode is"):
        gpuprep.TimmMixup(mode="row")
    with pytest.raises(gpuprep.OptionsError, match="must be positive"):
        gpuprep.TimmMixup(mixup_alpha=0.0)
    with pytest.raises(gpuprep.OptionsError, match="RandomChoice takes"):
        gpuprep.RandomChoice([gpuprep.Transform()])


def test_the_loader_mixes_each_batch_exactly_and_records_how(tmp_path):
    """Loader(batch_transform=...): soft labels (batch, classes), the parameters in each batch's
    "mix", and each batch the transform's replay of the unmixed loader's batch; every epoch and
    batch its own draw, the same again for the same seed."""
    root = image_folder(tmp_path)
    transform = gpuprep.Transform().resize(12).center_crop(10).to_tensor()
    mix = gpuprep.RandomChoice([gpuprep.MixUp(alpha=0.4, num_classes=3), gpuprep.CutMix(alpha=1.0, num_classes=3)])
    options = dict(batch_size=4, shuffle=True, seed=3, backend="cpu", wait_warning=None)
    plain = gpuprep.Loader(root, transform, **options)
    mixed = gpuprep.Loader(root, transform, batch_transform=mix, **options)
    seen = []
    for epoch in range(2):
        plain.set_epoch(epoch)
        mixed.set_epoch(epoch)
        for raw, batch in zip(plain.batches(), mixed.batches()):
            images, labels = batch["images"], batch["labels"]
            assert labels.shape == (len(raw["labels"]), 3) and labels.dtype == np.float32
            want = mix.apply(batch["mix"], raw["images"], raw["labels"])
            assert images.tobytes() != raw["images"].tobytes()
            assert images.tobytes() == want[0].tobytes() and labels.tobytes() == want[1].tobytes()
            np.testing.assert_allclose(labels.sum(1), 1.0, rtol=1e-6)
            seen.append(json.dumps(batch["mix"]))
    assert len(set(seen)) == len(seen)
    assert {json.loads(s)["choice"] for s in seen} == {0, 1}
    again = gpuprep.Loader(root, transform, batch_transform=mix, **options)
    assert [json.dumps(b["mix"]) for b in again.batches()] == seen[:len(again)]


def test_the_loader_refuses_what_it_cannot_mix(tmp_path):
    root = image_folder(tmp_path)
    small = gpuprep.Transform().resize(12).center_crop(10)
    with pytest.raises(gpuprep.OptionsError, match="gives uint8"):
        gpuprep.Loader(root, small, batch_size=4, batch_transform=gpuprep.MixUp(alpha=1.0, num_classes=3))
    gpuprep.Loader(root, small, batch_size=4, backend="cpu",
                   batch_transform=gpuprep.CutMix(alpha=1.0, num_classes=3))  # copies values: uint8 is fine
    with pytest.raises(gpuprep.OptionsError, match="even batch_size, and drop_last=True unless"):
        gpuprep.Loader(root, small.to_tensor(), batch_size=5,
                       batch_transform=gpuprep.TimmMixup(num_classes=3))
    with pytest.raises(gpuprep.OptionsError, match="drop_last=True unless every batch is full"):
        gpuprep.Loader(root, small.to_tensor(), batch_size=4, errors="skip",
                       batch_transform=gpuprep.TimmMixup(num_classes=3))
    # 12 samples in batches of 4: every batch full, as timm needs.
    gpuprep.Loader(root, small.to_tensor(), batch_size=4,
                   batch_transform=gpuprep.TimmMixup(num_classes=3))
    with pytest.raises(gpuprep.OptionsError, match="3 classes, and the batch transform's 2"):
        gpuprep.Loader(root, small, batch_size=4, batch_transform=gpuprep.CutMix(num_classes=2))
    with pytest.raises(gpuprep.OptionsError, match="cutmix_minmax"):
        gpuprep.Loader(root, small.to_tensor(), batch_size=4, drop_last=True,
                       batch_transform=gpuprep.TimmMixup(cutmix_minmax=(0.4, 0.45),
                                                         num_classes=3))
    with pytest.raises(gpuprep.OptionsError, match="batch_transform is gpuprep's"):
        gpuprep.Loader(root, small, batch_size=4, batch_transform=lambda x, y: (x, y))
    files = [os.path.join(root, "cat", f) for f in sorted(os.listdir(os.path.join(root, "cat")))]
    with pytest.raises(gpuprep.OptionsError, match="list of image files has no labels"):
        gpuprep.Loader(files, small.to_tensor(), batch_size=2, backend="cpu",
                       batch_transform=gpuprep.MixUp(alpha=1.0, num_classes=3))
    mix = gpuprep.MixUp(num_classes=3)
    with pytest.raises(gpuprep.LabelError, match="has label -1 \\(no label"):
        mix(np.zeros((2, 3, 4, 4), np.float32), np.array([0, -1]))


def test_timms_switch_off_reaches_the_loader():
    """timm's train loop stops mixing at mixup_off_epoch with `mixup_fn.mixup_enabled = False`:
    the translated transform follows timm's object."""
    timm_data = pytest.importorskip("timm.data")
    timms = timm_data.Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, num_classes=4, mode="elem")
    mix = gpuprep.from_torchvision(timms)
    assert mix.draw(np.random.RandomState(1), 4, 8, 8)["lam"] != [1.0] * 4
    timms.mixup_enabled = False
    assert mix.draw(np.random.RandomState(1), 4, 8, 8)["lam"] == [1.0] * 4
    mix.mixup_enabled = True
    assert timms.mixup_enabled


def test_iterating_gives_torch_soft_labels(tmp_path):
    torch = pytest.importorskip("torch")
    root = image_folder(tmp_path)
    transform = gpuprep.Transform().resize(12).center_crop(10).to_tensor()
    loader = gpuprep.Loader(root, transform, batch_size=4, drop_last=True, backend="cpu",
                            wait_warning=None,
                            batch_transform=gpuprep.TimmMixup(cutmix_alpha=1.0, num_classes=3))
    for images, labels in loader:
        assert isinstance(images, torch.Tensor) and labels.dtype == torch.float32
        assert labels.shape == (4, 3)
        raw = loader.last
        assert "mix" in raw and raw["mix"]["kind"] == "timm"
