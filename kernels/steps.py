"""The step model: how kernels/table.py's nearest lookup prices a tile on a shape it was
not tuned on (`_transfer` there: an entry's tuned time per step, times the steps here).

A tile's work on a shape is counted as the busiest SM sees it, in K blocks of one
program alone on an SM (`steps`). A launch adds a fixed part outside its K loop
(`fixed_ms`); a split-K launch also its reduction and its partials, written and read
back. Two programs of a tile on one SM (`occupancy` 2) walk a block each in PAIR_STEP
the time of one alone. Besides a neighbour's own tile, a lookup weighs it with K split
anew where its tiles leave SMs idle (`resplits`) and at two programs per SM where two
fit (`twins`), a 16-bit 128x256 tile cut to 128x192 or a 128x128 one widened to cover
N (`wides`), and a one-program TMA tile whose last wave is part full as `tma_hybrid`:
the whole waves as they are, the tiles left over split K (`hybrids`).
"""

from __future__ import annotations

import functools
from dataclasses import replace

from kernels.configs import ranges_fit
from kernels.matmul_tma_hybrid import cut, parts
from kernels.tile import ELEM_BYTES, MAX_TMA_SPLIT, TileConfig, cdiv, usable

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
# A 16-bit 128x256 TMA tile's wide cut, 128x192 (kernels/matmul_tma_wide.py, a stage more
# where it fits), walks a K block in WIDE_STEP times the time of its parent's: session
# 35, call 3, 128x192x64:s4 against 128x256x64:s3, bf16, graph-timed, per block on the
# busiest SM: 0.89 (1536 x 768 x 4096), 0.87 (3968 x 384 x 4096), 0.85 (4096^3: 6 tiles a
# program against 4) and 0.84 (7904 x 384 x 3744); median 0.86. 3/4 of the columns in
# 0.86 of the time: it wins only where it covers N in as few tiles as its parent (N =
# 384: two each, the parent's second half empty), or fills a wave its parent leaves
# short. Taken where predicted WIDE_MARGIN faster than the rest. Not fp8: its 128x192x128
# walked a block in 0.90-0.96 of 128x256x128's time (the same call), so it would win by
# 4-10% where it takes as few tiles, under the margin.
WIDE_STEP = 0.86
WIDE_MARGIN = 1.10
# A 128x128 TMA tile widened to cover N (`wides`): 128 + 16, 32 or 64 columns. Session 37,
# call 3 (graph-timed, L2 flushed; bf16 and fp8 on 6 long-K thin-N shapes each): a block of
# 128x144 or 128x160 cost 1.01-1.21x of 128x128's per column (median ~1.10), 128x192
# 0.87-1.34x (median ~1.02); priced at WIDE_COL per column. bf16 8136 x 280 x 7592 ran
# 128x144 at 1.19 of cuBLAS (two column tiles, one wave) where its pick ran 0.94; fp8
# 8024 x 312 x 6648 128x160 at 0.97 where its pick, 128x256, ran 0.58.
FIT_WIDTHS = (144, 160, 192)
WIDE_COL = 1.10
# A 128x128 tile is widened only over a K of FIT_MIN_K_BYTES a row at least: over fewer,
# a wide tile's two-box epilogue outweighs its K loop. Session 37, call 4 (A/B of the
# widened picks among 600 random shapes): fp8 K = 312, 352 and 440 ran x0.87-0.90
# (predicted x1.13-1.15), K = 464 x1.01-1.03, K = 648-800 x1.04-1.08; 16-bit K = 648 and
# up x0.94-1.25, none shorter moved.
FIT_MIN_K_BYTES = 512
# The tall form (`tma_tall`: the wide kernel on C.T = B.T @ A.T) is offered where B is
# K-major (column-major, as fp8's copies always are), so that the swapped product's A
# operand, B.T, is K-major too. Session 37, call 6, A/B of the picks it moved among 1,000
# random row-major shapes: fp8 x1.17 (11 of 11 faster, x1.05-1.35: 6040 x 328 x 4560 1.05
# of cuBLAS); bf16 and fp16 x0.98 (0.83-1.22): a 16-bit tall block over a row-major B (B.T
# MN-major in shared memory) cost ~1.2x a wide one of its size (4600 x 472 x 3552: 160 rows
# tall 0.66 us a block, 160 columns wide 0.56); fp8's cost the same (128x144 tall 21.5 us,
# 128x160 wide 22.9). Session 38, call 1 (bf16 280 x 8136 x 7592, 144 rows tall, in each
# layout): 74.2 us over rr, 78.9 cr, 64.7 rc and 68.5 cc, where the picks ran 75.9, 84.0,
# 85.8 and 85.2 (cuBLAS 66.4, 84.5, 65.1, 81.9).
# fp8's 64x128 tiles widen too (64x144, 64x160, 64x192: one warpgroup, BLOCK_K 256).
# Session 39, call 4, A/B of the picks this moved among 600 random row-major shapes (seed
# 39): fp8 x1.068 (14 of 15 faster, 0.990-1.196); the same rule for 16-bit moved 38
# picks a type and ran them x0.940-0.946 (8 and 10 faster; 2160 x 928 x 952 x0.71): a
# 16-bit 64-row wide tile walks its blocks slower than WIDE_COL prices it (bf16 408 x
# 2424 x 4832: 64x144x128 0.81 of cuBLAS, 128x128 0.75; 472 x 2992 x 2672, 168 tiles of
# 64x144: 0.55).
# An fp8 128x128x128 tile is also offered at half its height, widened (`halves`: 64x144,
# 64x160, 64x192 at BLOCK_K 256, one warpgroup), or at half its width made tall (144x64
# ...: `tma_tall`, B K-major as fp8's copies are), where HALF_MIN_STAGES stages fit and
# its tiles take fewer waves than 64x128 tiles would (a tall one than 128x64 too): twice
# the rows (columns) and fewer columns (rows) fill more SMs. A 64-row block walks slower
# per output than a 128-row one: priced at HALF_ROW times WIDE_COL per output.
# - Session 40, call 1 (fp8, L2 flushed): 3628 x 259 x 5063 (87 tiles of 128x128, the
#   third column 3 wide) ran 64x144x256:s4 (114 tiles) at 18.6 us against the pick's 24.5
#   (cuBLAS 18.3): 1.29x the parent's time per output; 64x160 and 64x192 (3 stages) ran
#   22.2 and 28.7.
# - Call 2, A/B of the 41 picks the wide form moved (HALF_ROW 1.17, no wave rule) among
#   5,000 random shapes and the sets: x1.104, 30 faster; those from 128x128x128 x1.157
#   (30 of 32, predicted 1.106x too fast: HALF_ROW 1.17 -> 1.30), those from 64x128x256
#   picks x0.913 (0 of 5: each shape already one wave of 64x128), hence the wave rule.
#   Call 3, fresh draws: x1.159 (35 of 38 faster).
# - Call 5, the tall form: 57 picks x1.103, 52 faster; the 6 whose shape 64x128 tiles
#   already cover in as few waves x0.930 (its rule then compared with 128x64 only), the
#   51 others all faster. Call 6, fresh draws: x1.096 (24 of 24).
HALF_ROW = 1.30
# A 16-bit 128x128 tile widened to 144 (a 128-wide dot and a 16-wide one; made tall, the
# same) is priced at WIDE_COL_144 per output, above WIDE_COL: the 16-wide dot reuses each
# A block over 16 columns only. Session 41, call 1 (bf16, wave-bound shapes of 2.05-2.4
# waves of 128x128 at K >= 3480): 128x144 picks ran 0.70-0.81 of cuBLAS where the
# 128x128 hybrid ran 0.76-0.86; screened with model_check --lookup over every tile
# measured (sessions 22-41): regret 1.0088 at 1.10, 1.0082 at 1.15, 1.0103 at 1.20. Call
# 8, A/B of the picks 1.15 moved (two fresh draws, holdout6): bf16 x1.068 (14 of 17
# faster; 920 x 4504 x 4216 x1.128, 0.74 -> 0.83 of cuBLAS), fp16 x1.023 (12 of 18); its
# one fp8 move (a widened 64x128x256) x0.97, so fp8 keeps WIDE_COL.
WIDE_COL_144 = 1.15
HALF_MIN_STAGES = 4
# A 16-bit or fp8 128x256 tile widened to 288 or 320 (`one_wave`: 256 + 32 or 64, C
# stored by pointer) or made as tall, where that covers the shape in one wave of the SMs
# and 128x256 takes more. Session 42, calls 1-4 (graph-timed, L2 flushed; 14 shapes of
# 2.05-2.4 waves of 128x128 at K 2632-5552, 8 of them a fresh draw): a block of 128x320x64
# (3 stages) cost 1.05-1.09x of 128x256x64's per output (median over each call), 128x288
# 1.12-1.17x, 320x128 tall 1.05-1.06x; fp8's 128x320x128 1.25x, 320x128 tall 1.16x. bf16
# 128x320 ran these shapes at 0.90 of cuBLAS (geomean, call 2) where the picks ran 0.79
# and the 128x128 hybrid 0.78; fp8 320x128 tall 1.00 where the picks ran 0.88 (call 4).
# Priced at ONE_WAVE_COL per output of the parent's block, NARROW_32 more for 288 (a
# 32-wide part).
ONE_WAVE_COL = {"16bit": 1.08, "fp8": 1.25}
# ... and only over a K of ONE_WAVE_MIN_K_BYTES a row at least. Session 42, call 5 (A/B of
# the 113 picks the forms moved, no floor, among two fresh draws and holdout6): x1.079,
# 93 faster; at K of 1,536 bytes or more x1.118 (89 of 92 faster, worst 0.97), below it
# x0.92 (4 of 21: the 128x320 epilogue, 80 KB of C by pointer a tile, over a short loop).
# The floor was read off that A/B; call 6 checked the rule with it on a fresh draw (seed
# 63, 1,500 random shapes): x1.141 on the 86 picks it moved, 85 faster, worst x0.993.
ONE_WAVE_MIN_K_BYTES = 1536
ONE_WAVE_WIDTHS = (288, 320)
NARROW_32 = 1.06
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
def steps(c: TileConfig, m: int, n: int, k: int, sms: int) -> float:
    """A tile's work on a shape as the busiest SM sees it, in K blocks of one program
    alone on an SM: the tiles each program walks (the persistent grid's programs are
    the tiles, up to `occupancy` per SM) times its K blocks; where two programs share an
    SM, each of their blocks counts PAIR_STEP. The tiled kernel's programs (one a tile
    and K range) count in waves of one per SM. A hybrid tile's two parts run one after
    the other: their steps add."""
    if c.variant == "tma_hybrid":
        return sum(steps(p, pm, pn, k, sms) for p, pm, pn in hybrid_parts(c, m, n, sms))
    programs = cdiv(max(m, 1), c.block_m) * cdiv(max(n, 1), c.block_n) * c.split_k
    blocks = cdiv(cdiv(max(k, 1), c.split_k), c.block_k)
    if c.occupancy == 1:
        return cdiv(programs, sms) * blocks
    grid = min(programs, sms * c.occupancy)
    return cdiv(programs, grid) * blocks * (PAIR_STEP if grid > sms else 1.0)


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
             elem: int) -> list[TileConfig]:
    """A neighbour's unsplit TMA tile with K split for this shape, as `tma_split` where the
    call can run it: where its output tiles leave SMs idle, the splits (powers of two)
    that keep tiles x splits within one wave and every K range `MIN_RANGE_BYTES` of
    `elem`-byte elements at least (and two blocks). A tile tuned unsplit filled the SMs on
    its own shape; borrowed by a shape of few tiles over a long K it leaves most of them
    idle (fp8 832 x 496 x 7392: 64x128x128 unsplit 0.67 of cuBLAS, split 4 0.98; session
    15, call I: bf16, fp16 and fp8 holdout cases x1.02-1.29). Not the tiled kernel's
    tiles (call H: bf16 144 x 192 x 400 x0.88; call I: tf32 78 x 1786 x 1144 x0.93), and a
    tile tuned split keeps its split (call H: fp8 64 x 3844 x 3817 and 32 x 3504 x 2544
    from split 4 to 2 ran x0.96 and x0.93). The split tile is one program a (tile, range):
    a tile of two programs per SM (`occupancy`) splits as one of one."""
    if c.variant != "tma" or "tma_split" not in variants:
        return []
    tiles = cdiv(max(m, 1), c.block_m) * cdiv(max(n, 1), c.block_n)
    out, split = [], 2
    while tiles * split <= sms and split <= MAX_TMA_SPLIT and ranges_fit(k, split, c.block_k) \
            and k * elem >= split * MIN_RANGE_BYTES:
        out.append(derive(c, "tma_split", split, 1))
        split *= 2
    return out


