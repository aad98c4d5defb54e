"""The Python package against Pillow + torchvision's arithmetic (tools/pillow_reference.py, the
script the Rust goldens come from) and the loader's contract, on the CPU backend and, where a GPU
adapter opens (lavapipe in CI), on the GPU."""
import json
import os
import sys

import numpy as np
import pytest

import gpuprep

from support import BACKENDS, PHOTOS, ROOT, pipeline
import pillow_reference  # after support, which puts tools/ on the path


TRAIN_SPEC = {"random_resized_crop": {"size": [224, 224]}, "hflip": 0.5,
              "color_jitter": [0.4, 0.4, 0.4, 0.1], "grayscale": 0.2,
              "normalize": "imagenet", "dtype": "f32", "layout": "chw", "seed": 3}


def train_transform():
    return (gpuprep.Transform.imagenet_train().color_jitter(0.4, 0.4, 0.4, 0.1).grayscale(0.2)
            .with_seed(3))


@pytest.mark.parametrize("backend", BACKENDS)
def test_eval_preset_equals_pillow_and_torchvision(backend):
    batch, outcomes = pipeline(backend).preprocess(PHOTOS, gpuprep.Transform.imagenet_eval())
    assert batch.shape == (len(PHOTOS), 3, 224, 224) and batch.dtype == np.float32
    spec = {"resize": "short:256", "crop": [224, 224], "normalize": "imagenet", "dtype": "f32",
            "layout": "chw"}
    for image, path in zip(batch, PHOTOS):
        assert np.array_equal(image, pillow_reference.transformed(path, spec))
    assert all(o["ok"] for o in outcomes)


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_samples_equal_pillow_with_their_parameters(backend):
    indices = [5, 0, 17, 2, 9, 11]
    batch, outcomes = pipeline(backend).preprocess(PHOTOS, train_transform(), indices=indices)
    for image, path, index, outcome in zip(batch, PHOTOS, indices, outcomes):
        expected = pillow_reference.transformed(path, TRAIN_SPEC, index=index)
        assert np.array_equal(image, expected), path
        size = pillow_reference.Image.open(path).size
        assert outcome["params"] == json.loads(json.dumps(pillow_reference.draw(TRAIN_SPEC, size, index)))


def test_bytes_paths_and_arrays_give_the_same_tensor():
    p = gpuprep.Pipeline("cpu")
    t = gpuprep.Transform().resize((48, 64))
    with open(PHOTOS[0], "rb") as f:
        blob = f.read()
    pixels = np.asarray(pillow_reference.Image.open(PHOTOS[0]).convert("RGB"))
    batch, _ = p.preprocess([blob, PHOTOS[0], pixels], t)
    assert batch.shape == (3, 48, 64, 3)
    assert np.array_equal(batch[0], batch[1]) and np.array_equal(batch[0], batch[2])


def test_bad_images_raise_their_kind_or_are_left_out():
    p = gpuprep.Pipeline("cpu")
    with open(PHOTOS[0], "rb") as f:
        cut = f.read()[:2000]
    with pytest.raises(gpuprep.TruncatedError):
        p.preprocess([cut], gpuprep.Transform.imagenet_eval())
    with pytest.raises(gpuprep.DecodeError):
        p.preprocess([b"not an image at all"], gpuprep.Transform.imagenet_eval())
    batch, outcomes = p.preprocess([PHOTOS[0], cut], gpuprep.Transform.imagenet_eval(),
                                   errors="skip")
    assert batch.shape[0] == 1
    assert [o["ok"] for o in outcomes] == [True, False]
    assert outcomes[1]["kind"] == "TruncatedError"
    with pytest.raises(gpuprep.OptionsError):
        gpuprep.Transform().interpolation("sharpest")


def image_folder(tmp_path):
    for i, path in enumerate(PHOTOS):
        for copy in range(2):
            cls = ["cat", "dog", "emu"][(i + copy) % 3]
            os.makedirs(tmp_path / cls, exist_ok=True)
            with open(path, "rb") as f, open(tmp_path / cls / f"{copy}-{i}.jpg", "wb") as out:
                out.write(f.read())
    return tmp_path


