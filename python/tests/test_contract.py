"""The contract a DataLoader user relies on, off the happy path: every rank the same batches,
failures that raise (or are counted and warned of), full batches with drop_last, a new epoch per
iteration, exact or refused torchvision translations (test_from_torchvision.py), no panic or
abort, Ctrl-C that takes effect, bounded memory, warnings a user can live with."""
import io
import os
import pickle
import signal
import subprocess
import sys
import tarfile
import threading
import time
import traceback
import warnings

import numpy as np
import pytest

import gpuprep

from support import PHOTOS, ROOT
SMALL = gpuprep.Transform().center_crop(8)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def truncated():
    return read(PHOTOS[0])[:2000]


def write_shards(folder, sizes, bad=()):
    """WebDataset shards of `sizes` samples (key.jpg + key.cls, the label its shard), written with
    tarfile; the samples in `bad` (shard, k) get a truncated JPEG."""
    paths = []
    for s, n in enumerate(sizes):
        path = os.path.join(folder, f"shard-{s:06d}.tar")
        with tarfile.open(path, "w") as tar:
            for k in range(n):
                image = truncated() if (s, k) in bad else read(PHOTOS[k % len(PHOTOS)])
                for name, data in ((f"s{s}k{k:03d}.jpg", image), (f"s{s}k{k:03d}.cls",
                                                                   str(s).encode())):
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        paths.append(path)
    return paths


def image_folder(root, bad=0):
    for i, path in enumerate(PHOTOS):
        for copy in range(2):
            cls = ["cat", "dog", "emu"][(i + copy) % 3]
            os.makedirs(root / cls, exist_ok=True)
            (root / cls / f"{copy}-{i}.jpg").write_bytes(read(path))
    for k in range(bad):
        (root / "dog" / f"zz-bad-{k}.jpg").write_bytes(truncated())
    return str(root)


def test_every_rank_gets_the_same_batches_over_uneven_shards(tmp_path):
    """The DDP hang: 3 shards over 2 ranks gave 5 and 3 batches; now len(loader) on every rank,
    with and without drop_last, shuffled or not."""
    write_shards(tmp_path, [10, 10, 5])
    pattern = str(tmp_path / "shard-*.tar")
    for drop_last in (False, True):
        for shuffle in (False, True):
            counts = []
            for rank in range(2):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    loader = gpuprep.Loader(pattern, SMALL, batch_size=2, rank=rank,
                                            world_size=2, drop_last=drop_last, shuffle=shuffle,
                                            backend="cpu")
                # Without shuffling, rank 0's shards (10 + 5) hold more than it reads (13 or
                # 12): said when the loader is made, as the split is the same every epoch.
                unread = [str(w.message) for w in caught if "never read" in str(w.message)]
                assert len(unread) == (0 if shuffle else 1), unread
                assert shuffle or f"and {3 if drop_last else 2} samples" in unread[0]
                batches = list(loader)
                assert len(batches) == len(loader)
                assert all(len(b[1]) == 2 for b in batches[:-1])
                counts.append(len(batches))
            assert counts == [7, 7] if not drop_last else counts == [6, 6]
    with pytest.raises(gpuprep.OptionsError, match="3 shard\\(s\\) cannot be split between 4"):
        gpuprep.Loader(pattern, SMALL, batch_size=2, rank=3, world_size=4, backend="cpu")