def hybrids(c: TileConfig, m: int, n: int, k: int, variants: tuple[str, ...], sms: int,
            elem: int, a_kmajor: bool = True) -> list[TileConfig]:
    """A neighbour's one-program TMA tile as `tma_hybrid` (where the call can run it) on a
    shape where it makes one whole wave at least and a part-full last one: its tiles left
    over split K into each count (2 up) whose programs fit the rest of one wave, every K
    range `MIN_RANGE_BYTES` of `elem`-byte elements at least and two blocks (as
    `resplits`). A 16-bit 128x128x64 four-warp tile's at HYBRID_EIGHT_WARPS where A is
    K-major (`a_kmajor`). `_transfer` prices it as its parts' steps at the tile's own
    rate."""
    if c.variant != "tma" or c.occupancy != 1 or "tma_hybrid" not in variants:
        return []
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
def wides(c: TileConfig, fam: str, smem: int, variants: tuple[str, ...],
          fit: bool = True) -> tuple[TileConfig, ...]:
    """A neighbour's one-program TMA tile in its wide forms (`tma_wide`, where the call can
    run it): a 16-bit 128x256 cut to 128x192; where `fit` (K of FIT_MIN_K_BYTES a row at
    least), a 16-bit or fp8 128x128 widened to each of FIT_WIDTHS, which cover an N that
    128-wide tiles leave a part-empty column of tiles in (N = 280: two tiles of 144
    against three of 128), and one made as many rows tall (`tma_tall`, where the call can
    run it: B K-major), which cover such an M. Each a stage more where that fits (`usable`
    with `smem` bytes a program), else as many, else one fewer (3 at least).
    An fp8 64x128 tile is widened as 128x128 is, not made tall (fp8 128x128x128 also at
    half height: `halves`). `_transfer` prices its block at `wide_step` of the parent's."""
    if c.variant != "tma" or c.occupancy != 1 or not smem:
        return ()
    wide, tall = "tma_wide" in variants, "tma_tall" in variants
    forms: list[TileConfig] = []
    if wide and fam == "16bit" and (c.block_m, c.block_n) == (128, 256):
        forms = [replace(c, block_n=192, variant="tma_wide")]
    elif fit and fam in ("16bit", "fp8") and (c.block_m, c.block_n) == (128, 128):
        forms = [replace(c, block_n=w, variant="tma_wide") for w in FIT_WIDTHS if wide]
        forms += [replace(c, block_m=w, variant="tma_tall") for w in FIT_WIDTHS if tall]
    elif fit and fam == "fp8" and (c.block_m, c.block_n) == (64, 128):
        forms = [replace(c, block_n=w, variant="tma_wide") for w in FIT_WIDTHS if wide]
    stages = range(c.num_stages + 1, max(c.num_stages - 2, 2), -1)
    return tuple(got for form in forms
                 if (got := _most_stages(form, stages, fam, smem)) is not None)


