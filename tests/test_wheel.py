"""The built wheel (`pip install .`, asv's build of each commit) holds what the packages
read at run time: the kernels' tuning tables (a wheel without them ran the heuristic's
tiles and said nothing; a review, session 67). Built from a copy of the tree (setuptools
writes build/ and *.egg-info beside the sources)."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _can_build_here() -> bool:
    """setuptools builds wheels itself from 70.1 on; before, it needs `wheel`."""
    import importlib.util

    import setuptools
    from packaging.version import Version

    return Version(setuptools.__version__) >= Version("70.1") or \
        importlib.util.find_spec("wheel") is not None


def test_the_wheel_holds_the_tuning_tables(tmp_path):
    if not _can_build_here():
        pytest.skip("this setuptools cannot build a wheel without the `wheel` package")
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(REPO / "pyproject.toml", src)
    for pkg in ("gemmgate", "kernels"):
        shutil.copytree(REPO / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    for extra in ("README.md", "LICENSE"):
        if (REPO / extra).is_file():
            shutil.copy(REPO / extra, src)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", str(src), "-w", str(tmp_path / "whl")],
                   check=True, capture_output=True, timeout=300, cwd=tmp_path)
    (wheel,) = (tmp_path / "whl").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    tables = {p.relative_to(REPO).as_posix() for p in (REPO / "kernels" / "tuned").glob("*.json")}
    assert tables and tables <= names
