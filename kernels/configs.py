"""Tile configurations for the kernel variants, kept as data (not inside any decorator).

Tiles themselves (TileConfig, the variants, `usable`) are kernels/tile.py's; IEEE fp32's
own tiles and K splits (the FMA units, the gemv variant) are kernels/fma.py's.

`search_space` is what `gemmgate tune` times for one key: generated per family and
variant, pruned by shared memory (pipeline stages x tiles) and registers (the fp32
accumulator per thread), at most `limit` configs. `heuristic` is what a call gets when
the tuning table has nothing near: picked from the shape in microseconds, never timed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from kernels.fma import (
    FMA_PROGRAMS,
    FMA_SMALL_TILED,
    FMA_SPLIT,
    FMA_THIN,
    FMA_TILE,
    FMA_TILES,
    fma_skinny_split,
    fma_split,
    fma_thin,
    gemv_space,
)
from kernels.tile import (
    ELEM_BYTES,
    MAX_TMA_SPLIT,
    WGMMA_M,
    TileConfig,
    cdiv,
    cfg,
    k_range,
    usable,
)
from kernels.ws_forms import search_tiles

# The tiles each family starts from (largest first); tma needs BLOCK_M >= 64 (wgmma).
# 16-bit 64x128x128 and 64x64x128: inductor's autotuning won K = 2048 shapes with them
# (1024 x 1024 x 2048 bf16, session 11), where every tile here had BLOCK_K = 64. Both come
# fourth and fifth: a list cut at its share of the 30 reaches the first six or so, and they
# ran 1024 x 1024 x 2048 at 0.99 of cuBLAS and 256 x 1024 x 2048 at 0.96 where the table's
# tiles ran 0.78 and 0.82 (session 12). 64x32x128 (inductor's tile there, 5 stages) ran
# 256 x 1024 x 2048 and 1024 x 256 x 2048 at 0.94 and 0.96 where 64x64x128 ran 0.89 and
# 0.92 (session 13); it took the place of 64x256x64, which no 16-bit key of the table chose.
# fp8 BLOCK_K = 256 (two 128-byte TMA rows per stage, half the K steps): 64x128x256 and
# 64x64x256 ran 256 x 1024 x 2048, 1024 x 256 x 2048, 256 x 4096 x 2048, 64 x 11008 x 4096
# and 1024 x 1024 x 2048 at 1.01-1.05 of cuBLAS where the table's BLOCK_K = 128 tiles ran
# 0.84-0.92; on 4096^3 they lost (0.92 against 128x256x64's 1.02; session 15).
_TILES = {
    "16bit": ((128, 256, 64), (256, 128, 64), (128, 128, 64), (64, 128, 128), (64, 64, 128),
              (64, 32, 128), (128, 64, 64), (64, 128, 64), (64, 64, 64), (128, 128, 128)),
    "fp32": ((128, 128, 32), (128, 256, 32), (128, 64, 32), (64, 128, 32), (64, 64, 32),
             (128, 128, 64), (64, 256, 32)),
    "fp8": ((128, 256, 128), (256, 128, 128), (128, 128, 128), (128, 64, 128),
            (64, 128, 128), (64, 64, 128), (64, 128, 256), (128, 64, 256), (64, 64, 256),
            (128, 256, 64)),
}
_SKINNY = {"16bit": ((16, 128, 128), (32, 128, 128), (16, 64, 256), (32, 64, 128)),
           "fp32": ((16, 128, 64), (32, 128, 64), (16, 64, 128)),
           "fp8": ((16, 128, 256), (32, 128, 128), (16, 64, 256))}

# tf32x3 at M <= 32 (pointer loads) over a K-major B: 16x64x64, not the fp32 family's
# 16x128x64. Three dots a K block hold a 128-wide tile's hi and lo parts of B at once:
# over a K-major B, 16x128x64 at 4 warps took 255 registers and spilled 132-164
# instructions in its K loop (session 53's audit, triton 3.6), 16x64x64 214 and none.
# Session 54 (H200, L2 flushed): call 4, unsplit, 16 x 10240 x 6144 rc 253 -> 107 us,
# 24 x 6000 x 3000 rc 153 -> 85; call 9, A/B of the heuristic's picks this moved on the
# sets and a thin draw (seed 97), each with its own split: over a K-major B x1.471, 42 of
# 49 faster (x0.90-2.44); over a row-major B, where 16x128x64 does not spill, x0.933, 6
# of 21 faster (x0.69-1.25): there it stays. Call 10, a fresh thin draw (seed 98), the
# rule's 43 moved picks: x1.469, 39 faster.
_SKINNY_3PASS = (16, 64, 64)
# tf32x3 at 16 < M <= 32 over a row-major B (16x128x64): twice `split_for`'s split where
# that split is 2-6 and each K range keeps 256 deep. Session 55 (H200, L2 flushed,
# `tiles.py`): eight shapes at their split and twice it, x1.05-1.17 where the split was 2
# or 3, x1.01 at 32 x 1296 x 4992 (split 6, ranges 448 deep at 12), x0.94 at 28 x 1360 x
# 1888 (192 deep at 12); at M <= 16 each shape's own split ran fastest. Session 56, call
# 1, A/B on a fresh draw's 25 moved picks (seeds 561, 562): x1.052, 20 faster; from
# splits 2-6 x0.965-1.168 (16 of 17 faster), from 7-30 (to 14-52) x0.874-1.050, 4 of 8.
_X3_TWICE_M, _X3_TWICE_MAX, _X3_TWICE_RANGE = 16, 6, 256

# The 16-bit skinny tile (pointer loads) over a short K that leaves a tail (under 4 of
# its 128-deep blocks, not a multiple of 128) takes 64-deep blocks: the tiled kernel's
# loop is pipelined, its masked tail is not, and such a K is a loop of at most three
# loads then a tail, waiting on memory in turn. bf16 29 x 288 x 192 (session 27, call 3,
# no table entry near): 16x128x128 0.84 of cuBLAS, 16x128x256 (the tail alone) 0.79,
# 16x64x64 1.05, 32x32x64 1.03. Call 4, A/B of 16x128x64 against 16x128x128 (bf16, fp16):
# K = 192, 160, 320, 448 x1.04-1.19, 480 x1.00; without a tail (K = 256, 384) x0.97-1.00.
_SHORT_K_BLOCKS, _SHORT_K_BLOCK = 4, 64

# Split-K tiles, for small M*N with a long K (m128 x 8192^2, 1024^3): whole 128x128
# tiles first (full-width wgmma; session 7's split-K tried 64-wide tiles only). 16-bit
# 64x128x128 (BLOCK_K 128, as its unsplit TMA tile): split 2-4 ran thin M (26-81 x 1762-
# 5523 x 2693-7310, bf16) at 1.36-1.48x the table's unsplit 64x32x128 picks (session 18).
# 64x64x128 split 4 ran bf16 32 x 512 x 3376 and 32 x 1392 x 2048 at 1.13 and 1.01 of
# cuBLAS, the tiled pick 0.96 and 0.95 (session 19, call A).
_SPLIT = {"16bit": ((128, 128, 64), (64, 128, 128), (64, 64, 128), (64, 128, 64), (128, 64, 64),
                    (64, 64, 64)),
          "fp32": ((128, 128, 32), (64, 128, 32), (128, 64, 32), (64, 64, 32)),
          "fp8": ((128, 128, 128), (64, 128, 128), (128, 64, 128), (64, 64, 128))}
_MID = {"16bit": (128, 128, 64), "fp32": (128, 128, 32), "fp8": (128, 128, 128)}
_SMALL = {"16bit": (64, 64, 64), "fp32": (64, 64, 32), "fp8": (64, 64, 128)}
# tf32 and tf32x3 (the fp32 family on wgmma) on TMA loads: 128x128x32 at 5 stages and 4
# warps, what every tf32 key of the table that tuned to that tile chose (8192^3, 4096 x
# 4096 x 11008, 4096 x 11008 x 4096, 2048 x 3072 x 768, 3072 x 3072 x 128; 4 stages at
# K = 253), never 3 stages and 8 warps: a K block of 32 elements is 128 bytes, so a stage
# hides little of a load's latency. 7904 x 384 x 3744 ran 0.93 of cuBLAS on it (session
# 9), 0.64 on 3 stages and 8 warps (session 24). It fits the H200's 227 KiB with its fp32
# C tile (5 x 32 KiB + 64 KiB); where it does not, the usual stages and warps.
_TF32_TMA = (5, 4)
_THIN_TMA = {"16bit": (64, 128, 128)}   # the heuristic's thin-M tile on TMA alone
_THIN_N, _THIN_N_MIN_M = 32, 1024   # ... and its thin-N one: N this or less, M this or more
# The thin-N tile: one 32-column tile across N, two persistent programs an SM where two fit.
# `gemmgate tune` chose it for 11008 x 32 x 4096 cr, 4096 x 8 x 4096 and 24576 x 1 x 6144
# in bf16 and for two of the three in fp16 (H100, session 81: 0.97-0.99 of cuBLAS, where
# the 64x128x128 before ran 0.86-0.95; fp16's 11008 x 32 chose 64x64x128 at 0.991)
_THIN_N_TILE = {"16bit": (64, 32, 128)}
# TMA tiles the search adds below wgmma's M: 16-bit 64x256x64 (4 stages, 8 warps) ran x @
# W.T at 16 x 28672 x 8192 and 16 x 20480 x 4608 at 1.00 of cuBLAS where the table's
# 64x128 tiles ran 0.84-0.86 (half the tiles: fewer waves; session 21, call D)
_THIN_EXTRA = {"16bit": ((64, 256, 64),)}
# The interpreter runs programs one by one in numpy: few, large tiles are fastest.
INTERPRETER_CONFIG = TileConfig(32, 32, 32, 4, 1, 4)


def search_space(family: str, variants: Sequence[str], smem_limit: int, *, skinny: bool,
                 split_ks: Sequence[int] = (), tma_splits: Sequence[TileConfig] = (),
                 limit: int = 30, fma: bool = False, tma_rows: int = 256
                 ) -> tuple[TileConfig, ...]:
    """The configs `gemmgate tune` times for one key, most promising first, pruned by
    shared memory and accumulator registers, at most `limit`. `split_ks`: the tiled
    variant's K splits to try; `tma_splits`: the TMA split-K configs (`tma_split_space`);
    `fma`: IEEE fp32, on the FMA units (`FMA_TILES`); `tma_rows`: the largest BLOCK_M
    of the TMA tiles, split or not (64 below wgmma's M: thin M). Where `variants` lists
    `tma_ws` (decide.decide: a bucket whose picks run warp-specialized), the
    warp-specialized kernel's tiles too (`ws_forms.search_tiles`), a group of their own."""
    big = FMA_TILES if fma else _TILES[family]
    out: list[TileConfig] = [c for c in tma_splits if c.block_m <= tma_rows] \
        if "tma_split" in variants else []
    if "tma" in variants:
        thin = _THIN_EXTRA.get(family, ()) if tma_rows <= WGMMA_M else ()
        tiles = [t for t in (*big, *thin) if t[0] <= tma_rows]
        out += _round_robin(family, tiles, "tma", smem_limit, fma)
        if not fma:   # two programs per SM, where two fit (kernels/tile.py `occupancy`)
            out += _round_robin(family, tiles, "tma", smem_limit, occupancy=2)
    if "tma_ws" in variants:   # the warp-specialized kernel's tiles (kernels/ws_forms.py)
        out += search_tiles(ELEM_BYTES[family], tma_rows)
    if "tiled" in variants:
        if skinny:
            tiles = _SKINNY[family] + big[2:5]
        else:
            tiles = big + FMA_SMALL_TILED if fma else big
        for stages in (4, 3):
            for bm, bn, bk in tiles:
                out.append(cfg(bm, bn, bk, stages, 4 if bm * bn <= 128 * 64 else 8))
        for stages in (4, 3):
            for bm, bn, bk in (_SKINNY[family][:2] if skinny else
                               FMA_SPLIT if fma else _SPLIT[family]):
                for split in split_ks:
                    out.append(cfg(bm, bn, bk, stages, 8 if bm * bn >= 128 * 128 else 4,
                                  split=split))
    kept = [c for c in dict.fromkeys(out) if usable(c, family, smem_limit)]
    # IEEE fp32 below wgmma's M: the split tiles take the unsplit TMA group's share of
    # each round (session 24, call 1: the unsplit TMA tiles ran 2-7x slower than the best
    # split tile on all three thin keys, and at 6 s a key took most of the search)
    return tuple(_interleave(kept, limit, split_first=fma and tma_rows <= WGMMA_M))


def ranges_fit(k: int, split: int, block_k: int) -> bool:
    """Whether K split `split` ways leaves every range two BLOCK_K blocks at least: the TMA
    split-K search's rule (`tma_split_space`), and the table's when it borrows a split
    tile for another shape (kernels/table.py)."""
    return k >= split * 2 * block_k


def tma_split_space(family: str, m: int, n: int, k: int, num_sms: int,
                    smem_limit: int, fma: bool = False) -> list[TileConfig]:
    """TMA split-K configs for one shape: each split-K tile whose output tiles make at most
    one wave, at the splits that make tiles x splits one and two waves at most (fewer
    where K ranges would be shorter than two blocks); 4 stages first, then 3. A tile that
    fills more than half the SMs gets split 2: two programs per SM, both resident where
    shared memory allows (64 x 11008 x 4096 bf16: 86 tiles of 64x128, session 12).
    `fma`: IEEE fp32: first FMA_TILE at `fma_split`'s split, twice and half it, at any
    tile count; at thin M `FMA_THIN`'s tiles split 16, 8 and 32 ways (16 ran fastest on
    the four shapes measured, in K ranges of 1.7 blocks and up; K ranges of one block at
    least); then its small tiles (`FMA_SPLIT`) as above."""
    out: list[TileConfig] = []
    if fma:   # FMA_TILE at its split, then twice and half it, 3 stages first
        s = fma_split(m, n, k)
        splits = [x for x in dict.fromkeys((s, 2 * s, s // 2))
                  if 2 <= x <= MAX_TMA_SPLIT and ranges_fit(k, x, FMA_TILE[2])]
        fma_tiles = [cfg(*FMA_TILE, stages, 4, "tma_split", x) for x in splits
                     for stages in (3, 4)]
        # thin M: 16- and 32-row tiles split 16 ways next to FMA_TILE's first (the search
        # times a few split tiles among the 30, `_interleave`), then 8 and 32 ways
        thin = [[cfg(*tile, 3, 4, "tma_split", x) for tile in FMA_THIN if k >= x * tile[2]]
                for x in (16, 8, 32)] if m < WGMMA_M else [[], [], []]
        out += fma_tiles[:1] + thin[0] + fma_tiles[1:] + thin[1] + thin[2]
    for stages in (4, 3):
        for bm, bn, bk in FMA_SPLIT if fma else _SPLIT[family]:
            tiles = cdiv(m, bm) * cdiv(n, bn)
            if tiles > num_sms:
                continue
            s = 1
            while tiles * s * 2 <= num_sms and s < MAX_TMA_SPLIT:
                s *= 2
            while s > 1 and not ranges_fit(k, s, bk):
                s //= 2
            for split in (s, 2 * s):
                if 2 <= split <= MAX_TMA_SPLIT and ranges_fit(k, split, bk):
                    out.append(cfg(bm, bn, bk, stages, 8 if bm * bn >= 128 * 128 else 4,
                                  "tma_split", split))
    return [c for c in dict.fromkeys(out) if usable(c, family, smem_limit)]


def _round_robin(family: str, tiles, variant: str, smem_limit: int,
                 fma: bool = False, occupancy: int = 1) -> list[TileConfig]:
    """Every tile at its most likely stages and warps first, then each tile's next
    setting, and so on: a list cut at its share of the 30 still tries every tile shape.
    (Tile by tile, session 9's cut reached only the first three TMA tiles of 16-bit.)
    Likely first: 8 warps from 128x128 up, else 4; 3 stages for 128x256-sized tiles, 5 for
    64x32 (its stages are small: 5 ran 256 x 1024 x 2048 bf16 at 1.06x 4, session 13),
    else 4; then one stage more (128x64x64 at 5 ran 1152 x 1856 x 1920 bf16 and fp16 in
    22.3 us, at 4 in 25.3; session 18), the other warp count, one stage less (not below
    3: a persistent kernel's loads of one tile overlap its previous tile's dots). IEEE
    fp32 (`fma`) from 3 stages: three 64x64x32 programs fit an SM at 3, two at 4
    (kernels/matmul_tma.programs_per_sm; 4423 x 275 x 2891: 0.90 of cuBLAS at 3, 0.65 at
    4, session 22, call B). With `occupancy` 2, the settings at which two programs fit an
    SM (`usable`)."""
    orders = []
    for bm, bn, bk in tiles:
        s0 = 3 if bm * bn >= 128 * 256 or fma else 5 if bm * bn <= 64 * 32 else 4
        w0 = 8 if bm * bn >= 128 * 128 else 4
        w1 = 12 - w0
        settings = ((s0, w0), (s0 + 1, w0), (s0, w1), (s0 - 1, w0), (s0 + 1, w1), (s0 - 1, w1))
        orders.append([c for c in (cfg(bm, bn, bk, st, w, variant, occupancy=occupancy)
                                   for st, w in settings if st >= 3)
                       if usable(c, family, smem_limit)])
    return [o[i] for i in range(6) for o in orders if i < len(o)]


# The unsplit TMA kernel's configs per round of `_interleave` (the other groups, its tiles
# at two programs per SM one of them, take one):
# the variant most keys' winners run. With one a round, its tiles at their first setting
# (10 in 16-bit) filled its share of the 30, so no tile's second setting was ever timed
# (1408 x 1408 x 2048's search, session 18).
_TMA_PER_ROUND = 3


def _interleave(configs: list[TileConfig], limit: int,
                split_first: bool = False) -> list[TileConfig]:
    """Round-robin over (variant, split_k, occupancy) groups so that a truncated list still
    tries every kind of kernel; the unsplit TMA group at one program per SM takes
    `_TMA_PER_ROUND` a round (with `split_first`, the TMA split group does instead)."""
    groups: dict[tuple, list[TileConfig]] = {}
    for c in configs:
        groups.setdefault((c.variant, c.split_k > 1, c.occupancy), []).append(c)
    wide = ("tma_split", True, 1) if split_first else ("tma", False, 1)
    out: list[TileConfig] = []
    while len(out) < limit and any(groups.values()):
        for kind, g in groups.items():
            for _ in range(_TMA_PER_ROUND if kind == wide else 1):
                if g and len(out) < limit:
                    out.append(g.pop(0))
    return out


def split_for(m: int, n: int, k: int, c: TileConfig, num_sms: int) -> int:
    """Split K so that tiles x splits roughly fill the SMs: in two where each half keeps
    >= 4 K-blocks (the partials and their reduction must pay), then on, one range more at
    a time, while they fit the SMs and each keeps >= 2 blocks (session 40, call 7, A/B of
    2 blocks a range throughout on 40 small random shapes: splits doubled from 2 and up
    ran bf16 x1.072, 37 of 39 faster, fp8 x1.09-1.11, 15 of 15; fp8 split in two from
    none at K = 528-832 x0.913, 1 of 25. Session 41, call 5, any count against powers of
    two, A/B of the picks it moved among 150 small random shapes and the sets: tf32x3
    x1.127, 79 of 93 faster; tf32 x1.022, fp8 x1.015, bf16 and fp16 x1.010). The count
    is the ranges the launch makes: whole K blocks each (`tile.k_range`)."""
    tiles = cdiv(m, c.block_m) * cdiv(n, c.block_n)
    if tiles >= num_sms // 2 or k // 2 < 4 * c.block_k:
        return 1
    split = 2
    while tiles * (split + 1) <= num_sms and k // (split + 1) >= 2 * c.block_k:
        split += 1
    return cdiv(k, k_range(k, split, c.block_k))


def _fit(c: TileConfig, family: str, smem_limit: int) -> TileConfig:
    """`c` cut until the chip runs it (`usable`): its stages down to 2, then its BLOCK_K
    down to 32. The thin-M tiles are Hopper's (227 KiB); on a 99 KiB chip (L40S, RTX
    4090 and 5090) they asked 108-147 KB and their launch failed (a review). A tile that
    fits is returned as it is."""
    while not usable(c, family, smem_limit):
        if c.num_stages > 2:
            c = replace(c, num_stages=c.num_stages - 1)
        elif c.block_k > 32:
            c = replace(c, block_k=c.block_k // 2)
        else:
            break
    return c


def thin_n(family: str, m: int, n: int) -> bool:
    """Whether the heuristic answers an M x N call of `family` on TMA with its thin-N
    tile (`_THIN_N_TILE`): N of `_THIN_N` or less under an M of `_THIN_N_MIN_M` or more.
    The lookup lends such a call no thin-M entry (kernels/table.crossed)."""
    return family in _THIN_N_TILE and n <= _THIN_N and m >= _THIN_N_MIN_M


def heuristic(family: str, m: int, n: int, k: int, *, tma: bool, num_sms: int,
              smem_limit: int, tiled: bool = True, fma: bool = False,
              gemv: bool = False, three_pass: bool = False, b_kmajor: bool = False
              ) -> TileConfig:
    """The tile a call gets when the tuning table has nothing near: the largest tile that
    still gives every SM work, on the TMA variant where it applies; split-K (the tiled
    variant) when even small tiles leave most SMs idle and K is long; skinny tiles for
    decode-like M. `tiled=False`: the tiled variant is not an option (its loads would
    not vectorise, kernels/dispatch.py). `gemv`: the call runs the gemv variant
    (`gemv_space`'s first tile). `three_pass` (tf32x3): the fp32 family's TMA tile keeps
    3 stages and 8 warps (three dots a K block; its tuned keys chose 8 warps), where tf32
    takes `_TF32_TMA`, and at M <= 32 over a K-major B (`b_kmajor`: the bucket's B as
    the kernel reads it) `_SKINNY_3PASS`. `fma` (IEEE fp32): 128x128 from four waves of it
    up, else the small tile (session 19, call B: TMA 64x64x32 in place of 128x128x32 ran
    x1.05-1.48 on six shapes of 1.1-2.2 waves of 128x128, x0.82-0.89 on three of 4.5-10)."""
    if gemv:
        return gemv_space(m, n, k, num_sms, smem_limit)[0]
    big, mid, small = _TILES[family][0], _MID[family], _SMALL[family]
    variant = "tma" if tma else "tiled"
    if m <= 32 and tiled:
        c = cfg(*(_SKINNY_3PASS if three_pass and b_kmajor else _SKINNY[family][0]), 4, 4)
        if family == "16bit" and k < _SHORT_K_BLOCKS * c.block_k and k % c.block_k:
            c = replace(c, block_k=_SHORT_K_BLOCK)
        c = _fit(c, family, smem_limit)
        split = fma_skinny_split(m, n, k, c, num_sms) if fma else split_for(m, n, k, c, num_sms)
        if three_pass and not b_kmajor and m > _X3_TWICE_M and 1 < split <= _X3_TWICE_MAX \
                and (deep := k_range(k, 2 * split, c.block_k)) >= _X3_TWICE_RANGE:
            split = cdiv(k, deep)
        return replace(c, split_k=split)
    split = fma_split(m, n, k) if fma else 1
    if fma and tma and m < WGMMA_M:
        thin = fma_thin(m, n, k, num_sms)
        if thin is not None and usable(thin, family, smem_limit):
            return thin
    if fma and tma:
        # IEEE fp32 on TMA loads: FMA_TILE, K split by `fma_split`, or unsplit (three
        # persistent programs per SM) where K is short (session 22, calls A and B)
        c = cfg(*FMA_TILE, 3, 4, "tma_split" if split > 1 else "tma", split)
        if usable(c, family, smem_limit):
            return c
    if fma and tiled and not tma and split > 1 \
            and cdiv(m, FMA_TILE[0]) * cdiv(n, FMA_TILE[1]) * 2 <= FMA_PROGRAMS:
        # IEEE fp32 on pointer loads (A column-major, as the FMA units read it): the same K
        # split over many programs on the tiled kernel. Holdout4's 384 x 1568 x 3200 and
        # 3360 x 304 x 6624 cr ran its 64x64x32 split 4 and 8 at 0.93 and 1.06 of cuBLAS,
        # unsplit and 128x64 split 2 at 0.60 and 0.75 (session 23, call 2)
        return cfg(*FMA_TILE, 4, 4, "tiled", split)
    if family in _THIN_TMA and tma and not tiled and m <= WGMMA_M:
        # Thin M on TMA alone (16-bit x @ W.T): 64-row tiles, K split where they leave SMs
        # idle (session 20, call B: 64x128x128 split 4 ran 1 and 16 x 4096 x 4096 rc at
        # 1.02 of cuBLAS, unsplit 16 x 11008 x 4096 at 1.02; the 128-row tile the loop
        # below would take at N = 28672 wastes half of each wgmma)
        c = _fit(cfg(*_THIN_TMA[family], 4, 4, "tma"), family, smem_limit)
        split = split_for(m, n, k, c, num_sms)
        return replace(c, variant="tma_split", split_k=split) if split > 1 else c
    if tma and thin_n(family, m, n):
        # Thin N (y = W x, a batch of few columns) where no entry is near: `_THIN_N_TILE`,
        # K split where its tiles leave SMs idle. The size loop below
        # took 128x256x64, 15/16 of each wgmma's columns empty: 24576 x 16 and 24576 x 1
        # x 6144 bf16 ran 0.70-0.77 of cuBLAS on an H100, where 14336 x 16 x 4096 and 16384
        # x 32 x 8192 ran 64x128x128 (lent by a thin-M neighbour) at 0.98 (session 79,
        # call B)
        c = _fit(cfg(*_THIN_N_TILE[family], 4, 4, "tma"), family, smem_limit)
        split = split_for(m, n, k, c, num_sms)
        if split > 1:
            return replace(c, variant="tma_split", split_k=split)
        two = replace(c, occupancy=2)
        return two if usable(two, family, smem_limit) else c
    if fma:
        sizes = ((mid, 3, 8, 4), (small, 4, 4, 1))
    elif family == "fp32" and tma and not three_pass:   # tf32 (its big tile is `mid`)
        sizes = ((mid, *_TF32_TMA, 1), (mid, 3, 8, 1), (small, 4, 4, 1))
    else:
        sizes = ((big, 3, 8, 1), (mid, 4, 8, 1), (small, 4, 4, 1))
    for (bm, bn, bk), stages, warps, waves in sizes:
        cand = cfg(bm, bn, bk, stages, warps, variant)
        if cdiv(m, bm) * cdiv(n, bn) >= waves * num_sms and usable(cand, family, smem_limit):
            return cand
    # Even small tiles leave SMs idle. Split K where it is long (session 9: the tiled
    # variant unsplit ran fp8 at 0.09-0.50 of cuBLAS where TMA ran 0.94): on TMA loads
    # where the tiled variant is not an option (fp8 at thin M with kept copies, session 13).
    c = cfg(*small, 4, 4, variant)
    split = split_for(m, n, k, c, num_sms) if tiled or tma else 1   # counts c's tiles only
    if split > 1 and not tiled and m <= small[0]:
        # One row of tiles, K split on TMA loads, streaming B: tiles twice as wide carry
        # twice as much of it per stage (fp8 1 and 16 x 4096 x 4096: 64 x 128 split 4
        # ran 13.4-13.6 us, 64 x 64 split 2 14.9-15.7, session 14).
        wide = cfg(small[0], 2 * small[1], small[2], 4, 4, "tma_split")
        wide_split = split_for(m, n, k, wide, num_sms)
        if wide_split > 1 and usable(wide, family, smem_limit):
            return replace(wide, split_k=wide_split)
    if split > 1:
        on_tma = tma and (family == "fp8" or not tiled)
        c = replace(c, variant="tma_split" if on_tma else "tiled", split_k=split)
    if not usable(c, family, smem_limit):
        c = cfg(*small, 2, 4, c.variant, c.split_k)
    return c
