"""Providers: who computes the GEMM. Each builds, from inputs, a zero-argument callable
that returns the output; anything that is setup (allocation, a layout the vendor
insists on) happens in the builder, outside the timed call.

- "triton": the project's kernel, kernels.matmul, with the mode passed explicitly and
  the run's tile-choice hook (gemmgate/tuning.py Chooser), which records the tile.
- "vendor": torch.matmul (cuBLAS / hipBLASLt / CPU BLAS); fp8 through torch._scaled_mm.
  The vendor's math flags are set by gemmgate.precision.vendor_flags around the case.
- "reference": the project's kernel at another commit (gemmgate/reference.py), for A/B:
  the same kernel_call with that commit's matmul.

Nothing here is global state: the Runner (gemmgate/run.py) holds the kernels it calls.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from gemmgate.inputs import GemmInputs
from gemmgate.precision import PrecisionMode

Call = Callable[[], torch.Tensor]
Builder = Callable[[GemmInputs, PrecisionMode], Call]


class Unsupported(Exception):
    """This provider cannot run this case (e.g. the vendor's fp8 alignment rules)."""


def _out(inp: GemmInputs, mode: PrecisionMode) -> torch.Tensor:
    return torch.empty((inp.a.shape[0], inp.b.shape[1]), dtype=getattr(torch, mode.output_dtype),
                       device=inp.a.device)


def kernel_call(matmul, choose, inp: GemmInputs, mode: PrecisionMode) -> Call:
    """A kernel honouring the kernels.matmul contract, with a tile-choice hook."""
    out = _out(inp, mode)
    a, b, sa, sb = inp.a, inp.b, inp.scale_a, inp.scale_b

    def call() -> torch.Tensor:
        return matmul(a, b, precision=mode.name, out=out, scale_a=sa, scale_b=sb,
                      choose=choose)

    return call


def vendor_provider(inp: GemmInputs, mode: PrecisionMode) -> Call:
    a, b = inp.a, inp.b
    if mode.scaled:
        return _scaled_mm(inp)
    out = _out(inp, mode)

    def call() -> torch.Tensor:
        return torch.matmul(a, b, out=out)

    return call


def _round16(x: int) -> int:
    return -(-x // 16) * 16


def _k_major_padded(inp: GemmInputs) -> tuple[torch.Tensor, torch.Tensor]:
    """A row-major (M, K16) and B column-major (K16, N16), zero-padded where K or N is not
    a multiple of 16: what cuBLASLt's fp8 GEMM needs, done once, outside the timing."""
    a, b = inp.a, inp.b
    (m, k), n = a.shape, b.shape[1]
    k16, n16 = _round16(k), _round16(n)
    if (k16, n16) == (k, n):
        return a.contiguous(), b.t().contiguous().t()
    ap = torch.zeros((m, k16), dtype=a.dtype, device=a.device)
    ap[:, :k].copy_(a)
    bt = torch.zeros((n16, k16), dtype=b.dtype, device=b.device)  # B^T row-major
    bt[:n, :k].copy_(b.t())
    return ap, bt.t()


def _scaled_mm(inp: GemmInputs) -> Call:
    """fp8 through torch._scaled_mm (cuBLASLt). Where K or N is not a multiple of 16,
    which cuBLASLt requires, both operands are zero-padded up to one, as a cuBLAS user
    would pad, and the output is sliced back. The padded product is exact (the extra
    terms are zeros), and the vendor does at most 16/K + 16/N more work (K = 253: 1.2%)."""
    m, k = inp.a.shape
    n = inp.b.shape[1]
    if m == 0 or n == 0 or k == 0:
        raise Unsupported(f"torch._scaled_mm needs non-zero dims (got M={m}, N={n}, K={k})")
    a, b = _k_major_padded(inp)
    sa, sb = inp.scale_a, inp.scale_b
    padded_n = b.shape[1] != n

    def call() -> torch.Tensor:
        out = torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                               use_fast_accum=False)
        return out[:, :n] if padded_n else out

    try:
        call()
    except RuntimeError as e:  # a shape rule of this torch/cuBLASLt not met: no vendor
        raise Unsupported(f"torch._scaled_mm rejects M={m}, N={n}, K={k}: "
                          f"{str(e).splitlines()[0][:200]}") from None
    return call
