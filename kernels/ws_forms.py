"""Which tiles the warp-specialized kernel (kernels/matmul_ws.py) runs, and the rule that
gives a 16-bit pick its form there: no Gluon here, so the dispatcher reads it freely.

Session 49 (H200, bf16 and fp16, rr, kept copies): on the same tile the warp-specialized
kernel ran x1.05 (128x128, 16 drawn shapes, 15 faster), x1.02 (128x144) and x1.09
(128x192) against `tma` and `tma_wide` at 8 warps; against the picks it would replace
(their own stages and warps) x1.02-1.07 where B's part tile is not read past N. So a
16-bit row-major pick of those tiles runs there (`form`); its price in the lookup stays
the `tma` entry's.
"""

from __future__ import annotations

import dataclasses

from kernels.tile import TileConfig

BLOCK_M = 128
BLOCK_K = 64
WARPS = 8          # the two consumer warpgroups (the kernel's default partition)
SMEM = 232448      # a program's shared memory on the H200 (227 KiB)
_RESTS = (0, 16, 32, 64)   # the narrower box of a wide tile (none: 128 wide)


def parts(config: TileConfig) -> tuple[int, int]:
    """A tile's B boxes: its power of two up to 128 and the rest (128x144: 128 + 16)."""
    first = min(128, 1 << (config.block_n.bit_length() - 1))
    return first, config.block_n - first


def stages_for(block_n: int, smem: int = SMEM, block_n1: int = 0) -> int:
    """Stages that fit beside C's staging buffers (16-bit), at most 6."""
    cols = block_n + block_n1
    stage = (BLOCK_M * BLOCK_K + BLOCK_K * cols) * 2
    return max(2, min(6, (smem - BLOCK_M * cols * 2 - 4096) // stage))


def fits(config: TileConfig) -> bool:
    """Whether the kernel runs the tile: 128 rows, BLOCK_K 64, 8 warps, one program an
    SM, K whole, 128 columns or 128 and a smaller power of two up to 64."""
    first, rest = parts(config)
    return (config.block_m, config.block_k, config.num_warps, config.split_k,
            config.occupancy) == (BLOCK_M, BLOCK_K, WARPS, 1, 1) and first == 128 \
        and rest in _RESTS


def form(pick: TileConfig) -> TileConfig | None:
    """The warp-specialized form of a 16-bit row-major pick, or None: `tma` 128x128x64 or
    `tma_wide` 128x(128 + 16, 32 or 64)x64 at one program an SM, K whole (any stages
    and warps: the form takes its own, `stages_for`, and 8 warps)."""
    if pick.variant not in ("tma", "tma_wide") or (pick.split_k, pick.occupancy) != (1, 1):
        return None
    ws = dataclasses.replace(pick, variant="tma_ws", num_warps=WARPS)
    if not fits(ws) or (pick.variant == "tma") != (pick.block_n == 128):
        return None
    first, rest = parts(ws)
    return dataclasses.replace(ws, num_stages=stages_for(first, block_n1=rest))