def _most_stages(form: TileConfig, stages: range, fam: str, smem: int) -> TileConfig | None:
    """`form` at the first of `stages` (most first) that fits (`usable` with `smem` bytes a
    program), or None."""
    for st in stages:
        staged = replace(form, num_stages=st)
        if usable(staged, fam, smem):
            return staged
    return None


@functools.lru_cache(maxsize=256)   # a lookup asks it for each neighbour, each call
def _half_forms(c: TileConfig, smem: int, tall: bool) -> tuple[TileConfig, ...]:
    """An fp8 128x128x128 tile at half height (`tall`: half width, made tall), each of
    FIT_WIDTHS wide (tall), BLOCK_K 256, one warpgroup, at the most stages up to the
    parent's (HALF_MIN_STAGES at least) that fit."""
    stages = range(max(c.num_stages, HALF_MIN_STAGES), HALF_MIN_STAGES - 1, -1)
    out = []
    for w in FIT_WIDTHS:
        (bm, bn, variant) = (w, 64, "tma_tall") if tall else (64, w, "tma_wide")
        half = replace(c, block_m=bm, block_n=bn, block_k=256, num_warps=4, variant=variant)
        got = _most_stages(half, stages, "fp8", smem)
        if got is not None:
            out.append(got)
    return tuple(out)


