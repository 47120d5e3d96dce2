"""The wide forms a nearest lookup derives from a neighbour's TMA tile (kernels/pricing.py's
`priced`), and their price: a block of each costs `wide_step` times one of its parent's, in
kernels/steps.py's step model.

- `wides`: a 16-bit 128x256 tile cut to 128x192; a 16-bit or fp8 128x128 (fp8 64x128)
  widened to 144, 160 or 192 to cover N, or made as tall to cover M where B is K-major.
- `halves`: an fp8 128x128x128 tile at half height widened (half width made tall), where
  that cuts a wave.
- `one_wave`: a 16-bit or fp8 128x256 tile widened to 288 or 320 (or made as tall), where
  that covers the shape in one wave and 128x256 takes two; a 16-bit 128x128x64 or fp8
  128x128x128 tile made 288 or 320 tall (a 16-bit one that cannot be, wide), a tf32
  128x128x32 one 320 tall, where that covers the shape in one wave and 128x128 takes
  more.

Each is weighed where the call can run its variant (`tma_wide`, `tma_tall`) and taken
where predicted WIDE_MARGIN faster than the rest.
"""

from __future__ import annotations

import functools

from kernels.tile import ELEM_BYTES, TileConfig, cdiv, replace, usable

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
# An fp8 128x128x128 tile (fp8's table has few 128x256 entries: 920 x 4504 x 4216's
# neighbours are 128x128x128:s5:w4) made 288 or 320 tall (`tma_tall`, 8 warps, C by
# pointer), where that covers the shape in one wave and 128x128 takes more. Session 42,
# calls 3 and 4 (graph-timed, L2 flushed, the 14 wave-bound shapes of step 1): a block
# of 320x128x128:s3:w8 cost 0.97-1.15x of the 128x128x128:s5:w4 pick's per output
# (median 1.05, 22 measurements), 128x320x128 wide 1.01-1.24x (median 1.15), 128x320x64:s5
# 1.13-1.24x; fp8's B is always K-major, so only the tall form is offered. Priced at
# ONE_WAVE_TALL_128 per output of the parent's block, NARROW_32 more for 288.
ONE_WAVE_TALL_128 = 1.05
# A 16-bit 128x128x64 tile made 288 or 320 tall (8 warps, BLOCK_K 64, at most 3 stages:
# the tile 128x256's forms are), where that covers the shape in one wave and 128x128
# takes more; and a 16-bit tall form over a row-major B too (kernels/dispatch.py offers
# `tma_tall` to 16-bit rr calls; `wides`' 144-192 tall forms stay K-major-B only, session
# 38). Session 42, call 2 (bf16, graph-timed, L2 flushed): per output, 128x320x64:s3:w8
# against a 128x128x64 pick on its shape 0.96-1.01, and 320x128 tall over a row-major B
# against 128x320 wide, both one wave, 0.94-0.99 (2096 x 2184 x 2768 43.6 against 46.1
# us, 3712 x 1208 x 4256 61.9 against 64.4, 920 x 4504 x 4216 60.6 against 62.1).
# Session 44, call 1 (A/B against 14a6be5 of the picks it moved among two random draws,
# wide and tall forms from 128x128 at ONE_WAVE_16_128 = 1.0, no tall discount): 128x128
# -> 320 or 288 tall x1.175 and x1.119 (104 of 104 faster), 128x320 wide -> 288 tall
# x1.102 (51 of 51), but 128x128 -> 128x320 wide x0.961 (9 of 42 faster, every one at K
# < 1536: the wide pointer epilogue over a short loop) and -> 128x288 wide x1.03: from
# 128x128 the tall forms only. The tall forms priced ONE_WAVE_TALL_16 of the wide: call 2
# (the rule as here, a fresh draw of 4,000 shapes, a third of them rc, cr or cc): x1.088
# on the 253 picks it moved, 244 faster, worst x0.94.
ONE_WAVE_16_128 = 1.0
ONE_WAVE_TALL_16 = 0.96
# ... and 288 or 320 wide where the call cannot run the tall form (A column-major, B
# row-major: cr), over a K of ONE_WAVE_WIDE_128_MIN_K_BYTES a row at least (call 1's wide
# losses were all under it). Session 44, call 6 (A/B of the picks it moved among 3,000
# random cr shapes at K >= 1536 and session 44's rc/cr/cc draw): x1.222, 72 of 72 faster
# (128x144 wide -> 128x288 x1.227, 128x128 -> 128x320 x1.253).
ONE_WAVE_WIDE_128_MIN_K_BYTES = 3072
# A tf32 128x128x32 tile made 320 tall (8 warps, the most stages up to the parent's, 4 at
# most, that fit: C by pointer), where that covers the shape in one wave and 128x128 takes
# more. Session 44, call 4 (tf32, graph-timed, L2 flushed, session 42's eight wave-bound
# shapes): per output, 320x128x32:s4:w8 against 128x128x32:s5:w4 on its shape 0.84-0.97;
# against the picks (128x128x32 or its hybrid) x1.07-1.34 where it took one wave (2096 x
# 2184 x 2768 1.09 -> 1.47 of cuBLAS); 288 rows tall 0.62-0.85 of cuBLAS on seven of the
# eight (not offered). Priced at ONE_WAVE_TF32 per output of the parent's block. Call 5
# (A/B of the picks it moved at 0.95 among two fresh draws): x1.181, 188 of 188 faster;
# its hybrids predicted x1.00-1.05 ran x1.18. Call 6 (the 70 more picks 0.85 moves among
# those draws and a third, every one from a hybrid): x1.105, 60 of 70 faster, worst x0.94.
ONE_WAVE_TF32 = 0.85


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
    half height: `halves`). `pricing.transfer` prices its block at `wide_step` of the parent's."""
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
    program), or None; the one tile made (a lookup's first use of a table tile makes its
    forms: each tile made costs microseconds)."""
    st = next((st for st in stages if usable(form, fam, smem, st)), None)
    return None if st is None else form if st == form.num_stages \
        else replace(form, num_stages=st)


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
    the waves as they are only adds work), a tall one than 128x64 tiles too. `pricing.transfer`
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
    """A 128x256 tile ONE_WAVE_WIDTHS wide (`tall`: as many rows tall, 128 wide), or a
    128x128 one so at 8 warps (tf32's 320 tall only), each at the most stages up to the
    parent's that fit (3 at least; a 16-bit 128x128's at most 3, the stages 128x256's
    forms have; tf32's at most 4)."""
    if c.block_n == 128:
        cap = {"16bit": 3, "fp32": 4}.get(fam, c.num_stages)
        c = replace(c, num_warps=8, num_stages=min(c.num_stages, cap))
    out = []
    for w in ((320,) if fam == "fp32" else ONE_WAVE_WIDTHS):
        form = replace(c, block_m=w, block_n=128, num_warps=8, variant="tma_tall") if tall \
            else replace(c, block_n=w, variant="tma_wide")
        got = _most_stages(form, range(c.num_stages, 2, -1), fam, smem)
        if got is not None:
            out.append(got)
    return tuple(out)


def one_wave(c: TileConfig, m: int, n: int, k: int, fam: str, smem: int,
             variants: tuple[str, ...], sms: int, tf32: bool = False) -> list[TileConfig]:
    """A neighbour's 16-bit or fp8 128x256 one-program TMA tile widened to each of
    ONE_WAVE_WIDTHS (`tma_wide`) or made as tall (`tma_tall`, where the call runs it), or
    its 16-bit 128x128x64 or fp8 128x128x128 one made as tall (the 16-bit one at 3 stages
    at most; where the call cannot run `tma_tall`, the 16-bit one widened instead over a K
    of ONE_WAVE_WIDE_128_MIN_K_BYTES a row), each only where its tiles fit one wave of `sms`
    and the parent's do not: a shape of 1-1.2 waves of 128x256 runs its second wave
    nearly empty (920 x 4504 x 4216: 144 tiles, 128 of 128x288, 120 of 128x320), one of
    2-2.4 waves of 128x128 its third; over a K of ONE_WAVE_MIN_K_BYTES a row at least.
    A `tf32` call's (fp32 operands on single-pass TF32) 128x128x32 tile is made 320 tall.
    `pricing.transfer` prices its block at `wide_step` of the parent's."""
    if (fam not in ONE_WAVE_COL and not (tf32 and fam == "fp32")) or not smem \
            or c.variant != "tma" or c.occupancy != 1 \
            or k * ELEM_BYTES[fam] < ONE_WAVE_MIN_K_BYTES \
            or cdiv(m, c.block_m) * cdiv(n, c.block_n) <= sms:
        return []
    if fam == "fp32":
        if (c.block_m, c.block_n, c.block_k) != (128, 128, 32) or "tma_tall" not in variants:
            return []
        forms = _one_wave_forms(c, fam, smem, True)
    elif (c.block_m, c.block_n) == (128, 256):
        forms = (*(_one_wave_forms(c, fam, smem, False) if "tma_wide" in variants else ()),
                 *(_one_wave_forms(c, fam, smem, True) if "tma_tall" in variants else ()))
    elif fam == "fp8" and (c.block_m, c.block_n, c.block_k) == (128, 128, 128) \
            and "tma_tall" in variants:
        forms = _one_wave_forms(c, fam, smem, True)
    elif fam == "16bit" and (c.block_m, c.block_n, c.block_k) == (128, 128, 64):
        if "tma_tall" in variants:
            forms = _one_wave_forms(c, fam, smem, True)
        elif "tma_wide" in variants and k * ELEM_BYTES[fam] >= ONE_WAVE_WIDE_128_MIN_K_BYTES:
            forms = _one_wave_forms(c, fam, smem, False)
        else:
            return []
    else:
        return []
    return [f for f in forms if cdiv(m, f.block_m) * cdiv(n, f.block_n) <= sms]


def wide_step(parent: TileConfig, wide: TileConfig, fam: str) -> float:
    """What a `wides`, `halves` or `one_wave` tile's K block costs, as a multiple of its
    parent's: WIDE_STEP for 128x256's cut; for a widened 128x128, its block's work
    (outputs times BLOCK_K) over the parent's times WIDE_COL (a 16-bit (`fam`) one 144
    wide WIDE_COL_144), and HALF_ROW more where it is the parent at half height; for a
    widened (made tall) 128x256, the work times ONE_WAVE_COL, for a 128x128 made 288 or
    320 tall ONE_WAVE_16_128 (16-bit) or ONE_WAVE_TALL_128 (fp8); a 16-bit tall one
    ONE_WAVE_TALL_16 of that; NARROW_32 more at 288; tf32's 320 tall (`fam` fp32: its only
    form) ONE_WAVE_TF32."""
    work = wide.block_m * wide.block_n * wide.block_k / (
        parent.block_m * parent.block_n * parent.block_k)
    longest = max(wide.block_m, wide.block_n)
    if fam == "fp32":   # tf32's one form (`one_wave`)
        return work * ONE_WAVE_TF32
    if parent.block_n == 256 and longest <= 256:
        return WIDE_STEP
    if longest in ONE_WAVE_WIDTHS:
        col = ONE_WAVE_COL[fam] if parent.block_n == 256 \
            else ONE_WAVE_16_128 if fam == "16bit" else ONE_WAVE_TALL_128
        tall = ONE_WAVE_TALL_16 if fam == "16bit" and wide.variant == "tma_tall" else 1.0
        return work * col * tall * (NARROW_32 if longest == 288 else 1.0)
    half = min(wide.block_m, wide.block_n) < min(parent.block_m, parent.block_n)
    if half:
        return work * WIDE_COL * HALF_ROW
    narrow = fam == "16bit" and longest == 144
    return work * (WIDE_COL_144 if narrow else WIDE_COL)