def test_sources_that_cannot_be_read_raise_when_the_loader_is_made(tmp_path):
    make = lambda source: gpuprep.Loader(source, SMALL, batch_size=2, backend="cpu")
    with pytest.raises(gpuprep.ReadError, match="nonexistent_dir"):
        make(str(tmp_path / "nonexistent_dir/"))
    # URLs of schemes that are not read are refused by name (test_remote.py reads the others).
    for url in ("ftp://127.0.0.1/shard-000000.tar", "hdfs://h/a-{0..1}.tar::b.tar"):
        with pytest.raises(gpuprep.OptionsError, match="ftp: URLs are not read|hdfs: URLs"):
            make(url)
    with pytest.raises(gpuprep.ReadError, match="no file matches"):
        make(str(tmp_path / "shard-*.tar"))
    os.makedirs(tmp_path / "a")
    os.makedirs(tmp_path / "b")
    with pytest.raises(gpuprep.OptionsError, match="not folders"):
        make([str(tmp_path / "a"), str(tmp_path / "b")])
    with pytest.raises(gpuprep.OptionsError, match="empty"):
        make([])
    with pytest.raises(gpuprep.ReadError, match="missing.jpg"):
        make([PHOTOS[0], str(tmp_path / "missing.jpg")])
    # webdataset's brace patterns expand; every shard named must be there.
    write_shards(tmp_path, [3, 3, 3])
    assert len(make(str(tmp_path / "shard-{000000..000002}.tar"))) == 5
    assert len(make("file:" + str(tmp_path / "shard-{000000..000001}.tar"))) == 3
    with pytest.raises(gpuprep.ReadError, match="shard-000003.tar"):
        make(str(tmp_path / "shard-{000000..000003}.tar"))


def test_an_empty_class_folder_is_refused_as_torchvision_refuses_it(tmp_path):
    root = image_folder(tmp_path)
    os.makedirs(tmp_path / "yak")
    with pytest.raises(gpuprep.OptionsError, match="no valid file for the classes yak"):
        gpuprep.Loader(root, SMALL, batch_size=2, backend="cpu")


def test_a_failed_sample_raises_its_kind_by_default_or_is_counted_and_warned_once(tmp_path):
    root = image_folder(tmp_path, bad=2)
    loader = gpuprep.Loader(root, SMALL, batch_size=4, backend="cpu")
    with pytest.raises(gpuprep.TruncatedError, match="zz-bad-0.jpg"):
        for _ in loader:
            pass
    loader = gpuprep.Loader(root, SMALL, batch_size=4, backend="cpu", errors="skip")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = list(loader.batches())
    failed = [f for b in batches for f in b["failed"]]
    assert [f[1] for f in failed] == ["TruncatedError", "TruncatedError"]
    assert loader.stats["epoch_failed"] == 2
    said = [w for w in caught if "failed and were left out" in str(w.message)]
    assert len(said) == 1 and "2 sample(s)" in str(said[0].message)
    assert said[0].filename == __file__
    with pytest.raises(gpuprep.OptionsError, match="errors"):
        gpuprep.Loader(root, SMALL, batch_size=4, errors="ignore")


@pytest.mark.parametrize("source", ["folder", "shards"])
def test_drop_last_with_skip_gives_full_batches_only(tmp_path, source):
    """[4, 3] on a bad shard and [2, 4, 4] on a folder before: failed samples are replaced by the
    next ones of the epoch, and every rank still makes len(loader) batches."""
    if source == "folder":
        root = image_folder(tmp_path, bad=2)
    else:
        root = write_shards(tmp_path, [10, 10], bad={(0, 1), (1, 7)})
    for rank in range(2):
        loader = gpuprep.Loader(root, SMALL, batch_size=2, rank=rank, world_size=2,
                                drop_last=True, shuffle=True, errors="skip", backend="cpu")
        assert len(loader) >= 3
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in range(2):
                batches = list(loader.batches())
                sizes = [len(b["labels"]) for b in batches]
                assert sizes == [2] * len(loader), (rank, epoch, sizes)
                failed = {f[0] for b in batches for f in b["failed"]}
                kept = {i for b in batches for i in b["indices"].tolist()}
                assert not failed & kept


def test_each_iteration_is_a_new_epoch_unless_set_epoch_says_otherwise(tmp_path):
    """RandomSampler reshuffles at every iter(); DistributedSampler needs set_epoch."""
    root = image_folder(tmp_path)
    t = gpuprep.Transform.imagenet_train().with_seed(1)
    loader = gpuprep.Loader(root, t, batch_size=12, shuffle=True, seed=2, backend="cpu")

    def one():
        (batch,) = list(loader.batches())
        return batch["indices"].tolist(), batch["images"].copy()

    first, second = one(), one()
    assert loader.epoch == 1
    assert first[0] != second[0] and not np.array_equal(first[1], second[1])
    loader.set_epoch(0)
    again = one()
    assert again[0] == first[0] and np.array_equal(again[1], first[1])
    loader.set_epoch(0)
    assert one()[0] == first[0]
    assert one()[0] == second[0]  # no set_epoch: the epoch after the last


