"""The TMA kernels' operand loads: one home for reading a tile through a descriptor that
holds the matrix either way round."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def load_oriented(desc, off_r, off_c, T: tl.constexpr):
    """The tile at rows `off_r`, columns `off_c` of the matrix `desc` reads; `T`: `desc`
    holds the matrix transposed (its block is the tile's transpose). A reads as
    (off_m, off_k), B as (off_k, off_n). Inlined: the PTX is the loads' written out
    (scripts/restamp.py compared it)."""
    if T:
        x = desc.load([off_c, off_r]).T
    else:
        x = desc.load([off_r, off_c])
    return x
