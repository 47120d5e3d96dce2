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


def _late_kernel_imports(source: str) -> list[int]:
    """Lines of `import kernels...` / `from kernels... import` inside a function: run at
    call time, they bind whatever package is `kernels` then. A commit's package loaded
    as the A/B reference (gemmgate/reference.py) would run this tree's code there."""
    import ast

    lines = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level \
                else []
            if any(n == "kernels" or n.startswith("kernels.") for n in names):
                lines.append(node.lineno)
    return lines


def test_no_kernel_module_imports_its_package_at_call_time():
    assert _late_kernel_imports("def f():\n    from kernels.matmul import matmul\n") == [2]
    assert _late_kernel_imports("import kernels.matmul as m\ndef f():\n    return m\n") == []
    found = {p.name: _late_kernel_imports(p.read_text())
             for p in sorted((ROOT / "kernels").glob("*.py"))}
    assert {k: v for k, v in found.items() if v} == {}
