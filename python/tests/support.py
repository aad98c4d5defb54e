"""What the test modules share: the repository's root, the bundled photos, the backends each
test runs on, and the Pillow reference script (tools/pillow_reference.py) importable."""
import os
import sys

import pytest

import gpuprep

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHOTOS = sorted(os.path.join(ROOT, "tests", "data", "photos", f)
                for f in os.listdir(os.path.join(ROOT, "tests", "data", "photos")))
BACKENDS = ["cpu", "gpu"]
sys.path.insert(0, os.path.join(ROOT, "tools"))


def pipeline(backend):
    """A Pipeline on `backend`; a GPU that does not open fails the test, unless the run is marked
    GPU-less (GPUPREP_NO_GPU=1), where it skips."""
    try:
        return gpuprep.Pipeline(backend)
    except gpuprep.GpuError as e:
        if os.environ.get("GPUPREP_NO_GPU") == "1":
            pytest.skip(f"GPUPREP_NO_GPU=1: {e}")
        raise