@pytest.mark.parametrize("backend", BACKENDS)
def test_loader_splits_epochs_and_equals_single_images(tmp_path, backend):
    pipeline(backend)  # skips where no GPU opens and that is allowed
    root = image_folder(tmp_path)
    n = 2 * len(PHOTOS)
    seen = {}
    for epoch in range(2):
        everything = []
        for rank in range(2):
            loader = gpuprep.Loader(str(root), train_transform(), batch_size=4, shuffle=True,
                                    seed=3, rank=rank, world_size=2, backend=backend)
            loader.set_epoch(epoch)
            assert len(loader) == -(-n // 2 // 4)
            assert loader.classes == ["cat", "dog", "emu"]
            for batch in loader.batches():
                assert batch["images"].shape[1:] == (3, 224, 224)
                everything.extend(batch["indices"].tolist())
                seen[(epoch, rank)] = batch
        assert sorted(everything) == list(range(n))
    # A step's stats hold the epoch so far: on the GPU its stream's submissions (the one that
    # made this batch included), their packing and landing, and what the stream waited for.
    stats = seen[(1, 1)]["stats"]
    waited = stats["epoch_stream_waited_s"]
    assert set(waited) == {"samples", "decoding", "buffers", "consumer", "gpu"}
    assert stats["images_per_second"] > 0 and 0 <= stats["epoch_data_wait_share"] <= 1
    streamed = [stats["epoch_submissions"], stats["epoch_packing_s"], stats["epoch_landing_s"],
                waited["gpu"]]
    if backend == "gpu":
        assert all(x > 0 for x in streamed), stats
    else:
        assert streamed == [0, 0, 0, 0] and not any(waited.values()), stats
    # Sample k of epoch e is exactly the transform's sample k with epoch e.
    batch = seen[(1, 0)]
    files = sorted((str(p) for p in root.rglob("*.jpg")))
    p = gpuprep.Pipeline("cpu")
    for image, index, params in zip(batch["images"], batch["indices"], batch["params"]):
        cls_sorted = sorted(files, key=lambda f: (os.path.basename(os.path.dirname(f)), f))
        path = cls_sorted[index]
        spec = dict(TRAIN_SPEC, epoch=1)
        assert np.array_equal(image, pillow_reference.transformed(path, spec, index=int(index)))


RANK_SCRIPT = """
import sys
import numpy as np
import gpuprep
root, rank, out, backend = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
t = (gpuprep.Transform.imagenet_train().color_jitter(0.4, 0.4, 0.4, 0.1).grayscale(0.2)
     .with_seed(3))
loader = gpuprep.Loader(root, t, batch_size=3, shuffle=True, seed=3, rank=rank, world_size=2,
                        backend=backend, pin_memory=False)
loader.set_epoch(1)
batches = list(loader.batches())
np.savez(out, indices=np.concatenate([b["indices"] for b in batches]),
         images=np.concatenate([b["images"] for b in batches]), threads=loader.threads)
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_ranks_sharing_a_device_split_the_epoch_as_one_rank_at_a_time(tmp_path, backend):
    """Two rank processes at once on the one GPU (as torchrun starts them, LOCAL_WORLD_SIZE=2):
    each decodes on its share of the cores, their samples cover the epoch once, and each
    rank's batches are the bits that rank makes alone."""
    import subprocess
    pipeline(backend)
    root = str(image_folder(tmp_path / "data"))
    env = {k: v for k, v in os.environ.items() if k != "RAYON_NUM_THREADS"}
    env["LOCAL_WORLD_SIZE"] = "2"
    outs = [str(tmp_path / f"rank{r}.npz") for r in range(2)]
    ranks = [subprocess.Popen([sys.executable, "-c", RANK_SCRIPT, root, str(r), outs[r], backend],
                              env=env) for r in range(2)]
    assert [p.wait(timeout=600) for p in ranks] == [0, 0]
    got = [np.load(out) for out in outs]
    assert [int(g["threads"]) for g in got] == [max(1, os.cpu_count() // 2)] * 2
    everything = np.concatenate([g["indices"] for g in got]).tolist()
    assert sorted(everything) == list(range(2 * len(PHOTOS)))
    for rank, g in enumerate(got):
        alone = gpuprep.Loader(root, train_transform(), batch_size=3, shuffle=True, seed=3,
                               rank=rank, world_size=2, backend=backend, pin_memory=False)
        alone.set_epoch(1)
        batches = list(alone.batches())
        assert g["indices"].tolist() == np.concatenate([b["indices"] for b in batches]).tolist()
        assert np.array_equal(g["images"], np.concatenate([b["images"] for b in batches]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_loader_batches_held_keep_their_memory(tmp_path, backend):
    """A batch's arrays are the loader's own memory, handed over without a copy: one held (or a
    view of it) is left as it was while later epochs land in the arrays dropped ones gave back."""
    pipeline(backend)
    loader = gpuprep.Loader(str(image_folder(tmp_path)), train_transform(), batch_size=2,
                            shuffle=True, seed=3, backend=backend, pin_memory=False)
    assert loader.memory == "pageable host memory"
    held = list(loader.batches())
    views = [batch["images"][1] for batch in held]
    copies = [batch["images"].copy() for batch in held]
    del held
    for epoch in (1, 2, 3):
        loader.set_epoch(epoch)
        for batch in loader.batches():
            assert batch["images"].flags.writeable and batch["images"].dtype == np.float32
    for view, copy in zip(views, copies):
        assert np.array_equal(view, copy[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_loader_on_cuda_is_the_host_paths_bits_wherever_it_lands(tmp_path, backend):
    """device="cuda": where CUDA cannot take the batches in place (CI: no CUDA driver; the CPU
    backend) they come in host memory and the loader says why; where it can (an NVIDIA GPU
    through Vulkan, with torch) they are CUDA tensors in the loader's own memory. Either way the
    bits are the host path's, batch for batch, on any stream. Where torch has no CUDA at all,
    device="cuda" raises, as torch does for a CUDA tensor (the Rust loader tests keep the
    host fallback's bits there)."""
    pipeline(backend)
    root = str(image_folder(tmp_path))
    make = lambda **kw: gpuprep.Loader(root, train_transform(), batch_size=3, shuffle=True,
                                       seed=3, backend=backend, **kw)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        # gpuprep's refusal without torch, or torch's own (a CUDA build without a driver says
        # so in its words).
        with pytest.raises((gpuprep.OptionsError, RuntimeError, AssertionError),
                           match="CUDA|NVIDIA driver"):
            make(device="cuda")
        return
    expected = [(b["indices"].tolist(), b["images"].copy()) for b in make(pin_memory=False).batches()]
    cuda = make(device="cuda")
    if cuda.handed_over.startswith("host memory"):
        assert cuda.handed_over.startswith("host memory (") and cuda.handed_over.endswith(")")
        got = [(b["indices"].tolist(), b["images"]) for b in cuda.batches()]
    else:
        torch = pytest.importorskip("torch")
        assert cuda.handed_over.startswith("CUDA memory of device")
        side = torch.cuda.Stream()
        got = []
        with torch.cuda.stream(side):
            for images, labels in cuda:
                assert images.is_cuda and labels.is_cuda
                got.append((cuda.last["indices"].tolist(), (images * 1).cpu().numpy()))
    assert len(got) == len(expected)
    for (indices, images), (want_indices, want) in zip(got, expected):
        assert indices == want_indices and np.array_equal(images, want)


def test_loader_reads_webdataset_shards_with_labels():
    shards = os.path.join(ROOT, "tests", "data", "webdataset", "shard-*.tar")
    t = gpuprep.Transform().resize((16, 24))
    loader = gpuprep.Loader(shards, t, batch_size=3, backend="cpu", errors="skip")
    labels, failed = [], []
    with pytest.warns(RuntimeWarning, match="epoch 0: 1 sample\\(s\\) failed"):
        for batch in loader.batches():
            labels.extend(batch["labels"].tolist())
            failed.extend(batch["failed"])
    with open(os.path.join(ROOT, "tests", "data", "webdataset", "expected.json")) as f:
        expected = json.load(f)["samples"]
    assert labels == [s["label"] for s in expected if s["image"] is not None]
    assert [f[1] for f in failed] == ["TruncatedError"]
    assert loader.stats["epoch_failed"] == 1
    # By default, as DataLoader raises a worker's exception, the sample's own exception.
    with pytest.raises(gpuprep.TruncatedError, match="shard-000001.tar/sample1002"):
        for _ in gpuprep.Loader(shards, t, batch_size=3, backend="cpu"):
            pass


def test_loader_yields_torch_tensors_when_torch_is_there(tmp_path):
    torch = pytest.importorskip("torch")
    loader = gpuprep.Loader(str(image_folder(tmp_path)), gpuprep.Transform.imagenet_train(),
                            batch_size=4, backend="cpu")
    images, labels = next(iter(loader))
    assert isinstance(images, torch.Tensor) and images.shape == (4, 3, 224, 224)
    assert labels.dtype == torch.int64


def test_from_torchvision_translates_a_compose_and_refuses_others():
    T = pytest.importorskip("torchvision.transforms")
    compose = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                         T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.ToTensor(),
                         T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    t = gpuprep.from_torchvision(compose)
    assert t.output_size == (224, 224) and t.dtype == "float32" and t.is_random
    with pytest.raises(gpuprep.OptionsError, match="ElasticTransform is not supported"):
        gpuprep.from_torchvision(T.Compose([T.ElasticTransform()]))
    with pytest.raises(gpuprep.OptionsError, match="after"):
        gpuprep.from_torchvision(T.Compose([T.ColorJitter(0.4), T.RandomResizedCrop(224)]))
    with pytest.raises(gpuprep.OptionsError, match="gpuprep flips before the rotation"):
        gpuprep.from_torchvision(T.Compose([T.RandomRotation(10), T.RandomHorizontalFlip()]))
    bilinear = gpuprep.from_torchvision(T.Compose([T.RandomRotation(10, T.InterpolationMode.BILINEAR)]))
    assert "interpolation=bilinear" in repr(bilinear)
    with pytest.raises(gpuprep.OptionsError, match="NEAREST, BILINEAR and BICUBIC"):
        gpuprep.from_torchvision(T.Compose([T.RandomRotation(10, T.InterpolationMode.BOX)]))
    rotated = gpuprep.from_torchvision(T.Compose([T.RandomHorizontalFlip(), T.RandomRotation(10),
                                                  T.ColorJitter(0.4)]))
    assert rotated.is_random
    with pytest.raises(gpuprep.OptionsError, match="NEAREST, BILINEAR and BICUBIC"):
        gpuprep.from_torchvision(T.Compose([T.TrivialAugmentWide(
            interpolation=T.InterpolationMode.HAMMING)]))
    assert gpuprep.from_torchvision(T.Compose([T.TrivialAugmentWide(), T.ToTensor()])).is_random


@pytest.mark.parametrize("backend", BACKENDS)
def test_with_torchs_seed_the_batches_are_torchvisions(backend):
    """torchvision's own pipeline on PIL images, after torch.manual_seed, against gpuprep given
    the parameters torchvision_params draws after the same seed."""
    torch = pytest.importorskip("torch")
    T = pytest.importorskip("torchvision.transforms")
    compose = T.Compose([T.RandomResizedCrop(160), T.RandomHorizontalFlip(), T.RandomVerticalFlip(),
                         T.RandomRotation(25, fill=[10, 20, 30]),
                         T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(0.3), T.ToTensor(),
                         T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
                         T.RandomErasing(0.7, value=0.5)])
    transform = gpuprep.from_torchvision(compose)
    p = pipeline(backend)
    for seed, path in enumerate(PHOTOS * 2):
        image = pillow_reference.Image.open(path).convert("RGB")
        torch.manual_seed(seed)
        expected = compose(image).numpy()
        torch.manual_seed(seed)
        params = gpuprep.torchvision_params(compose, image.size)
        batch, _ = p.preprocess([path], transform, params=[params])
        assert np.array_equal(batch[0], expected), (path, seed, params)


@pytest.mark.parametrize("backend", BACKENDS)
def test_with_torchs_seed_trivial_augment_is_torchvisions(backend):
    """TrivialAugmentWide as torchvision runs it on PIL images, after torch.manual_seed, against
    gpuprep given the operation and magnitude torchvision_params draws after the same seed."""
    torch = pytest.importorskip("torch")
    T = pytest.importorskip("torchvision.transforms")
    compose = T.Compose([T.RandomResizedCrop(96), T.RandomHorizontalFlip(),
                         T.TrivialAugmentWide(fill=[10, 20, 30]), T.PILToTensor()])
    transform = gpuprep.from_torchvision(compose)
    p = pipeline(backend)
    seen = set()
    for seed in range(48):
        path = PHOTOS[seed % len(PHOTOS)]
        image = pillow_reference.Image.open(path).convert("RGB")
        torch.manual_seed(seed)
        expected = compose(image).numpy()
        torch.manual_seed(seed)
        params = gpuprep.torchvision_params(compose, image.size)
        seen.add(params["augment"][0]["op"])
        batch, _ = p.preprocess([path], transform, params=[params])
        assert np.array_equal(batch[0], expected), (path, seed, params)
    assert len(seen) >= 12, seen


def policy_against_torchvision(backend, policy, seeds):
    """`policy` (RandAugment or AutoAugment) after a crop and flip, as torchvision runs it on PIL
    images after torch.manual_seed, against gpuprep given the operations torchvision_params draws
    after the same seed; the operations seen."""
    torch = pytest.importorskip("torch")
    T = pytest.importorskip("torchvision.transforms")
    compose = T.Compose([T.RandomResizedCrop(96), T.RandomHorizontalFlip(), policy,
                         T.PILToTensor()])
    transform = gpuprep.from_torchvision(compose)
    p = pipeline(backend)
    seen = set()
    for seed in seeds:
        path = PHOTOS[seed % len(PHOTOS)]
        image = pillow_reference.Image.open(path).convert("RGB")
        torch.manual_seed(seed)
        expected = compose(image).numpy()
        torch.manual_seed(seed)
        params = gpuprep.torchvision_params(compose, image.size)
        seen.update(op["op"] for op in params.get("augment", []))
        batch, _ = p.preprocess([path], transform, params=[params])
        assert np.array_equal(batch[0], expected), (path, seed, params)
    return seen


@pytest.mark.parametrize("backend", BACKENDS)
def test_with_torchs_seed_rand_augment_is_torchvisions(backend):
    T = pytest.importorskip("torchvision.transforms")
    strong = T.RandAugment(num_ops=4, magnitude=27, fill=[10, 20, 30])
    assert len(policy_against_torchvision(backend, strong, range(40))) == 14
    assert len(policy_against_torchvision(backend, T.RandAugment(), range(40, 64))) >= 10


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("interpolation", ["BILINEAR", "BICUBIC"])
def test_with_torchs_seed_filtered_maps_are_torchvisions(backend, interpolation):
    """Shears, translations and rotations sampled with Pillow's bilinear and bicubic filters
    (double arithmetic in its C code; torchvision's reference recipes pass BILINEAR to the
    policies), against torchvision after torch.manual_seed."""
    T = pytest.importorskip("torchvision.transforms")
    mode = T.InterpolationMode[interpolation]
    strong = T.RandAugment(num_ops=4, magnitude=27, interpolation=mode, fill=[10, 20, 30])
    seen = policy_against_torchvision(backend, strong, range(16))
    assert {"ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate"} <= seen, seen
    policy_against_torchvision(backend, T.TrivialAugmentWide(interpolation=mode), range(16, 28))
    policy_against_torchvision(backend, T.AutoAugment(interpolation=mode), range(28, 40))
    policy_against_torchvision(backend, T.RandomRotation(30, mode, fill=[1, 2, 3]), range(40, 48))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("interpolation", ["NEAREST", "BILINEAR", "BICUBIC"])
def test_with_torchs_seed_random_affine_is_torchvisions(backend, interpolation):
    """RandomAffine's angle, shifts, scale and shears as torchvision draws them after
    torch.manual_seed, its map as Pillow samples it: with NEAREST and neither rotation nor shear,
    Pillow's scaling walk in doubles."""
    T = pytest.importorskip("torchvision.transforms")
    mode = T.InterpolationMode[interpolation]
    full = T.RandomAffine(25, translate=(0.1, 0.2), scale=(0.8, 1.2), shear=(-10, 10, -5, 5),
                          interpolation=mode, fill=[10, 20, 30])
    policy_against_torchvision(backend, full, range(8))
    shifted = T.RandomAffine(0, translate=(0.1, 0.1), scale=(0.75, 1.3), interpolation=mode)
    policy_against_torchvision(backend, shifted, range(8, 16))
    centred = T.RandomAffine((-40, 10), shear=15, interpolation=mode, center=(20, 70))
    policy_against_torchvision(backend, centred, range(16, 20))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("interpolation", ["NEAREST", "BILINEAR", "BICUBIC"])
def test_with_torchs_seed_random_perspective_is_torchvisions(backend, interpolation):
    """RandomPerspective's coin and corners as torchvision draws them after torch.manual_seed,
    its coefficients torchvision's own (torch's float64 least squares, rounded to float32), its
    map as Pillow's
    perspective transform samples it, in v1 and v2."""
    T = pytest.importorskip("torchvision.transforms")
    v2 = pytest.importorskip("torchvision.transforms.v2")
    mode = T.InterpolationMode[interpolation]
    policy_against_torchvision(backend, T.RandomPerspective(0.6, p=0.8, interpolation=mode,
                                                            fill=[10, 20, 30]), range(8))
    policy_against_torchvision(backend, T.RandomPerspective(1.0, p=1.0, interpolation=mode),
                               range(8, 12))
    policy_against_torchvision(backend, v2.RandomPerspective(0.5, p=1.0, interpolation=mode,
                                                             fill=7), range(12, 16))


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_perspective_replays_through_pillow(backend):
    """RandomPerspective drawn here (the corners from the counter RNG, the coefficients solved in
    doubles): Pillow's perspective transform with the recorded coefficients gives the same
    pixels, for each interpolation, after a rotation."""
    for interpolation in ("nearest", "bilinear", "bicubic"):
        t = (gpuprep.Transform().center_crop(48).random_rotation(15, "bilinear")
             .random_perspective(0.7, 0.9, interpolation, [9, 8, 7]).with_seed(5))
        spec = {"crop": [48, 48],
                "random_rotation": {"degrees": [-15, 15], "interpolation": "bilinear",
                                    "fill": [0, 0, 0]},
                "random_perspective": {"distortion_scale": 0.7, "p": 0.9,
                                       "interpolation": interpolation, "fill": [9, 8, 7]},
                "seed": 5}
        replayed_through_pillow(backend, t, spec, 6, "perspective")


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_order_runs_the_steps_as_given_and_replays_through_pillow(backend):
    """Transform.order: the colour steps before a nearest rotation and RandomPerspective before
    RandomAffine run so, as Pillow applies them in that order; the repr lists them so."""
    t = (gpuprep.Transform().random_resized_crop(48).random_rotation(25)
         .color_jitter(0.5, 0.5, 0.5, 0.2).random_equalize(0.7).with_seed(7)
         .order("random_equalize", "color_jitter", "random_rotation"))
    shown = repr(t)
    assert shown.index("RandomEqualize") < shown.index("ColorJitter") < \
        shown.index("RandomRotation"), shown
    spec = {"random_resized_crop": {"size": [48, 48]},
            "random_rotation": {"degrees": [-25, 25], "interpolation": "nearest",
                                "fill": [0, 0, 0]},
            "color_jitter": [0.5, 0.5, 0.5, 0.2],
            "color_ops": [{"op": "random_equalize", "p": 0.7}],
            "order": ["random_equalize", "color_jitter", "random_rotation"], "seed": 7}
    replayed_through_pillow(backend, t, spec, 6, "rotation")
    t = (gpuprep.Transform().center_crop(48).random_affine(10, scale=(0.8, 1.2),
                                                            interpolation="bilinear")
         .random_perspective(0.6, 1.0, "nearest").with_seed(8)
         .order("random_perspective", "random_affine"))
    spec = {"crop": [48, 48],
            "random_affine": {"degrees": [-10, 10], "scale": [0.8, 1.2],
                              "interpolation": "bilinear", "fill": [0, 0, 0]},
            "random_perspective": {"distortion_scale": 0.6, "p": 1.0,
                                   "interpolation": "nearest", "fill": [0, 0, 0]},
            "order": ["random_perspective", "random_affine"], "seed": 8}
    replayed_through_pillow(backend, t, spec, 6, "perspective")


def test_an_order_names_every_step_once_and_the_usual_one_is_none():
    t = gpuprep.Transform().random_rotation(10).color_jitter(0.4).grayscale(0.2)
    assert t.order("random_rotation", "color_jitter", "grayscale") == t
    assert t.order("grayscale", "random_rotation", "color_jitter") != t
    for order, words in [(("color_jitter", "random_rotation"), "it lacks grayscale"),
                         (("grayscale", "grayscale"),
                          "names grayscale \\(RandomGrayscale, --grayscale\\) twice"),
                         (("resize",), "is not a step it places"),
                         (("grayscale", "random_rotation", "color_jitter", "random_invert"),
                          "random_invert \\(RandomInvert, --random-invert\\), which the "
                          "transform does not have")]:
        with pytest.raises(gpuprep.OptionsError, match=words):
            t.order(*order)


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_order_and_random_choice_draw_the_steps_and_replay_through_pillow(backend):
    """Transform.order's RandomOrder and RandomChoice: each sample runs the steps it drew, in
    the order drawn (its parameters' `steps`, equal to tools/pillow_reference.py's draw), a
    step not chosen drawing nothing; the output is Pillow's applying them so."""
    t = (gpuprep.Transform().random_resized_crop(48).random_rotation(20, "bilinear")
         .color_jitter(0.4, 0.4, 0.4).grayscale(0.3).random_invert(0.5)
         .gaussian_blur(5, (0.1, 2.0)).with_seed(11)
         .order({"random_choice": ["gaussian_blur", "random_rotation"], "p": [1, 3]},
                {"random_order": ["color_jitter", "grayscale", "random_invert"]}))
    shown = repr(t)
    assert "RandomChoice([GaussianBlur(" in shown and "p=[1.0, 3.0])" in shown, shown
    assert "RandomOrder([ColorJitter(" in shown, shown
    spec = {"random_resized_crop": {"size": [48, 48]},
            "random_rotation": {"degrees": [-20, 20], "interpolation": "bilinear",
                                "fill": [0, 0, 0]},
            "color_jitter": [0.4, 0.4, 0.4], "grayscale": 0.3,
            "color_ops": [{"op": "random_invert", "p": 0.5}],
            "gaussian_blur": {"kernel_size": [5, 5], "sigma": [0.1, 2.0], "p": 1.0},
            "order": [{"random_choice": ["gaussian_blur", "random_rotation"], "p": [1, 3]},
                      {"random_order": ["color_jitter", "grayscale", "random_invert"]}],
            "seed": 11}
    replayed_through_pillow(backend, t, spec, 12, "steps")
    _, outcomes = pipeline(backend).preprocess(PHOTOS[:1] * 24, t, indices=list(range(24)))
    steps = [tuple(o["params"]["steps"]) for o in outcomes]
    assert {s[0] for s in steps} == {"gaussian_blur", "random_rotation"}
    assert len({s[1:] for s in steps}) >= 4, steps
    for o in outcomes:  # the step not chosen has no parameters
        chose_blur = o["params"]["steps"][0] == "gaussian_blur"
        assert ("blur" in o["params"]) == chose_blur and ("rotation" in o["params"]) != chose_blur


def test_random_order_and_random_choice_refuse_what_they_cannot_draw():
    t = gpuprep.Transform().random_rotation(10).color_jitter(0.4).grayscale(0.2)
    for entries, words in [
            (({"random_choice": ["color_jitter", "grayscale"], "p": [0, 0]}, "random_rotation"),
             "finite, non-negative weights of a positive sum"),
            (({"random_choice": ["color_jitter", "grayscale"], "p": [1]}, "random_rotation"),
             "RandomChoice of 2 steps with 1 weights"),
            (({"random_order": []}, "random_rotation", "color_jitter", "grayscale"),
             "of no steps"),
            (({"random_order": ["color_jitter"], "extra": 1}, "random_rotation", "grayscale"),
             "an order's entry is"),
            ((["random_rotation", "color_jitter", "grayscale"],), "an order's entry is"),
            (({"random_order": "grayscale"}, "random_rotation", "color_jitter"),
             "an order's entry is"),
            (({"random_order": ["color_jitter", "resize"]}, "random_rotation", "grayscale"),
             "\"resize\" is not a step it places")]:
        with pytest.raises(gpuprep.OptionsError, match=words):
            t.order(*entries)
    grouped = t.order({"random_order": ["random_rotation", "color_jitter", "grayscale"]})
    assert grouped != t
    batch, outcomes = pipeline("cpu").preprocess(PHOTOS[:1], grouped.center_crop(32))
    drawn = outcomes[0]["params"]
    for steps, words in [(None, "lack `steps`"),
                         (["random_rotation", "color_jitter"], "are not an order"),
                         (["grayscale", "color_jitter", "random_rotation"], None)]:
        given = {k: v for k, v in drawn.items() if k != "steps"}
        if steps is not None:
            given["steps"] = steps
        if words is None:
            pipeline("cpu").preprocess(PHOTOS[:1], grouped.center_crop(32), params=[given])
            continue
        with pytest.raises(gpuprep.OptionsError, match=words):
            pipeline("cpu").preprocess(PHOTOS[:1], grouped.center_crop(32), params=[given])
    with pytest.raises(gpuprep.OptionsError, match="have `steps`, which the transform does not"):
        pipeline("cpu").preprocess(PHOTOS[:1], t.center_crop(32), params=[
            dict(drawn, steps=["random_rotation", "color_jitter", "grayscale"])])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("policy", ["imagenet", "cifar10", "svhn"])
def test_with_torchs_seed_auto_augment_is_torchvisions(backend, policy):
    T = pytest.importorskip("torchvision.transforms")
    auto = T.AutoAugment(T.AutoAugmentPolicy(policy), fill=[10, 20, 30])
    assert len(policy_against_torchvision(backend, auto, range(48))) >= 5


def replayed_through_pillow(backend, t, spec, count, key):
    """Samples 0..count-1 of the photos through `t` against tools/pillow_reference.py's Pillow
    replay of `spec` (the same transform), their recorded `key` parameter against its draw."""
    indices = list(range(count))
    paths = [PHOTOS[i % len(PHOTOS)] for i in indices]
    batch, outcomes = pipeline(backend).preprocess(paths, t, indices=indices)
    for image, path, index, outcome in zip(batch, paths, indices, outcomes):
        assert np.array_equal(image, pillow_reference.transformed(path, spec, index=index)), path
        assert outcome["params"][key] == pillow_reference.draw(
            spec, pillow_reference.Image.open(path).size, index)[key]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("policy", [
    {"rand_augment": {"num_ops": 3, "magnitude": 20, "bins": 31, "fill": [10, 20, 30]}},
    {"auto_augment": {"policy": "svhn", "fill": [10, 20, 30]}},
], ids=["rand", "auto"])
def test_augmentation_policies_equal_pillow_with_their_parameters(backend, policy):
    spec = {"random_resized_crop": {"size": [64, 64]}, "seed": 5, **policy}
    t = gpuprep.Transform().random_resized_crop(64).with_seed(5).to("uint8", "hwc")
    if "rand_augment" in policy:
        t = t.rand_augment(3, 20, fill=[10, 20, 30])
    else:
        t = t.auto_augment("svhn", fill=[10, 20, 30])
    replayed_through_pillow(backend, t, spec, 24, "augment")


@pytest.mark.parametrize("backend", BACKENDS)
def test_timms_three_augment_and_blended_aug_mix_equal_pillow_with_their_parameters(backend):
    """timm's '3a' (one of solarize, grey and Pillow's Gaussian blur) and its blended AugMix, made
    with the Python methods: each sample as tools/pillow_reference.py draws it and Pillow computes
    it (the blur as Pillow's ImageFilter.GaussianBlur, the blends as Image.blend)."""
    spec = {"resize": [48, 40], "seed": 7,
            "timm_auto_augment": {"policy": "3a", "magnitude_std": 2.0, "fill": [124, 116, 104]}}
    t = (gpuprep.Transform().resize((40, 48)).timm_auto_augment("3a-mstd2", [124, 116, 104])
         .with_seed(7).to("uint8", "hwc"))
    replayed_through_pillow(backend, t, spec, 24, "augment")
    assert "TimmGaussianBlur" in {op["op"] for index in range(24) for op in pillow_reference.draw(
        spec, pillow_reference.Image.open(PHOTOS[index % len(PHOTOS)]).size, index)["augment"]}
    spec = {"resize": [40, 40], "seed": 8,
            "timm_aug_mix": {"width": 3, "alpha": 1.0, "magnitude": 3.0, "translate_pct": 0.3,
                             "fill": [124, 116, 104], "interpolation": "bilinear", "blended": True}}
    t = (gpuprep.Transform().resize((40, 40))
         .timm_aug_mix("augmix-m3-w3-b1", [124, 116, 104], "bilinear", 0.3)
         .with_seed(8).to("uint8", "hwc"))
    assert "blended=True" in repr(t), repr(t)
    replayed_through_pillow(backend, t, spec, 12, "aug_mix")


@pytest.mark.parametrize("backend", BACKENDS)
def test_gaussian_blur_equals_the_reference_with_its_parameters(backend):
    """GaussianBlur in RandomApply after a colour jitter: its kernels as recorded and the blurred
    pixels as tools/pillow_reference.py's replay of torch's arithmetic computes them."""
    spec = {"resize": [48, 40], "color_jitter": [0.4, 0.4, 0.4],
            "gaussian_blur": {"kernel_size": [9, 5], "sigma": [0.1, 3.0], "p": 0.7}, "seed": 4}
    t = (gpuprep.Transform().resize((40, 48)).color_jitter(0.4, 0.4, 0.4)
         .gaussian_blur((9, 5), (0.1, 3.0), p=0.7).with_seed(4).to("uint8", "hwc"))
    replayed_through_pillow(backend, t, spec, 16, "blur")
    with pytest.raises(gpuprep.OptionsError, match="odd kernel sides"):
        gpuprep.Transform().gaussian_blur(4)
    with pytest.raises(gpuprep.OptionsError, match="sigma range"):
        gpuprep.Transform().gaussian_blur(3, (2.0, 1.0))
    tiny = gpuprep.Transform().resize((8, 8)).gaussian_blur(23).to("uint8", "hwc")
    with pytest.raises(gpuprep.OptionsError, match="reflect padding"):
        pipeline(backend).preprocess(PHOTOS[:1], tiny)


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_crop_with_padding_equals_pillow_with_its_parameters(backend):
    spec = {"resize": [40, 30], "pad": {"padding": [3, 0, 3, 0], "fill": [9, 9, 9], "mode": "edge"},
            "random_crop": {"width": 48, "height": 40, "padding": [2, 2, 2, 2],
                            "pad_if_needed": True, "fill": [10, 20, 30], "mode": "reflect"},
            "hflip": 0.5, "seed": 3}
    t = (gpuprep.Transform().resize((30, 40)).pad((3, 0), fill=9, padding_mode="edge")
         .random_crop((40, 48), padding=2, pad_if_needed=True, fill=(10, 20, 30),
                      padding_mode="reflect")
         .horizontal_flip().with_seed(3).to("uint8", "hwc"))
    replayed_through_pillow(backend, t, spec, 12, "random_crop")


@pytest.mark.parametrize("backend", BACKENDS)
def test_trivial_augment_equals_pillow_with_its_parameters(backend):
    spec = {"random_resized_crop": {"size": [64, 64]}, "trivial_augment": {"fill": [10, 20, 30]},
            "seed": 9}
    t = (gpuprep.Transform().random_resized_crop(64).trivial_augment_wide(fill=[10, 20, 30])
         .with_seed(9).to("uint8", "hwc"))
    replayed_through_pillow(backend, t, spec, 24, "augment")


@pytest.mark.parametrize("backend", BACKENDS)
def test_rotation_equals_pillow_with_its_parameters(backend):
    spec = {"random_resized_crop": {"size": [96, 96]}, "hflip": 0.5,
            "random_rotation": {"degrees": [-40, 40], "fill": [10, 20, 30]},
            "color_jitter": [0.4, 0.4, 0.4], "seed": 7}
    t = (gpuprep.Transform().random_resized_crop(96).horizontal_flip()
         .random_rotation(40, fill=[10, 20, 30]).color_jitter(0.4, 0.4, 0.4).with_seed(7)
         .to("uint8", "hwc"))
    indices = [3, 8, 1, 6, 4, 0]
    batch, outcomes = pipeline(backend).preprocess(PHOTOS, t, indices=indices)
    for image, path, index, outcome in zip(batch, PHOTOS, indices, outcomes):
        assert np.array_equal(image, pillow_reference.transformed(path, spec, index=index)), path
        assert -40 <= outcome["params"]["rotation"] <= 40
    # A quarter turn of a square, given: Pillow's transpose shortcut.
    square = gpuprep.Transform().resize((40, 40)).random_rotation((0, 0))
    batch, _ = pipeline(backend).preprocess(PHOTOS[:1], square, params=[{"rotation": 90.0}])
    small = pillow_reference.Image.open(PHOTOS[0]).convert("RGB").resize((40, 40),
                                                                         pillow_reference.Image.BILINEAR)
    assert np.array_equal(batch[0], np.asarray(small.rotate(90)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_given_parameters_are_used_as_given(backend):
    path = PHOTOS[0]
    image = pillow_reference.Image.open(path).convert("RGB")
    given = {"crop": {"top": 98, "left": 42, "height": 376, "width": 439}, "flip": True}
    t = gpuprep.Transform().random_resized_crop(160).horizontal_flip().to("uint8", "chw")
    batch, outcomes = pipeline(backend).preprocess([path, np.asarray(image)], t,
                                                   params=[given, given])
    spec = {"random_resized_crop": {"size": [160, 160]}}
    expected = pillow_reference.finish(
        np.asarray(pillow_reference.cut(image, given, (160, 160), pillow_reference.Image.BILINEAR)),
        given).transpose(2, 0, 1)
    assert np.array_equal(batch[0], expected) and np.array_equal(batch[1], expected)
    assert outcomes[0]["params"] == given
    with pytest.raises(gpuprep.OptionsError, match="inside"):
        pipeline(backend).preprocess([path], t, params=[{"crop": dict(given["crop"], left=400),
                                                        "flip": False}])


def test_the_gil_is_released_while_rust_works(tmp_path):
    """Another Python thread keeps running during a batch (preprocess) and while the loader's
    next batch is awaited: Rust holds no GIL while it works."""
    import threading

    ticks, stop = [0], threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1

    counter = threading.Thread(target=count)
    counter.start()
    try:
        during = []
        for _ in range(2):
            before = ticks[0]
            gpuprep.Pipeline("cpu").preprocess(PHOTOS * 4, train_transform())
            during.append(ticks[0] - before)
        loader = gpuprep.Loader(PHOTOS * 4, train_transform(), batch_size=8, backend="cpu",
                                prefetch=1)
        before = ticks[0]
        for _ in loader.batches():
            pass
        during.append(ticks[0] - before)
    finally:
        stop.set()
        counter.join()
    # Held, the GIL would leave the counter a few switch intervals at most.
    assert min(during) > 10_000, during


def test_copy_into_copies_every_byte_and_refuses_other_lengths():
    """The parallel copy the loader pins its batches with (into torch's page-locked memory)."""
    from gpuprep import _gpuprep

    src = np.random.default_rng(0).random((3, 3, 224, 225), dtype=np.float32)
    dst = np.zeros_like(src)
    _gpuprep.copy_into(dst.reshape(-1).view(np.uint8), src.reshape(-1).view(np.uint8))
    assert np.array_equal(dst, src)
    with pytest.raises(gpuprep.OptionsError):
        _gpuprep.copy_into(dst.reshape(-1).view(np.uint8)[1:], src.reshape(-1).view(np.uint8))


def test_every_declared_operation_has_its_method_stub_and_translation():
    """The crate's one table of operations: each has its Transform method, which sets it (the
    repr names its torchvision class), its stub, its place in from_torchvision's order and a
    branch of from_torchvision that translates it (one branch for all the single-operation
    transforms, keyed by their own table: test_color_operations.py checks their methods)."""
    import inspect
    import pathlib

    stubs = (pathlib.Path(gpuprep.__file__).parent / "__init__.pyi").read_text()
    translation = inspect.getsource(gpuprep.from_torchvision)
    operations = gpuprep._gpuprep.operations()
    singles = gpuprep._gpuprep.color_operations()
    assert len(operations) == 23 + len(singles)
    args = {"resize": (8,), "random_resized_crop": (8,), "random_resize": (8, 12),
            "random_shortest_size": (8,), "center_crop": (8,), "pad": (2,), "random_crop": (8,),
            "random_rotation": (10,), "random_affine": (10,), "gaussian_blur": (3,),
            "random_perspective": (0.5,),
            "normalize": ([0.5] * 3, [0.5] * 3)}
    args.update({method: (2,) for _, method, _, argument in singles if argument is not None})
    assert "_COLOR_OPERATIONS" in translation
    for torchvision, _field, _flag, method, stage in operations:
        assert f"def {method}(" in stubs, method
        assert gpuprep._STAGE[torchvision] == stage
        if torchvision in gpuprep._COLOR_OPERATIONS:
            assert gpuprep._COLOR_OPERATIONS[torchvision][0] == method
        else:
            assert f'"{torchvision}"' in translation, torchvision
        t = getattr(gpuprep.Transform(), method)(*args.get(method, ()))
        assert f"{torchvision}(" in repr(t), (method, repr(t))


def test_random_erasing_of_normal_values_takes_given_values_and_refuses_bad_ones():
    """Given noise as a list or a numpy array writes exactly those values; a count or value that
    is not one, a non-finite value and the wrong number of values are OptionsErrors."""
    t = (gpuprep.Transform().center_crop(32).normalize([0.5] * 3, [0.5] * 3)
         .random_erasing(1.0, value="random", count=(1, 2)))
    p = gpuprep.Pipeline("cpu")
    noise = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5) / 7
    box = {"top": 2, "left": 3, "height": 4, "width": 5}
    for given in (noise.flatten().tolist(), noise):
        batch, _ = p.preprocess([PHOTOS[0]], t, params=[{"erase": [{**box, "noise": given}]}])
        assert np.array_equal(batch[0][:, 2:6, 3:8], noise)
    for count in (True, -1, 2.5, "2", (3, 1)):
        with pytest.raises(gpuprep.OptionsError, match="count"):
            gpuprep.Transform().normalize([0.5] * 3, [0.5] * 3).random_erasing(
                value="random", count=count).validate()
    with pytest.raises(gpuprep.OptionsError, match="RandomErasing's value must be"):
        gpuprep.Transform().random_erasing(value=[1, 2])
    bad = noise.flatten().tolist()
    bad[5] = float("nan")
    with pytest.raises(gpuprep.OptionsError, match="finite numbers"):
        p.preprocess([PHOTOS[0]], t, params=[{"erase": [{**box, "noise": bad}]}])
    with pytest.raises(gpuprep.OptionsError, match="needs 60 noise values, got 59"):
        p.preprocess([PHOTOS[0]], t, params=[{"erase": [{**box, "noise": noise.flatten()[:59]}]}])
    with pytest.raises(gpuprep.OptionsError, match="float32 or float16 output"):
        gpuprep.Transform().center_crop(32).random_erasing(value="random").validate()