def test_a_panic_inside_becomes_a_gpuprep_error_and_the_interpreter_goes_on():
    with pytest.raises(gpuprep.GpuprepError, match="internal error.*planted by a test"):
        gpuprep._gpuprep._panic_inside()
    batch, _ = gpuprep.Pipeline("cpu").preprocess(PHOTOS[:1], SMALL)
    assert batch.shape == (1, 8, 8, 3)


def test_sizes_past_their_bounds_are_typed_errors_not_aborts(tmp_path):
    root = image_folder(tmp_path)
    with pytest.raises(gpuprep.TooLargeError, match="bytes"):
        gpuprep.Loader(root, gpuprep.Transform.imagenet_train(), batch_size=10**9, backend="cpu")
    with pytest.raises(gpuprep.OptionsError, match="prefetch"):
        gpuprep.Loader(root, SMALL, batch_size=4, prefetch=10**6, backend="cpu")
    huge = gpuprep.Transform().resize((100000, 100000))
    with pytest.raises(gpuprep.TooLargeError):
        gpuprep.Pipeline("cpu").preprocess(PHOTOS[:1], huge)


def test_every_entry_point_validates_the_transform_with_one_message(tmp_path):
    root = image_folder(tmp_path)
    bad = [SMALL.horizontal_flip(-1), SMALL.horizontal_flip(float("nan")), SMALL.color_jitter(-1),
           SMALL.color_jitter(hue=0.9), SMALL.to_tensor().normalize([0.5] * 3, [0, 1, 1]),
           SMALL.trivial_augment_wide(0), SMALL.random_erasing(5), SMALL.color_jitter((1.2, 0.5)),
           SMALL.color_jitter(hue=(-0.6, 0.1)), SMALL.rand_augment(magnitude=31),
           SMALL.rand_augment(num_ops=5), SMALL.resize(64, max_size=64),
           SMALL.color_jitter(0.4, p=1.5)]
    for t in bad:
        with pytest.raises(gpuprep.OptionsError) as from_pipeline:
            gpuprep.Pipeline("cpu").preprocess(PHOTOS[:1], t, errors="skip")
        with pytest.raises(gpuprep.OptionsError) as from_loader:
            gpuprep.Loader(root, t, batch_size=2, backend="cpu")
        with pytest.raises(gpuprep.OptionsError) as from_validate:
            t.validate()
        assert str(from_pipeline.value) == str(from_loader.value) == str(from_validate.value)
    for size in (-5, 0, (3, 0), "224", (1, 2, 3)):
        with pytest.raises(gpuprep.OptionsError, match="positive int"):
            gpuprep.Transform().resize(size)


def test_inputs_are_bytes_like_paths_arrays_or_pil_images():
    from PIL import Image

    data = read(PHOTOS[0])
    t = gpuprep.Transform().resize((32, 48))
    p = gpuprep.Pipeline("cpu")
    want, _ = p.preprocess([data], t)
    pil = Image.open(io.BytesIO(data))
    for given in (bytearray(data), memoryview(data), PHOTOS[0], pil, np.asarray(pil.convert("RGB"))):
        got, _ = p.preprocess([given], t)
        assert np.array_equal(got, want), type(given)
    with pytest.raises(gpuprep.OptionsError, match="not int"):
        p.preprocess([42], t)


def test_a_transform_reads_as_torchvision_steps():
    t = gpuprep.Transform.imagenet_eval()
    assert repr(t) == ("Transform(Resize(256), CenterCrop((224, 224)), ToTensor(), "
                       "Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]))")
    assert t == gpuprep.Transform.imagenet_eval() and t != gpuprep.Transform()


