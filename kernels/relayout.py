"""Operand copies for the dispatcher: any 2-D strided view into a row-major matrix whose
leading dimension is padded to 16 bytes (what a tensor descriptor and wgmma want).

A transposing copy through torch (`empty(...).copy_(x.t())`) ran at ~0.4 TB/s for fp8 on
the H200 (docs/PERF.md, session 5): 86 us of a 190 us fp8 4096^3 GEMM. This kernel
reads a BLOCK x BLOCK tile coalesced along the source's contiguous dimension and writes
it coalesced along the destination's rows; Triton converts the layout through shared
memory in between.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(x_ptr, y_ptr, R, C, sxr, sxc, syr,
                 BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (r[:, None] < R) & (c[None, :] < C)
    x = tl.load(x_ptr + r[:, None] * sxr + c[None, :] * sxc, mask=mask)
    tl.store(y_ptr + r[:, None] * syr + c[None, :], x, mask=mask)


KERNELS = (_copy_kernel,)
_BLOCK = 64


def pitch(cols: int, elem: int) -> int:
    """Elements per row of the copy: `cols` rounded up to 16 bytes."""
    per = max(16 // elem, 1)
    return -(-cols // per) * per


def aligned_copy(x: torch.Tensor) -> torch.Tensor:
    """x (rows, cols), any strides, as a row-major view with a 16-byte aligned pitch."""
    rows, cols = x.shape
    pitch_ = pitch(cols, x.element_size())
    buf = torch.empty((rows, pitch_), dtype=x.dtype, device=x.device)
    if rows and cols:
        grid = (triton.cdiv(rows, _BLOCK), triton.cdiv(cols, _BLOCK))
        _copy_kernel[grid](x, buf, rows, cols, x.stride(0), x.stride(1), pitch_,
                           BLOCK_R=_BLOCK, BLOCK_C=_BLOCK, num_warps=4)
    return buf[:, :cols]