def halves(c: TileConfig, m: int, n: int, fam: str, smem: int, variants: tuple[str, ...],
           sms: int, fit: bool = True) -> list[TileConfig]:
    """A neighbour's fp8 128x128x128 one-program TMA tile at half height and widened
    (`_half_forms`, where the call runs `tma_wide` and `fit` as for `wides`), and at half
    width made tall (where it runs `tma_tall`), each only where its tiles take fewer waves
    of `sms` than 64x128 tiles would, fp8's common small table tile (a width that leaves
    the waves as they are only adds work), a tall one than 128x64 tiles too. `_transfer`
    prices its block at `wide_step` of the parent's (HALF_ROW)."""
    if fam != "fp8" or not fit or not smem or c.variant != "tma" or c.occupancy != 1 \
            or (c.block_m, c.block_n, c.block_k) != (128, 128, 128):
        return []
    out = []
    if "tma_wide" in variants:
        rows = cdiv(m, 64)
        waves = cdiv(rows * cdiv(n, 128), sms)
        out += [h for h in _half_forms(c, smem, False)
                if cdiv(rows * cdiv(n, h.block_n), sms) < waves]
    if "tma_tall" in variants:
        cols = cdiv(n, 64)
        waves = min(cdiv(cols * cdiv(m, 128), sms), cdiv(cdiv(m, 64) * cdiv(n, 128), sms))
        out += [h for h in _half_forms(c, smem, True)
                if cdiv(cols * cdiv(m, h.block_m), sms) < waves]
    return out


