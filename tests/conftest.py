"""Test set-up: without a GPU, kernels run on the Triton interpreter (CPU tensors).

TRITON_INTERPRET is read when a kernel is decorated, so it is set here, before any test
module imports `kernels`. GPU tests carry the `gpu` marker and skip without a device.
"""

import os

import pytest
import torch

HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    os.environ["TRITON_INTERPRET"] = "1"


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def device() -> str:
    return "cuda" if HAS_GPU else "cpu"


@pytest.fixture(autouse=True, scope="session")
def _tuning_cache(tmp_path_factory):
    """Tests never read or write the user's tuning cache (~/.cache/gemmgate/tuning)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("GEMMGATE_TUNING_DIR", str(tmp_path_factory.mktemp("tuning")))
    yield
    mp.undo()
