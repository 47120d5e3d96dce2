"""IEEE fp32's tiles: fp32 without tensor cores runs on the FMA units, where the best tiles
are small, K is split over many programs, thin M takes 16- and 32-row tiles, and M of
one or two runs the gemv variant. kernels/configs.py's search space and heuristic take
them from here for `fma` (IEEE fp32) keys; kernels/table.py borrows `fma_split`.
"""

from __future__ import annotations

import re

import triton

from kernels.tile import MAX_TMA_SPLIT, TileConfig, cdiv, cfg, usable

# The TMA kernels' K loop reads A then B from shared memory for the dot. For an FMA dot
# (IEEE fp32), Triton 3.7 and later (3.7.1, 3.8.0, 3.9.0 checked) put a barrier between
# the two reads and every read before the first FMA: the whole A fragment lives through
# it, and ptxas cannot move a read across it. 64x64x32 at 4 warps took 255 registers and
# spilled 150-170 instructions in its loop, against 96 on 3.6; 64x64x64 1,556 B of spill
# stores (session 54, compiled for sm_90a on the CPU). Read B first there and 3.7-3.9
# compile it to 96 registers, no spill, as 3.6 does either way. On 3.6 the kernels keep
# A first: what the tuning table's entries were timed on (B_FIRST off: the same PTX).
B_FIRST_FROM = (3, 7)


def b_first(input_precision: str, is_fp32: bool, version: str = "") -> bool:
    """Whether a TMA kernel's K loop reads B before A: IEEE fp32 (an FMA dot) on Triton
    B_FIRST_FROM or later (`version`: the running Triton's by default)."""
    got = re.match(r"(\d+)\.(\d+)", version or triton.__version__)
    return is_fp32 and input_precision == "ieee" and got is not None and \
        (int(got[1]), int(got[2])) >= B_FIRST_FROM

# IEEE fp32 runs on the FMA units, not wgmma: its best tiles are small (4096^3 and 8192^3:
# the tiled kernel's 64x64x32 with 4 warps; mid-size shapes: TMA 64x64x32, where the
# tf32-shaped tiles of 128 and up ran 0.10-0.53 of cuBLAS, session 19 call A), and
# 128x128 with 4 warps (128 accumulators a thread) ran at a tenth of that. So its own
# list, smallest first, and splits of small tiles.
FMA_TILES = ((64, 64, 32), (128, 64, 32), (64, 128, 32), (64, 32, 32), (128, 128, 32),
             (64, 64, 16), (128, 32, 32), (64, 64, 64))
FMA_SPLIT = ((64, 64, 32), (128, 64, 32), (64, 128, 32), (64, 32, 32))
FMA_SMALL_TILED = ((32, 64, 32), (32, 32, 32))
# IEEE fp32 at thin M on TMA loads: the FMA units have no wgmma's 64 rows, so tiles of 16
# and 32 rows, K split about 16 ways, waste less of each dot. Beside the picks (64-row TMA
# split tiles, a 16-row tiled one): 26 x 5523 x 7310 0.57 -> 1.08 of cuBLAS (32x128x32
# k16), 32 x 512 x 3376 0.79 -> 1.17 and 30 x 169 x 887 0.86 -> 1.43 (16x64x32 k16), 45 x
# 5239 x 3349 0.94 -> 1.01 (16x128x32 k16) (session 23, call 6). Searched
# (`tma_split_space`), and the heuristic's pick (`fma_thin`).
FMA_THIN = ((16, 64, 32), (16, 128, 32), (32, 64, 32), (32, 128, 32))

# gemv (IEEE fp32 at M <= GEMV_M): one row per program (at M = 2 two programs read each B
# tile, the second mostly from L2), (BLOCK_N, BLOCK_K), the heuristic's first. L2 flushed:
# 1 x 4096 x 4096 rr, 128x64 split 8: 0.90 of cuBLAS, the tiled kernel's 16-row tile 0.80;
# rc 1.25 (1.11); 2 x 4096 x 4096 2.64 (2.16); at M = 2 one row per program matched or beat
# two (2 x 28672 x 8192 rc 0.99 against 0.87-0.93; rr 0.83 against 0.79-0.85). Session 21,
# calls C and E.
_GEMV = ((128, 64), (128, 32), (256, 64), (256, 32))
GEMV_M = 2          # up to this M IEEE fp32 (and tf32x3) runs the gemv variant (decide.gemv_rows)
_GEMV_RANGE = 512   # K rows per split the heuristic aims at (split 8 at K = 4096)


# IEEE fp32 on TMA loads: 64x64x32 with K split, one program per (tile, range), three
# resident per SM (64 KiB each at 3 stages). On the FMA units that ran mid shapes at
# 0.83-1.06 of cuBLAS where the persistent kernel's picks ran 0.46-0.76 (3147 x 875 x
# 5283, 467 x 1024 x 2128, 176 x 2441 x 1632, 32 x 1389 x 304...), and 2048^3 and 4096^3
# at 0.88 and 0.91 where the best unsplit tile ran 0.83 and 0.85 (session 22, calls A
# and B). Split: K ranges of four blocks at least, as many as keep tiles x splits within
# FMA_PROGRAMS (k4 beat k2 at 210-350 tiles, k2 beat k4 at 840-1024); past that 2,
# where ranges are 256 rows or more (5248 x 7271 x 272: k2 0.78, unsplit 0.83).
FMA_TILE = (64, 64, 32)
FMA_PROGRAMS = 1536
_FMA_PER_SM = 3   # `fma_skinny_split`: programs per SM at most


