"""The import graph is part of the design (docs/ARCHITECTURE.md): import-linter checks
the contracts in pyproject.toml, and a planted violation must be caught."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.fail("lint-imports missing: scripts/bootstrap.sh installs import-linter")
    return subprocess.run([exe, "--no-cache"], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(cwd), "PATH": str(Path(
                              sys.executable).parent) + ":/usr/bin:/bin"})


def test_the_import_contracts_hold():
    out = _lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "BROKEN" not in out.stdout


def test_a_kernel_importing_the_harness_breaks_the_contract(tmp_path):
    for name in ("gemmgate", "kernels"):
        shutil.copytree(ROOT / name, tmp_path / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    bad = tmp_path / "kernels" / "configs.py"
    bad.write_text(bad.read_text() + "\nfrom gemmgate import tuning  # noqa\n")
    out = _lint(tmp_path)
    assert out.returncode != 0
    assert "kernels/ is the thing under test" in out.stdout and "BROKEN" in out.stdout
