"""What tests share for a `kernels/` package that does not import (imported as
tests.gemmgate.broken_kernels): gemmgate run in a fresh process with such a package first
on its path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_broken(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, Path]:
    """`python3 -m gemmgate ARGS` (on the CPU) with a `kernels/__init__.py` holding a syntax
    error first on the path: (the finished process, that file)."""
    broken = tmp_path / "broken" / "kernels"
    broken.mkdir(parents=True)
    init = broken / "__init__.py"
    init.write_text("def matmul(a, b:\n")
    env = {**os.environ, "PYTHONPATH": f"{broken.parent}{os.pathsep}{ROOT}"}
    env.pop("GEMMGATE_CHIP", None)
    r = subprocess.run([sys.executable, "-m", "gemmgate", *args], capture_output=True,
                       text=True, env=env, cwd=tmp_path, timeout=300)
    return r, init
