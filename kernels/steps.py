"""The step model: how kernels/table.py's nearest lookup prices a tile on a shape it was
not tuned on (kernels/pricing.py's `transfer`: an entry's tuned time per step, times the
steps here).

A tile's work on a shape is counted as the busiest SM sees it, in K blocks of one
program alone on an SM (`steps`). A launch adds a fixed part outside its K loop
(`fixed_ms`); a split-K launch also its reduction and its partials, written and read
back. Two programs of a tile on one SM (`occupancy` 2) walk a block each in PAIR_STEP
the time of one alone. Besides a neighbour's own tile, a lookup weighs it with K split
anew where its tiles leave SMs idle (`resplits`) and at two programs per SM where two
fit (`twins`), a one-program TMA tile whose last wave is part full as `tma_hybrid`: the
whole waves as they are, the tiles left over split K (`hybrids`), and in wide forms
(kernels/wide_forms.py, priced there at `wide_step` of their parent's block).
"""

from __future__ import annotations

import functools

from kernels.configs import ranges_fit
from kernels.matmul_tma_hybrid import cut, parts
from kernels.tile import (
    ELEM_BYTES,
    MAX_TMA_SPLIT,
    OCCUPANCIES,
    TileConfig,
    cdiv,
    replace,
    resident,
    usable,
)

# Two programs of a tile resident on one SM (`occupancy` 2) walk a K block each in
# PAIR_STEP times the time one program alone takes for one: between 1 (each as fast as
# alone) and 2 (no overlap at all). Session 32, call 1: 8 shapes of 252-800 tiles of
# 128x64 (none of the sets'), 4-warp tiles that fit twice at their stages, in bf16, fp8
# and tf32: 64 pairs, median 1.25 (quartiles 1.19-1.35; per tile and mode 1.12-1.37).
PAIR_STEP = 1.25
# A twin that fits twice only with a stage fewer pays STAGE_COST a block for it: the
# same call's 128x64x64 bf16 ran 1.14 (1.10-1.18) the time at 4 stages as at 5, alone;
# tf32's 64x128x32 and 128x64x32 1.22 a stage from 5 to 3, where its twins (of 3 stages)
# ran 0.86-1.09 of the 5-stage tile alone. A twin drops TWIN_MAX_DROP stages at most.
STAGE_COST = 1.15
TWIN_MAX_DROP = 1
TWIN_MIN_STAGES = 3   # the fewest stages a twin keeps (`twins`)
# A twin is taken only where predicted TWIN_MARGIN faster than the best tile the entries
# have as tuned (or K re-split): the pair's price is a median over 64 pairs (quartiles
# 1.19-1.35), and a smaller predicted gain is within that spread (session 32, call 2:
# tf32 K = 128 rows whose twins were predicted x1.21 ran x0.97-0.98)
TWIN_MARGIN = 1.10
# A hybrid tile (`hybrids`) is taken where predicted HYBRID_MARGIN faster than the rest.
HYBRID_MARGIN = 1.10
# A 16-bit 128x128x64 four-warp tile runs its hybrid forms as HYBRID_EIGHT_WARPS (stages,
# warps). Session 39, call 7 (fp16, L2 flushed): fp16's 128x128x64:s4:w4 entry tile (tied
# at its own shape, 2880 x 2880 x 4096, with bf16's :s5:w8: 0.1224 and 0.1217 ms) ran its
# hybrids x1.03-1.11 slower than :s5:w8 on 920 x 4504 x 4216, 3112 x 1328 x 3600 and
# 2128 x 2112 x 7616 (0.74 of cuBLAS against 0.82 at 920 x 4504 x 4216). Session 40, call
# 1, A/B of the picks this moved among 3,000 random row-major and 1,000 random rc/cr/cc
# shapes: row-major fp16 x1.029 (21 of 28 faster), bf16 x1.032 (3 of 4); with A
# column-major (cc) x0.885 (0 of 3: 744 x 5768 x 5256 x0.82), so not where A is MN-major.
HYBRID_EIGHT_WARPS = (5, 8)


