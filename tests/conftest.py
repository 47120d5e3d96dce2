"""Test set-up: without a GPU, kernels run on the Triton interpreter (CPU tensors).

TRITON_INTERPRET is read when a kernel is decorated, so it is set here, before any test
module imports `kernels`. GPU tests carry the `gpu` marker and skip without a device.
"""

import os
import shutil
import subprocess
from pathlib import Path

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


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def _repo_with_kernels(d: Path) -> Path:
    """A new git repository in `d` holding an uncommitted copy of this checkout's kernels/."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    shutil.copytree(Path(__file__).resolve().parents[1] / "kernels", d / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    _git(d, "init", "-q")
    _git(d, "config", "user.email", "t@example.com")
    _git(d, "config", "user.name", "t")
    return d


@pytest.fixture(scope="session")
def kernels_repo(tmp_path_factory) -> tuple[Path, str, str]:
    """A throw-away git repository: (path, first commit, second commit). Both commits hold
    a copy of this checkout's kernels/ whose configs.py ends in MARK = 'old' / 'new'; a
    third commit (HEAD) removes kernels/. For the A/B reference (gemmgate/reference.py)."""
    d = _repo_with_kernels(tmp_path_factory.mktemp("refrepo"))
    configs = d / "kernels" / "configs.py"
    original = configs.read_text()
    commits = []
    for mark in ("old", "new"):
        configs.write_text(original + f"\nMARK = {mark!r}\n")
        _git(d, "add", "-A")
        _git(d, "commit", "-q", "-m", mark)
        commits.append(_git(d, "rev-parse", "HEAD"))
    _git(d, "rm", "-q", "-r", "kernels")
    _git(d, "commit", "-q", "-m", "drop kernels")
    return d, commits[0], commits[1]


@pytest.fixture(scope="session")
def clean_repo(tmp_path_factory) -> tuple[Path, str]:
    """A throw-away git repository whose one commit (HEAD) holds this checkout's kernels/,
    with a working tree equal to it: (path, HEAD)."""
    d = _repo_with_kernels(tmp_path_factory.mktemp("cleanrepo"))
    _git(d, "add", "-A")
    _git(d, "commit", "-q", "-m", "kernels")
    return d, _git(d, "rev-parse", "HEAD")