@functools.lru_cache(maxsize=256)   # a lookup asks it for each neighbour, each call
def _one_wave_forms(c: TileConfig, fam: str, smem: int, tall: bool
                    ) -> tuple[TileConfig, ...]:
    """A 128x256 tile ONE_WAVE_WIDTHS wide (`tall`: as many rows tall, 128 wide), at the
    most stages up to the parent's that fit (3 at least)."""
    out = []
    for w in ONE_WAVE_WIDTHS:
        form = replace(c, block_m=w, block_n=128, variant="tma_tall") if tall else \
            replace(c, block_n=w, variant="tma_wide")
        got = _most_stages(form, range(c.num_stages, 2, -1), fam, smem)
        if got is not None:
            out.append(got)
    return tuple(out)


def one_wave(c: TileConfig, m: int, n: int, k: int, fam: str, smem: int,
             variants: tuple[str, ...], sms: int) -> list[TileConfig]:
    """A neighbour's 16-bit or fp8 128x256 one-program TMA tile widened to each of
    ONE_WAVE_WIDTHS (`tma_wide`) or made as tall (`tma_tall`, where the call runs it),
    each only where its tiles fit one wave of `sms` and 128x256's do not: a shape of 1-1.2
    waves of 128x256 runs its second wave nearly empty (920 x 4504 x 4216: 144 tiles, 128
    of 128x320), over a K of ONE_WAVE_MIN_K_BYTES a row at least. `_transfer` prices its
    block at `wide_step` of the parent's."""
    if fam not in ONE_WAVE_COL or not smem or c.variant != "tma" or c.occupancy != 1 \
            or k * ELEM_BYTES[fam] < ONE_WAVE_MIN_K_BYTES \
            or (c.block_m, c.block_n) != (128, 256) or cdiv(m, 128) * cdiv(n, 256) <= sms:
        return []
    forms = (*(_one_wave_forms(c, fam, smem, False) if "tma_wide" in variants else ()),
             *(_one_wave_forms(c, fam, smem, True) if "tma_tall" in variants else ()))
    return [f for f in forms if cdiv(m, f.block_m) * cdiv(n, f.block_n) <= sms]


def wide_step(parent: TileConfig, wide: TileConfig, fam: str) -> float:
    """What a `wides`, `halves` or `one_wave` tile's K block costs, as a multiple of its
    parent's: WIDE_STEP for 128x256's cut; for a widened 128x128, its block's work
    (outputs times BLOCK_K) over the parent's times WIDE_COL (a 16-bit (`fam`) one 144
    wide WIDE_COL_144), and HALF_ROW more where it is the parent at half height; for a
    widened (made tall) 128x256, the work times ONE_WAVE_COL, NARROW_32 more at 288."""
    work = wide.block_m * wide.block_n * wide.block_k / (
        parent.block_m * parent.block_n * parent.block_k)
    if parent.block_n == 256:
        if max(wide.block_m, wide.block_n) <= 256:
            return WIDE_STEP
        narrow = max(wide.block_m, wide.block_n) == 288
        return work * ONE_WAVE_COL[fam] * (NARROW_32 if narrow else 1.0)
    half = min(wide.block_m, wide.block_n) < min(parent.block_m, parent.block_n)
    if half:
        return work * WIDE_COL * HALF_ROW
    narrow = fam == "16bit" and max(wide.block_m, wide.block_n) == 144
    return work * (WIDE_COL_144 if narrow else WIDE_COL)


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
    for stages in range(c.num_stages, max(TWIN_MIN_STAGES, c.num_stages - TWIN_MAX_DROP) - 1,
                        -1):
        two = replace(c, num_stages=stages, occupancy=2)
        if usable(two, fam, smem):
            return (two,)
    return ()
