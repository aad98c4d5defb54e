"""gpuprep.write_shards, the offline job: a dataset resized and re-encoded, byte for byte as
Pillow writes it, into WebDataset shards the Loader reads back."""
import io
import json
import os
import shutil
import tarfile

import numpy as np
import pytest
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
