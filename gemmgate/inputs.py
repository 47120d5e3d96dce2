"""Seeded GEMM inputs in a case's layout and a mode's dtype, plus the float64 reference.

Values are standard normal (never zeros: zeros hide unwritten outputs and run faster).
fp8 inputs are quantised with a per-tensor scale (amax / dtype max), so that
A = A_q * scale_a exactly; the reference is float64 of those same rounded inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gemmgate.precision import PrecisionMode
from gemmgate.shapes import Case


@dataclass(frozen=True)
class GemmInputs:
    a: torch.Tensor
    b: torch.Tensor
    scale_a: torch.Tensor | None = None
    scale_b: torch.Tensor | None = None

    def _operands64(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A and B in float64, scales applied: what the reference multiplies."""
        a, b = self.a.double(), self.b.double()
        if self.scale_a is not None:
            a = a * self.scale_a.double()
            b = b * self.scale_b.double()
        return a, b

    def reference(self) -> torch.Tensor:
        """float64 A @ B of the already-rounded inputs (scales applied)."""
        a, b = self._operands64()
        return a @ b

    def scale2(self) -> float:
        """The squared Frobenius norm A @ B has on average over independent, zero-mean
        inputs like these: ||A||^2 ||B||^2 / K (scales applied; 0 where K is 0). The
        accuracy check's floor for outputs too small for their own norm to mean much
        (gemmgate/accuracy.py)."""
        return _scale2(*self._operands64())

    def reference_and_scale2(self) -> tuple[torch.Tensor, float]:
        """`reference()` and `scale2()` from one float64 copy of the operands."""
        a, b = self._operands64()
        return a @ b, _scale2(a, b)


def _scale2(a: torch.Tensor, b: torch.Tensor) -> float:
    k = a.shape[1]
    return float(a.square().sum()) * float(b.square().sum()) / k if k else 0.0


def _buffer_shape(rows: int, cols: int, col_major: bool, pad: int) -> tuple[int, int]:
    """The contiguous storage behind an operand, leading dimension padded."""
    return (cols, rows + pad) if col_major else (rows, cols + pad)


FP8_SPREAD = (0.125, 8.0)   # scaled modes: A's and B's values times these (powers of two)


def _buffer(rows: int, cols: int, col_major: bool, pad: int, gen, device) -> torch.Tensor:
    return torch.randn(_buffer_shape(rows, cols, col_major, pad), generator=gen,
                       device=device)


def _view(buf: torch.Tensor, rows: int, cols: int, col_major: bool) -> torch.Tensor:
    """The (rows, cols) operand: a slice of the buffer, transposed if column-major."""
    return buf[:, :rows].t() if col_major else buf[:, :cols]


def _dtype(mode: PrecisionMode, fp8_dtype: str) -> torch.dtype:
    return getattr(torch, fp8_dtype if mode.scaled else mode.input_dtype)


def make_inputs(case: Case, mode: PrecisionMode, device: str, seed: int = 0,
                fp8_dtype: str = "float8_e4m3fn") -> GemmInputs:
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    ca, cb = case.layout[0] == "c", case.layout[1] == "c"
    bufs = (_buffer(case.m, case.k, ca, case.pad, gen, device),
            _buffer(case.k, case.n, cb, case.pad, gen, device))
    scales: list[torch.Tensor | None] = [None, None]
    dtype = _dtype(mode, fp8_dtype)
    if mode.scaled:
        # A's values an eighth, B's 8x: the fp8 payloads are the same bits (powers of two
        # scale the amax too), the scales 64x apart, so a kernel that swaps or drops one
        # is off 64x or more; from one normal buffer each they were 0.3-0.5% apart, and a
        # swapped scale passed the accuracy check (a review, session 67)
        bufs = tuple(buf * f for buf, f in zip(bufs, FP8_SPREAD))
        fmax = torch.finfo(dtype).max
        # the amax of each operand, not of its buffer: a padded leading dimension's
        # extra elements are no part of A or B (`+p3` put A's largest at 288, not 448)
        views = (_view(bufs[0], case.m, case.k, ca), _view(bufs[1], case.k, case.n, cb))
        scales = [(v.abs().amax() / fmax).clamp(min=1e-12) if v.numel()
                  else torch.ones((), device=device) for v in views]
        # (clamped: the padding beyond an operand's amax saturates, rather than turning
        # NaN in e4m3fn, which holds no inf)
        bufs = tuple((buf / s).clamp(-fmax, fmax).to(dtype) for buf, s in zip(bufs, scales))
    else:
        bufs = tuple(buf.to(dtype) for buf in bufs)
    a = _view(bufs[0], case.m, case.k, ca)
    b = _view(bufs[1], case.k, case.n, cb)
    return GemmInputs(a, b, *scales)


def layout(case: Case, mode: PrecisionMode, fp8_dtype: str = "float8_e4m3fn"
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """A and B as `make_inputs` lays them out (shape, strides, dtype) on the meta device:
    no memory and no values, for decisions that read the layout only (the dispatcher's)."""
    ca, cb = case.layout[0] == "c", case.layout[1] == "c"
    dtype = _dtype(mode, fp8_dtype)

    def operand(rows: int, cols: int, col_major: bool) -> torch.Tensor:
        buf = torch.empty(_buffer_shape(rows, cols, col_major, case.pad), dtype=dtype,
                          device="meta")
        return _view(buf, rows, cols, col_major)

    return operand(case.m, case.k, ca), operand(case.k, case.n, cb)
