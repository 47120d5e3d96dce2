"""scripts/deps_except.py: gemmgate's requirements but the named ones (install.sh on a
machine whose triton comes from another distribution)."""

import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from deps_except import lines  # noqa: E402

REQUIRES = ['torch>=2.4', 'triton>=3.6', 'numpy>=1.24',
            'nvidia-ml-py>=12; platform_system == "Linux"', 'pytest>=8; extra == "test"',
            "zizmor==1.32.0; extra == 'test'", 'sphinx>=7; extra == "docs"',
            'Pytorch_Triton.ROCm>=3; extra == "test"',
            'pynvml>=11; platform_system == "Linux" and extra == "test"',
            'winonly>=1; platform_system == "Windows" and extra == "test"']
LINUX = platform.system() == "Linux"


def test_all_but_the_named_with_the_markers_evaluated_here():
    """A marker is this machine's with the extra: a test requirement with a platform
    condition too is kept where both hold (setuptools writes `... and extra == "test"`)."""
    got = lines(REQUIRES, {"torch", "triton", "pytorch-triton-rocm"}, "test")
    assert got == ["numpy>=1.24", *(["nvidia-ml-py>=12"] if LINUX else []), "pytest>=8",
                   "zizmor==1.32.0", *(["pynvml>=11"] if LINUX else [])]
    assert lines(REQUIRES, {"triton"}, "") == ["torch>=2.4", "numpy>=1.24",
                                                *(["nvidia-ml-py>=12"] if LINUX else [])]


def test_the_installed_gemmgate_leaves_out_torch_and_triton():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "deps_except.py"), "--extra",
                          "test", "torch", "triton"], capture_output=True, text=True,
                         check=True).stdout
    names = [x.split(">")[0].split("=")[0].strip() for x in out.splitlines()]
    assert "torch" not in names and "triton" not in names
    assert {"numpy", "rich", "pytest", "asv"} <= set(names)
    base = subprocess.run([sys.executable, str(ROOT / "scripts" / "deps_except.py"), "torch",
                           "triton"], capture_output=True, text=True, check=True).stdout
    assert "numpy>=1.24" in base.split() and "pytest" not in base
