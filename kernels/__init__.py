"""The project's Triton GEMM kernels under test.

`matmul(a, b, *, precision=None, out=None)` is the contract gemmgate relies on.
"""

from kernels.matmul import matmul

__all__ = ["matmul"]
