"""The project's Triton GEMM kernels under test.

`matmul(a, b, *, precision=None, out=None)` is the contract gemmgate relies on; it also
takes `config=` (a TileConfig) or `choose=` (a tile-choice hook), see kernels/matmul.py.
This package imports only torch, triton and itself (an import-linter contract).
"""

from kernels.configs import TileConfig
from kernels.matmul import kernel_hash, matmul

__all__ = ["TileConfig", "kernel_hash", "matmul"]
