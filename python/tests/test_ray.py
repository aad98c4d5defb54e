"""examples/python/ray_preprocess.py on a local Ray instance (2 CPUs): Ray Data's
read_binary_files + map_batches with the example's gpuprep callable class gives the arrays
Pipeline.preprocess gives for the same files."""
import importlib.util
import os

import numpy as np
import pytest

import gpuprep

ray = pytest.importorskip("ray", reason="Ray is in tools/requirements.txt: install it")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHOTOS = os.path.join(ROOT, "tests", "data", "photos")


def example():
    path = os.path.join(ROOT, "examples", "python", "ray_preprocess.py")
    spec = importlib.util.spec_from_file_location("ray_preprocess", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_map_batches_gives_the_pipelines_arrays(local_ray, tmp_path):
    # A folder with one file that is no image: left out, the others unharmed.
    names = sorted(os.listdir(PHOTOS))
    for name in names:
        os.symlink(os.path.join(PHOTOS, name), tmp_path / name)
    (tmp_path / "zz-broken.jpg").write_bytes(b"\xff\xd8\xff not a JPEG")
    rows = example().preprocess_folder(str(tmp_path), batch_size=4, actors=1,
                                       backend="cpu").take_all()
    got = {os.path.basename(r["path"]): r["image"] for r in rows}
    assert sorted(got) == names
    expected, _ = gpuprep.Pipeline("cpu").preprocess(
        [os.path.join(PHOTOS, n) for n in names], gpuprep.Transform.imagenet_eval())
    for name, image in zip(names, expected):
        assert got[name].dtype == np.float32 and got[name].shape == (3, 224, 224)
        assert np.array_equal(got[name], image), name