def test_warnings_come_once_per_epoch_and_can_be_turned_off(tmp_path):
    root = image_folder(tmp_path)
    with pytest.raises(gpuprep.OptionsError, match="wait_warning"):
        gpuprep.Loader(root, SMALL, batch_size=2, wait_warning=-0.5, backend="cpu")
    with pytest.raises(gpuprep.OptionsError, match="wait_warning"):
        gpuprep.Loader(root, SMALL, batch_size=2, wait_warning=2, backend="cpu")
    slow = gpuprep.Transform.imagenet_train()
    # A consumer that does nothing waits for every step: the warning's case.
    loader = gpuprep.Loader(root, slow, batch_size=1, wait_warning=0.0, backend="cpu")
    for style in ("loader", "batches"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in (loader if style == "loader" else loader.batches()):
                pass
        said = [w for w in caught if "waited for data" in str(w.message)]
        assert len(said) == 1, [str(w.message) for w in caught]
        assert said[0].filename == __file__, style
        assert "worst: step" in str(said[0].message)
    quiet = gpuprep.Loader(root, slow, batch_size=1, wait_warning=None, backend="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in quiet:
            pass


def interrupted_within(work):
    """Runs `work` with a SIGINT sent 0.3 s in; returns how long the interrupt took to raise."""
    sent = []
    timer = threading.Timer(0.3, lambda: (sent.append(time.monotonic()),
                                          os.kill(os.getpid(), signal.SIGINT)))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            work()
        return time.monotonic() - sent[0]
    finally:
        timer.cancel()


def test_ctrl_c_takes_effect_within_half_a_second(tmp_path):
    many = PHOTOS * 400  # seconds of decoding on the CPU
    took = interrupted_within(lambda: gpuprep.Pipeline("cpu").preprocess(many, SMALL))
    assert took < 0.5, took
    image_folder(tmp_path)
    files = [str(p) for p in sorted(tmp_path.rglob("*.jpg"))] * 200
    loader = gpuprep.Loader(files, SMALL, batch_size=len(files), backend="cpu")
    took = interrupted_within(lambda: next(iter(loader)))
    assert took < 0.5, took


def test_no_stray_output_from_probing_adapters_and_the_cpu_choice_is_explained():
    code = ("import gpuprep; p = gpuprep.Pipeline(); "
            "print(p.backend); print(p.reason)")
    env = {k: v for k, v in os.environ.items()
           if k not in ("XDG_RUNTIME_DIR", "WAYLAND_DISPLAY", "DISPLAY", "NODEVICE_SELECT")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    backend, reason = done.stdout.splitlines()
    assert (backend == "cpu") == (reason != "None"), done.stdout


def test_sizes_past_any_limit_are_refused_before_work_and_timm_crop_pct_is_checked():
    p = gpuprep.Pipeline("cpu")
    with pytest.raises(gpuprep.OptionsError, match="at most"):
        p.preprocess(PHOTOS[:1], gpuprep.Transform().resize(224_000_000_000).center_crop(224))
    started = time.monotonic()
    with pytest.raises(gpuprep.TooLargeError):
        p.preprocess(PHOTOS[:1], gpuprep.Transform().resize(224_000_000).center_crop(224))
    assert time.monotonic() - started < 1.0  # refused before the resize's tables are made
    for crop_pct in (0, -1, float("nan"), 1e-12):
        with pytest.raises(gpuprep.OptionsError):
            gpuprep.Transform.timm_eval(224, crop_pct)


def test_every_error_of_preprocess_names_its_input_and_skip_keeps_the_others(tmp_path):
    p = gpuprep.Pipeline("cpu")
    corrupt = os.path.join(ROOT, "tests", "data", "malformed", "jdec__missing-sos.jpg")
    t = gpuprep.Transform().resize(16).to_tensor()  # no fixed output size
    with pytest.raises(gpuprep.CorruptError, match="jdec__missing-sos.jpg"):
        p.preprocess([corrupt], t)
    _, outcomes = p.preprocess([corrupt], t, errors="skip")
    assert outcomes[0]["kind"] == "CorruptError"
    missing = str(tmp_path / "missing.jpg")
    batch, outcomes = p.preprocess([PHOTOS[0], missing, b""], gpuprep.Transform().resize((8, 8)),
                                   errors="skip")
    assert batch.shape[0] == 1
    assert [o["kind"] for o in outcomes] == [None, "ReadError", "CorruptError"]
    assert "missing.jpg" in outcomes[1]["error"] and "image 2 of the call" in outcomes[2]["error"]
    with pytest.raises(gpuprep.ReadError, match="missing.jpg"):
        p.preprocess([missing], t)


def test_shard_labels_that_are_not_labels_fail_their_sample_and_a_non_tar_is_refused(tmp_path):
    shard = tmp_path / "shard-000000.tar"
    with tarfile.open(shard, "w") as tar:
        for key, cls in (("a", b"3"), ("b", b"cat"), ("c", b"5")):
            for name, data in ((f"{key}.jpg", read(PHOTOS[0])), (f"{key}.cls", cls)):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    with pytest.raises(gpuprep.ReadError, match="b: .*its .cls member is not a class index"):
        for _ in gpuprep.Loader(str(shard), SMALL, batch_size=3, backend="cpu"):
            pass
    loader = gpuprep.Loader(str(shard), SMALL, batch_size=3, backend="cpu", errors="skip")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (batch,) = list(loader.batches())
    assert batch["labels"].tolist() == [3, 5]
    not_tar = tmp_path / "shard-000001.tar"
    not_tar.write_bytes(b"this is not a tar file" * 40)
    with pytest.raises(gpuprep.ReadError, match="not a tar file"):
        gpuprep.Loader(str(not_tar), SMALL, batch_size=2, backend="cpu")


def test_errors_are_python_kinds_too_and_named_by_the_package(tmp_path):
    # Code written for Python's own errors catches gpuprep's: a bad option is a ValueError, an
    # unreadable file an OSError; the Rust extension raises these very classes.
    with pytest.raises(ValueError) as bad_option:
        gpuprep.Transform().random_rotation(10, fill=300)
    assert type(bad_option.value) is gpuprep.OptionsError
    with pytest.raises(OSError) as unreadable:
        gpuprep.Loader([str(tmp_path / "missing.jpg")], SMALL, batch_size=2, backend="cpu")
    assert type(unreadable.value) is gpuprep.ReadError
    with pytest.raises(ValueError):
        gpuprep.Transform().random_invert(p="often")
    for name in ("GpuprepError", "DecodeError", "TruncatedError", "CorruptError",
                 "UnsupportedError", "TooLargeError", "OptionsError", "GpuError", "HandoffError",
                 "ReadError"):
        error = getattr(gpuprep, name)
        assert issubclass(error, gpuprep.GpuprepError) and error.__module__ == "gpuprep", name
        assert f"gpuprep.{name}" in "".join(traceback.format_exception_only(error, error("x")))
        # An error raised in a worker process reaches the parent pickled, as DataLoader's do.
        copy = pickle.loads(pickle.dumps(error("a.jpg: bad")))
        assert type(copy) is error and str(copy) == "a.jpg: bad"
    assert not issubclass(gpuprep.DecodeError, (ValueError, OSError))
    with open(os.path.join(ROOT, "python", "pyproject.toml")) as f:
        assert f'version = "{gpuprep.__version__}"' in f.read()


def test_odd_arguments_are_options_errors_naming_them(tmp_path):
    root = image_folder(tmp_path)
    for kw in ({"batch_size": -1}, {"batch_size": 0}, {"rank": -1}, {"prefetch": 0}):
        args = {"batch_size": 2, **kw}
        with pytest.raises(gpuprep.OptionsError, match=list(kw)[0]):
            gpuprep.Loader(root, SMALL, backend="cpu", **args)
    assert len(gpuprep.Loader(root, SMALL, batch_size=2, seed=-1, backend="cpu")) == 6
    with pytest.raises(gpuprep.OptionsError, match="fill"):
        gpuprep.Transform().random_rotation(10, fill=300)
    with pytest.raises(gpuprep.OptionsError, match="adapter"):
        gpuprep.Pipeline("cpu", adapter="nvidia")
    with pytest.raises(gpuprep.UnsupportedError, match="compressed"):
        gpuprep.Loader([str(tmp_path / "a.tar.gz")], SMALL, batch_size=2)
    mean, std = [0.5] * 3, [0.25] * 3
    either = (SMALL.normalize(mean, std).to_tensor(), SMALL.to_tensor().normalize(mean, std))
    assert either[0] == either[1]