def _most_splits(tiles: int, programs: int, k: int, range_k: int) -> int:
    """The largest power-of-two K split (up to MAX_TMA_SPLIT) that keeps tiles x split
    within `programs` and every K range `range_k` long at least."""
    split = 1
    while tiles * split * 2 <= programs and k >= split * 2 * range_k \
            and split * 2 <= MAX_TMA_SPLIT:
        split *= 2
    return split


def fma_split(m: int, n: int, k: int, tile: tuple[int, int, int] = FMA_TILE) -> int:
    """The K split of an IEEE fp32 TMA tile (1: unsplit, the persistent kernel)."""
    bm, bn, bk = tile
    split = _most_splits(cdiv(m, bm) * cdiv(n, bn), FMA_PROGRAMS, k, 4 * bk)
    if split == 1 and k >= 2 * 256:
        split = 2
    return split


def fma_thin(m: int, n: int, k: int, num_sms: int) -> TileConfig | None:
    """IEEE fp32 below wgmma's M on TMA loads: a `FMA_THIN` tile split 16 ways where K
    ranges are 1.5 blocks or more, else 8 (None: K too short for 8). 128 columns and the
    rows, 16 or 32, that pad M less (32 on a tie: twice the reuse of each B tile); where
    those make fewer programs than SMs, 16x64 (four times the programs). The one
    holdout pick it made in session 24, 39 x 271 x 559 rc, ran x1.43 (1.00 -> 1.44).
    Measured tile by tile (session 23, call 6), the rule's pick first: 26 x 5523 x 7310
    32x128 k16 1.08 of cuBLAS (16x128 0.93, the table's 64x64 0.57); 45 x 5239 x 3349
    16x128 1.01 (32x128 0.89, 64x64 0.94); 32 x 512 x 3376 16x64 1.17 (32x64 1.10, 64x64
    0.99); 30 x 169 x 887 16x64 1.43 (32x64 1.36, 64x64 1.26)."""
    bk = FMA_THIN[0][2]
    split = next((s for s in (16, 8) if 2 * k >= 3 * s * bk), 0)
    if not split:
        return None
    bm = 16 if cdiv(m, 16) * 16 < cdiv(m, 32) * 32 else 32
    if cdiv(m, bm) * cdiv(n, 128) * split < num_sms:
        return cfg(16, 64, bk, 3, 4, "tma_split", split)
    return cfg(bm, 128, bk, 3, 4, "tma_split", split)


def fma_skinny_split(m: int, n: int, k: int, c: TileConfig, num_sms: int) -> int:
    """IEEE fp32's K split of a skinny tiled tile: the FMA units want more programs than
    one per SM (`split_for`'s aim), so up to `_FMA_PER_SM` per SM, in K ranges of two
    blocks at least. 32 x 512 x 3376 on 16x128x64 ran split 16 at 0.93 of cuBLAS, split
    8 (`split_for`'s) at 0.78 (session 23, call 5); the holdout picks it changed in
    session 24, 32 x 3328 x 571 (k2 -> k4) and 4 x 2848 x 2048 (k4 -> k16), ran x0.98 and
    x1.01."""
    return _most_splits(cdiv(m, c.block_m) * cdiv(n, c.block_n), _FMA_PER_SM * num_sms, k,
                        2 * c.block_k)


def gemv_splits(m: int, n: int, k: int, block_n: int, block_k: int,
                num_sms: int) -> tuple[int, ...]:
    """K splits for a gemv tile: the most (powers of two) that leave every K range
    `_GEMV_RANGE` rows, more while the programs (one per row, B tile and range) make less
    than one wave; then half and twice it. Each range four BLOCK_K blocks at least, at most
    MAX_TMA_SPLIT ranges. (1 x 4096 x 4096: split 8 ran 0.90 of cuBLAS, 16 0.88; 1 x
    14336 x 4096: 8 best of 8, 16, 32; session 21, calls B and C.)"""
    def fits(s: int) -> bool:
        return s == 1 or (k >= s * 4 * block_k and s <= MAX_TMA_SPLIT)

    split = 1
    while fits(split * 2) and k >= split * 2 * _GEMV_RANGE:
        split *= 2
    while fits(split * 2) and m * cdiv(n, block_n) * split < num_sms:
        split *= 2
    return tuple(s for s in (split, split // 2, split * 2) if s >= 1 and fits(s))


def gemv_space(m: int, n: int, k: int, num_sms: int, smem_limit: int) -> list[TileConfig]:
    """The gemv variant's configs for one shape (IEEE fp32, M <= GEMV_M), the heuristic's
    first: each tile of `_GEMV`, one row per program, at its splits (`gemv_splits`), 4
    warps."""
    out = [cfg(1, bn, bk, 1, 4, "gemv", split, 1) for bn, bk in _GEMV
           for split in gemv_splits(m, n, k, bn, bk, num_sms)]
    return [c for c in out if usable(c, "fp32", smem_limit)]
