"""gpuprep.write_shards, the offline job: a dataset resized and re-encoded, byte for byte as
Pillow writes it, into WebDataset shards that the Loader and webdataset's own reader read
back."""
import io
import json
import os
import shutil
import tarfile

import numpy as np
import pytest
import webdataset
from PIL import Image

import gpuprep

from support import PHOTOS

T = gpuprep.Transform().resize((16, 24))

def test_write_shards_writes_pillows_jpegs_the_loader_reads_back(tmp_path):
    """gpuprep.write_shards over an ImageFolder tree: every JPEG is what Pillow's
    open/convert/resize/save writes, the classes are the folders', the Loader reads the shards
    back, and a second call keeps them."""
    for k, photo in enumerate(PHOTOS):
        (tmp_path / "tree" / ["cat", "dog"][k % 2]).mkdir(parents=True, exist_ok=True)
        shutil.copy(photo, tmp_path / "tree" / ["cat", "dog"][k % 2] / os.path.basename(photo))
    out = str(tmp_path / "shards" / "train-%06d.tar")
    done = gpuprep.write_shards(tmp_path / "tree", out, resize=40, quality=85, shard_samples=4,
                                backend="cpu")
    assert (done["kept"], done["samples"], done["failed"]) == (0, len(PHOTOS), [])
    seconds = done["seconds"]
    assert sorted(seconds) == ["decoding", "encoding", "forward", "reading", "waiting", "writing"]
    assert seconds["decoding"] > 0 and seconds["encoding"] > 0
    # No GPU stream on the CPU backend: its breakdown is there, all zero.
    assert done["stream_seconds"] == dict.fromkeys(
        ["preparing", "starved", "submitting", "executing", "reading_back"], 0.0)
    assert done["elapsed"] > 0
    assert done["samples_per_second"] == done["samples"] / max(done["elapsed"], 1e-9)
    labels = []
    for shard in done["written"]:
        with tarfile.open(shard) as tar:
            members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}
        for name in sorted(n for n in members if n.endswith(".jpg")):
            meta = json.loads(members[name[:-4] + ".json"])
            image = Image.open(meta["source"]).convert("RGB")
            w, h = image.size
            size = (40, int(40 * h / w)) if w <= h else (int(40 * w / h), 40)
            buffer = io.BytesIO()
            image.resize(size, Image.BILINEAR).save(buffer, "JPEG", quality=85)
            assert members[name] == buffer.getvalue(), name
            labels.append(int(members[name[:-4] + ".cls"]))
    loader = gpuprep.Loader(str(tmp_path / "shards" / "train-{000000..000001}.tar"), T,
                            batch_size=len(PHOTOS), backend="cpu", wait_warning=None)
    (_, batch_labels), = list(loader)
    assert sorted(np.asarray(batch_labels).tolist()) == sorted(labels)
    again = gpuprep.write_shards(tmp_path / "tree", out, resize=40, quality=85, shard_samples=4,
                                 backend="cpu")
    assert (again["kept"], again["samples"], again["written"]) == (2, 0, [])
    with pytest.raises(gpuprep.OptionsError, match="quality is an int from 1 to 100"):
        gpuprep.write_shards(tmp_path / "tree", out, resize=40, quality=0)


def test_webdatasets_own_reader_reads_the_shards_with_a_labels_files_classes(tmp_path):
    """Shards labelled by a JSON labels file (class names, numbered in sorted order), read by
    webdataset's WebDataset: every sample's key, JPEG, class and JSON as written."""
    for k, photo in enumerate(PHOTOS):
        folder = tmp_path / "photos" / ("a" if k % 2 else "b")
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(photo, folder / os.path.basename(photo))
    names = sorted(f"{'a' if k % 2 else 'b'}/{os.path.basename(p)}" for k, p in enumerate(PHOTOS))
    labels = {name: ("tabby" if i % 3 else "manx") for i, name in enumerate(names)}
    (tmp_path / "labels.json").write_text(json.dumps(labels))
    out = str(tmp_path / "shards" / "s-%03d.tar")
    done = gpuprep.write_shards(tmp_path / "photos", out, resize=32, shard_samples=3,
                                labels=tmp_path / "labels.json", recursive=True, backend="cpu",
                                index=tmp_path / "shards" / "index.json")
    assert (done["samples"], done["failed"]) == (len(PHOTOS), [])
    samples = list(webdataset.WebDataset(done["written"], shardshuffle=False, empty_check=False))
    index = json.loads((tmp_path / "shards" / "index.json").read_text())
    assert [s["nsamples"] for s in index["shardlist"]] == [3] * (len(PHOTOS) // 3) + (
        [len(PHOTOS) % 3] if len(PHOTOS) % 3 else [])
    assert [s["__key__"] for s in samples] == [f"{n:09d}" for n in range(len(PHOTOS))]
    for sample in samples:
        meta = json.loads(sample["json"])
        name = os.path.relpath(meta["source"], tmp_path / "photos").replace(os.sep, "/")
        assert meta["class"] == labels[name]
        assert int(sample["cls"]) == {"manx": 0, "tabby": 1}[labels[name]]
        image = Image.open(meta["source"]).convert("RGB")
        w, h = image.size
        size = (32, int(32 * h / w)) if w <= h else (int(32 * w / h), 32)
        buffer = io.BytesIO()
        image.resize(size, Image.BILINEAR).save(buffer, "JPEG")
        assert sample["jpg"] == buffer.getvalue(), name
    del labels[names[0]]
    (tmp_path / "labels.json").write_text(json.dumps(labels))
    with pytest.raises(gpuprep.OptionsError, match="no label for"):
        gpuprep.write_shards(tmp_path / "photos", str(tmp_path / "other" / "s-%03d.tar"),
                             resize=32, labels=tmp_path / "labels.json", recursive=True)
