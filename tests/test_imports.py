"""The import graph is part of the design (docs/ARCHITECTURE.md): import-linter checks
the contracts in pyproject.toml, and a planted violation must be caught."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    """`lint-imports` through this interpreter (its console script may not be on PATH)."""
    try:
        import importlinter  # noqa: F401
    except ImportError:
        pytest.fail("import-linter missing: scripts/bootstrap.sh installs it ('.[test]')")
    code = ("import sys; from importlinter.cli import lint_imports_command; "
            "lint_imports_command(['--no-cache'])")
    # the linted tree first; then whatever made import-linter importable here (a
    # PYTHONPATH site, as the device machine's carried wheels are)
    path = os.pathsep.join(p for p in (str(cwd), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": path, "PATH": str(
                              Path(sys.executable).parent) + ":/usr/bin:/bin"})


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


def test_no_kernel_module_imports_its_package_at_call_time(tmp_path):
    """A call-time `import kernels...` binds whatever package is `kernels` then: a commit's
    package loaded as the A/B reference or a bisect step (gemmgate/reference.py) would run
    this tree's code there, so reference.load refuses such a commit; this tree has none."""
    from gemmgate.reference import late_imports

    pkg = tmp_path / "kernels"
    pkg.mkdir()
    (pkg / "a.py").write_text("import kernels.matmul as m\nif 0:\n    from kernels import x\n"
                              "def f():\n    from kernels.matmul import matmul\n"
                              "def g():\n    from . import dispatch\n    import os\n")
    assert late_imports(pkg) == ["kernels/a.py:5", "kernels/a.py:7"]
    assert late_imports(ROOT / "kernels") == []