@functools.lru_cache(maxsize=4096)   # a lookup asks it for each neighbour's own shape
def steps(c: TileConfig, m: int, n: int, k: int, sms: int, per_sm: int = 1) -> float:
    """A tile's work on a shape as the busiest SM sees it, in K blocks of one program
    alone on an SM: the tiles each program walks (the persistent grid's programs are
    the tiles, up to `occupancy` per SM) times its K blocks; where two programs share an
    SM, each of their blocks counts PAIR_STEP. A split tile's programs (one a tile and K
    range) count as the busiest SM runs them: where two fit (`per_sm`, `split_residency`)
    in pairs, an odd one last alone (3 programs: PAIR_STEP + 1 blocks' time a block, not
    two rounds of pairs: session 46, call 4); the tiled kernel's in waves of one. A hybrid
    tile's two parts run one after the other: their steps add."""
    if c.variant == "tma_hybrid":
        return sum(steps(p, pm, pn, k, sms) for p, pm, pn in hybrid_parts(c, m, n, sms))
    programs = cdiv(max(m, 1), c.block_m) * cdiv(max(n, 1), c.block_n) * c.split_k
    blocks = cdiv(cdiv(max(k, 1), c.split_k), c.block_k)
    if c.occupancy == 1:
        per = cdiv(programs, sms)   # the busiest SM's programs
        if per_sm == 1:
            return per * blocks
        return (per // 2 * PAIR_STEP + per % 2) * blocks   # in pairs, an odd one alone
    grid = min(programs, sms * c.occupancy)
    return cdiv(programs, grid) * blocks * (PAIR_STEP if grid > sms else 1.0)


@functools.lru_cache(maxsize=1024)
def split_residency(c: TileConfig, fam: str, smem: int) -> int:
    """Programs of a `tma_split` tile one SM runs at once (`tile.resident`, at least 1):
    its grid is one program a tile and K range, and the hardware places as many on an SM
    as fit. 1 for other variants (the persistent grid's are its `occupancy`; the tiled
    kernel's are priced a wave of one) and without `smem` (0: unknown, or IEEE fp32's
    `pricing.Chip.split_smem`). Session 46, call 1: tf32's 64x128x32:s4 split tiles (96 KB, two
    an SM) counted so, the picks moved among two random draws and the sets ran x1.106
    (101 of 114 faster; a 2-way split swapped for another entry's 5-stage one, x1.108
    over 78, predicted x1.115); IEEE fp32's 64x64x32:s3 (48 KB) x0.980 (57 of 195): on the
    FMA units a second program adds no throughput."""
    if c.variant != "tma_split" or not smem:
        return 1
    return max(resident(c, fam, smem), 1)


FIXED_MS = 0.003        # a launch's time outside its K loop (launch, prologue, epilogue)
PARTIALS_B_PER_MS = 3e9  # split-K partials: written and read back at ~3 TB/s
# split-K's second kernel (the reduction) beyond its partials' traffic: bf16 256 x 1024 x
# 2048 on 64x32x128 ran 10.72 us unsplit, 13.66 split 2 at the same 16 K steps per SM,
# 1.4 us of it partials (session 15, call A)
REDUCE_MS = 0.0015


def fixed_ms(c: TileConfig, m: int, n: int, sms: int) -> float:
    """A launch's time outside its K loop on `sms` SMs; a hybrid tile's, its parts' (where
    the cut falls depends on the SMs)."""
    if c.variant == "tma_hybrid":
        if sms < 1:
            raise ValueError("a hybrid tile's fixed part depends on the SM count (sms >= 1)")
        return sum(fixed_ms(p, pm, pn, sms) for p, pm, pn in hybrid_parts(c, m, n, sms))
    if c.split_k == 1:
        return FIXED_MS
    return FIXED_MS + REDUCE_MS + c.split_k * m * n * 4 * 2 / PARTIALS_B_PER_MS


@functools.lru_cache(maxsize=4096)
def hybrid_parts(c: TileConfig, m: int, n: int, sms: int
                 ) -> tuple[tuple[TileConfig, int, int], ...]:
    """(tile, M, N) of each part a hybrid tile runs on this shape (kernels/
    matmul_tma_hybrid.py: its `cut` on `sms` x `occupancy` programs): the head as `tma`,
    the tail as `tma_split`; one part where the tiles fill whole waves or less than one."""
    head, tail = parts(c)
    where = cut(m, n, c, sms * c.occupancy)
    if where is None:
        return ((head, m, n),)
    axis, at = where
    if at == 0:
        return ((tail, m, n),)
    if axis == "m":
        return (head, at, n), (tail, m - at, n)
    return (head, m, at), (tail, m, n - at)


def splits_fit(c: TileConfig, k: int) -> bool:
    """Whether a split-K tile's K ranges here are two blocks at least, as the search asks
    of its own candidates (`configs.ranges_fit`): 160 x 192 x 36864's 32 splits on
    256 x 256 x 2048 would be one block each (0.88 of the split it replaced, session 12)."""
    return c.split_k == 1 or ranges_fit(k, c.split_k, c.block_k)


# K bytes per row each range of a split made anew keeps: a split's second kernel, its
# partials and each program's pipeline fill pay off over long K loops only (session 15,
# call H: holdout splits into ranges of 2.4-7.4 KB ran x1.02-1.31 in bf16, fp16 and fp8,
# into 0.8-1.5 KB x0.80-0.93)
MIN_RANGE_BYTES = 2048


def resplits(c: TileConfig, m: int, n: int, k: int, variants: tuple[str, ...], sms: int,
             fam: str, smem: int = 0, anew: bool = False) -> list[TileConfig]:
    """A neighbour's unsplit TMA tile with K split for this shape, as `tma_split` where the
    call can run it: where its output tiles leave SMs idle, every split from 2 that keeps
    tiles x splits within one wave (of as many programs an SM as `split_residency` says
    fit, with `smem`) and every K range `MIN_RANGE_BYTES` of the family's elements at
    least (and two blocks): not only powers of two, as `hybrids` and the heuristic's
    split (session 45, call 1: A/B of the 229 picks counting every split moved among
    2,200 random shapes and the sets, nearly all to 3 ranges, in bf16, fp16, fp8 and tf32:
    x1.10, 199 faster; a split tile re-split 3 ways x1.128, 132 of 140 faster; a tile
    swapped for another's 3-way split x1.055, 51 of 87). A tile tuned unsplit filled the
    SMs on its own shape; borrowed by a shape of few tiles over a long K it leaves most of
    them idle (fp8 832 x 496 x 7392: 64x128x128 unsplit 0.67 of cuBLAS, split 4 0.98;
    session 15, call I: bf16, fp16 and fp8 holdout cases x1.02-1.29). Not the tiled
    kernel's tiles (call H: bf16 144 x 192 x 400 x0.88; call I: tf32 78 x 1786 x 1144
    x0.93). A tile tuned split is split anew where `anew` (16-bit and tf32, `pricing.Chip.anew`);
    fp8's and IEEE fp32's keep their split (call H: fp8 64 x 3844 x 3817 and 32 x 3504 x
    2544 from split 4 to 2 ran x0.96 and x0.93; session 45, call 4: fp8 x0.876, 0 of 5).
    Session 45, call 4 (A/B of the picks re-splitting tuned split tiles moved among two
    random draws and the sets): bf16 and fp16 x1.134-1.143 (82 of 85 faster; a split that
    overran one wave cut to fit it, x1.173, 55 of 55), on fresh draws (call 5) x1.097-1.100
    (161 of 171); tf32 x0.954 while a wave was one program an SM (a split cut to fit it
    x0.949: its 64x128x32:s4 tiles hold two an SM); with the wave `split_residency`'s,
    session 46, call 1: tf32 x1.043 (86 of 120 faster). The split tile is one program a
    (tile, range): a tile of two programs per SM (`occupancy`) splits as one of one."""
    elem = ELEM_BYTES.get(fam, 2)
    if c.variant == "tma_split" and anew:
        c = derive(c, "tma", 1, 1)
    if c.variant != "tma" or "tma_split" not in variants:
        return []
    tiles = cdiv(max(m, 1), c.block_m) * cdiv(max(n, 1), c.block_n)
    if tiles * 2 > sms * OCCUPANCIES[-1] or k * elem < 2 * MIN_RANGE_BYTES:
        return []   # not even 2 ranges fit the widest wave, or K is too short for 2
    wave = sms * split_residency(derive(c, "tma_split", 2, 1), fam, smem)
    out, split = [], 2
    while tiles * split <= wave and split <= MAX_TMA_SPLIT and ranges_fit(k, split, c.block_k) \
            and k * elem >= split * MIN_RANGE_BYTES:
        out.append(derive(c, "tma_split", split, 1))
        split += 1
    return out


def hybrids(c: TileConfig, m: int, n: int, k: int, variants: tuple[str, ...], sms: int,
            elem: int, a_kmajor: bool = True) -> list[TileConfig]:
    """A neighbour's one-program TMA tile as `tma_hybrid` (where the call can run it) on a
    shape where it makes one whole wave at least and a part-full last one: its tiles left
    over split K into each count (2 up) whose programs fit the rest of one wave, every K
    range `MIN_RANGE_BYTES` of `elem`-byte elements at least and two blocks (as
    `resplits`). A 16-bit 128x128x64 four-warp tile's at HYBRID_EIGHT_WARPS where A is
    K-major (`a_kmajor`). `pricing.transfer` prices it as its parts' steps at the tile's own
    rate."""
    if c.variant != "tma" or c.occupancy != 1 or "tma_hybrid" not in variants:
        return []
    tiles = cdiv(m, c.block_m) * cdiv(n, c.block_n)
    if tiles < sms or tiles % sms == 0 or k * elem < 2 * MIN_RANGE_BYTES:
        return []   # less than a wave or whole waves (`cut`: no tail), or no K to split
    if a_kmajor and elem == 2 and (c.block_m, c.block_n, c.block_k, c.num_warps) == \
            (128, 128, 64, 4):
        c = _eight_warps(c)
    split_parts = hybrid_parts(derive(c, "tma_hybrid", 1, c.occupancy), m, n, sms)
    if len(split_parts) < 2:   # whole waves, or less than one: no head and tail
        return []
    _, tail_m, tail_n = split_parts[1]
    left = cdiv(tail_m, c.block_m) * cdiv(tail_n, c.block_n)
    out, split = [], 2
    while left * split <= sms and split <= MAX_TMA_SPLIT and ranges_fit(k, split, c.block_k) \
            and k * elem >= split * MIN_RANGE_BYTES:
        out.append(derive(c, "tma_hybrid", split, c.occupancy))
        split += 1
    return out


@functools.lru_cache(maxsize=64)
def _eight_warps(c: TileConfig) -> TileConfig:
    """A 16-bit 128x128x64 tile at HYBRID_EIGHT_WARPS (made once per table tile)."""
    stages, warps = HYBRID_EIGHT_WARPS
    return replace(c, num_stages=stages, num_warps=warps)


@functools.lru_cache(maxsize=4096)   # the same few table tiles, for every new shape
def derive(c: TileConfig, variant: str, split_k: int, occupancy: int) -> TileConfig:
    """`c` as another variant, split and occupancy (`resplits`, `hybrids`): made once per
    tile, not per lookup (`dataclasses.replace` and its checks were a third of a first
    call's lookup, session 39)."""
    return replace(c, variant=variant, split_k=split_k, occupancy=occupancy)


@functools.lru_cache(maxsize=1024)   # a lookup asks it for each neighbour, each call
def twins(c: TileConfig, fam: str, smem: int, fma: bool) -> tuple[TileConfig, ...]:
    """A neighbour's one-program TMA tile at two programs per SM, where two fit (`usable`
    with `smem` bytes a program; not IEEE fp32, `fma`, whose programs per SM the launch
    sets). The tune keys' winners at two programs are shallow-K tiles; a mid-size shape
    whose tiles of 128x128 number just past the SMs takes two waves of its neighbours'
    large tiles, or one of a small tile's pairs: bf16 1152 x 1856 x 1920 ran 128x64x64 at
    0.72 of cuBLAS alone, 0.97 two to an SM, its table pick 0.78 (session 31, call 2).
    `steps` prices the pair. A twin keeps the tile's stages, or one fewer where that lets
    two fit (TWIN_MAX_DROP), TWIN_MIN_STAGES at least: the same run's 64x128x128 at two
    programs of 2 stages (its 4 do not fit twice) ran 0.58, 128x64x64 of 3 stages 0.86
    against 4 stages' 0.97."""
    if c.variant != "tma" or c.occupancy != 1 or fma or not smem:
        return ()
    two = replace(c, occupancy=2)   # its stages asked of `usable`, one tile made
    for stages in range(c.num_stages, max(TWIN_MIN_STAGES, c.num_stages - TWIN_MAX_DROP) - 1,
                        -1):
        if usable(two, fam, smem, stages):
            return (two if stages == c.num_stages else replace(two, num_stages=stages),)
    return ()
