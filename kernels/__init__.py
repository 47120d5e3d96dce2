"""The project's Triton GEMM kernels under test.

`matmul(a, b, *, precision=None, out=None)` is the contract gemmgate relies on; it also
takes `config=` (a TileConfig) or `choose=` (a tile-choice hook), see kernels/matmul.py.
Variants: kernels/matmul_tiled.py (any strides, split-K) and kernels/matmul_tma.py
(persistent, tensor-memory descriptors); kernels/dispatch.py picks one per call, from
the tuning table kernels/tuned/<chip>.json (kernels/table.py) or a heuristic.
This package imports only torch, triton and itself (an import-linter contract).
"""

from kernels.matmul import kernel_hash, matmul
from kernels.tile import TileConfig

__all__ = ["TileConfig", "kernel_hash", "matmul"]
