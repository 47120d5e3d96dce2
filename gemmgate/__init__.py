"""gemmgate: a CI performance regression harness for Triton GEMM kernels across chips."""

__version__ = "0.1.0"
