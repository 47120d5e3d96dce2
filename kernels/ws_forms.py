"""Which tiles the warp-specialized kernel (kernels/matmul_ws.py) runs, and the rule that
gives a 16-bit or fp8 pick its form there: no Gluon here, so the dispatcher reads it freely.

Session 49 (H200, bf16 and fp16, rr, kept copies): on the same tile the warp-specialized
kernel ran x1.05 (128x128, 16 drawn shapes, 15 faster), x1.02 (128x144) and x1.09
(128x192) against `tma` and `tma_wide` at 8 warps; against the picks it would replace
(their own stages and warps) x1.02-1.07 where B's part tile is not read past N. So a
16-bit row-major pick of those tiles runs there (`form`). Session 50: over a column-major
B (rc, x @ W.T) the same tiles ran x1.04-1.07 (run 6), so rc picks take the form too; the
lookup prices each option at its form's speed (`gain`: the table's entries are tuned on
plain tiles). Session 51: fp8 (B K-major, as its bucket copies it) on 128x(128 + 16, 32
or 64)x128 tiles too (`KINDS`), x1.04-1.13 on the same tiles; not 128x128x128, which ran
as fast as the picks it would replace (x1.003 over 101 of them, down to x0.93 at short K).
A pick runs in its form only where GAIN lists its width for its kind: measured there.
Session 55: a 16-bit 128x128 pick with one tile a program over a short K runs plain at 4 warps
(`short_plain`), faster there than the form; the lookup still prices it at the form's GAIN
(under what it runs at), so that rule moves no pick, only what a pick runs.
"""

from __future__ import annotations

import functools

from kernels.tile import TileConfig, cdiv, pow2_floor, replace

BLOCK_M = 128      # the tiles the dispatcher's rule gives the kernel (`form`)
BLOCK_K = 64       # 16-bit; 1-byte operands take K blocks as many bytes deep (`block_k_of`)
WARPS = 8          # their consumers: two warpgroups (the kernel's default partition)
SMEM = 232448      # a program's shared memory on the H200 (227 KiB)
_RESTS = (0, 16, 32, 64)   # the narrower box of a wide tile (none: a power of two wide)
LAYOUTS = ("rr", "rc")   # the operand layouts whose 16-bit TMA picks run in their `form`
FP8 = "fp8"        # the kind of fp8 TMA picks (B K-major), which run in their `form` too
KINDS = (*LAYOUTS, FP8)   # a bucket's kind (`kind_of`): the keys of GAIN
# The tiles whose picks run in their `form`, by kind and width, and how much faster the form
# runs than the tile it replaces: the same tile at 8 warps warp-specialized and not, H200,
# 16 drawn shapes, the lower of bf16 and fp16 (rr: session 49 run 5, 128 + 32 session 50
# run 6; rc: session 50 run 6). 128x128 is credited the low end of its gains over the picks
# it replaced at their own warps and stages (x1.02-1.07), not its x1.048 (rc: x1.068):
# credited so, near-ties with plain 128x256 tiles moved to it and ran x0.97 (11 of 13
# slower, session 50 run 3). rc 128x160 runs its form (x1.099 over the same tile, session
# 51 run 1) uncredited: credited so, 128x144 picks moved to it and ran x0.992 (0 of 12
# faster, session 51 run 2). fp8 (128 deep): 128 + 64 session 50 run 10,
# 128 + 16 and 32 session 51 run 1; no 128x128 (x1.061 over the same tile at 8 warps, but
# x1.003 over the 4-warp picks it replaced, 54 of 101 faster: session 51 run 1).
GAIN = {"rr": {128: 1.02, 144: 1.019, 160: 1.052, 192: 1.089},
        "rc": {128: 1.02, 144: 1.038, 160: 1.0, 192: 1.058},
        FP8: {144: 1.044, 160: 1.113, 192: 1.131}}
# A plain 128x256 tile (no form: warp-specialized it ran as fast, session 49) and its
# hybrid are priced with the 128x128 form's credit, so the two compare as the table
# measured them: the credit alone moved near-ties from 128x256 to 128x128 that then ran
# x0.968 and x0.974 (13 and 10 picks, 1 and 3 faster; session 50 runs 3 and 4), where
# every other kind of move it made ran x1.04-1.20.
PEERS = {256: 128}


def kind_of(bucket: str) -> str:
    """The kind of a tuning bucket whose TMA picks run in their `form` (KINDS: a 16-bit
    bucket's operand layouts where they are in LAYOUTS, FP8 for fp8 over a K-major B), or
    "": the dispatcher's rule and the lookup's prices ask the same."""
    words = bucket.split(" ")
    if len(words) < 4 or words[3] != "tma":
        return ""
    if words[0] == "16bit":
        return words[2] if words[2] in LAYOUTS else ""
    return FP8 if words[0] == "fp8" and words[2].endswith("c") else ""


def elem_of(kind: str) -> int:
    """The operands' bytes an element in a bucket of this kind (KINDS)."""
    return 1 if kind == FP8 else 2


def block_k_of(elem: int = 2) -> int:
    """The K block of a `form` over `elem`-byte operands: 128 bytes deep (wgmma's swizzle)."""
    return BLOCK_K * 2 // elem


def parts(config: TileConfig) -> tuple[int, int]:
    """A tile's B boxes: its largest power of two and the rest (128x144: 128 + 16;
    128x256: 256 and none)."""
    first = pow2_floor(config.block_n)
    return first, config.block_n - first


def warps(block_m: int) -> int:
    """The consumer warps of a tile `block_m` rows tall: a warpgroup for each 64 rows."""
    return 4 * (block_m // 64)


def max_regs(block_m: int, occupancy: int = 1) -> int:
    """A thread's registers before the partitions' split: the consumers' warps and the
    load warp's warpgroup, `occupancy` programs an SM, in 64 K registers (at most 240)."""
    return min(240, 65536 // (32 * (warps(block_m) + 4) * occupancy) // 8 * 8)


def stages_for(block_n: int, smem: int = SMEM, block_n1: int = 0, block_m: int = BLOCK_M,
               block_k: int = BLOCK_K, occupancy: int = 1, elem: int = 2) -> int:
    """Stages of `elem`-byte operands (2: 16-bit; 1: fp8) that fit beside C's staging
    buffers (16-bit C), a program's share of the SM's shared memory at `occupancy`
    programs, at most 6 (0: not even 2 fit)."""
    cols = block_n + block_n1
    stage = (block_m * block_k + block_k * cols) * elem
    got = (smem // occupancy - block_m * cols * 2 - 4096) // stage
    return min(6, got) if got >= 2 else 0


def fits(config: TileConfig, elem: int = 2) -> bool:
    """Whether the kernel runs the tile over `elem`-byte operands: 64 or 128 rows on a
    consumer warpgroup each 64 (`warps`), BLOCK_K 64 or 128, K whole, one program an SM
    (two for 64 rows, whose registers fit twice: `max_regs`), 64, 128 or 256 columns or,
    128 rows tall, 128 and a smaller power of two up to 64, and two stages at least in
    shared memory."""
    first, rest = parts(config)
    return config.block_m in (64, 128) and config.num_warps == warps(config.block_m) \
        and config.block_k in (64, 128) and config.split_k == 1 \
        and (config.occupancy == 1 or config.block_m == 64 and config.occupancy == 2) \
        and first in (64, 128, 256) and rest in _RESTS \
        and (rest == 0 or config.block_m == first == 128) and _most_stages(config, elem) >= 2


def _most_stages(config: TileConfig, elem: int = 2) -> int:
    """The stages of `elem`-byte operands the tile's shared memory holds (`stages_for`)."""
    first, rest = parts(config)
    return stages_for(first, block_n1=rest, block_m=config.block_m, block_k=config.block_k,
                      occupancy=config.occupancy, elem=elem)


def stages(config: TileConfig, elem: int = 2) -> int:
    """The stages a tile the kernel runs (`fits`) is launched with: its own, at most as
    many as shared memory holds for `elem`-byte operands (matmul_ws.recipe)."""
    return min(config.num_stages, _most_stages(config, elem))


# Session 55 (call 2, H200, bf16 rr, graph-timed, L2 flushed): where each program has one
# 128x128 tile (no more tiles than SMs) the load warp has no next tile to run ahead into,
# and at a short K the plain tile at 4 warps and 4 stages ran faster than the form: x1.014-
# 1.054 over it at K 136-512 (12 of 12 shapes), x0.99-1.03 at K 520-928 (9), x0.96-0.99 at
# K 1224-1528 (4). So such a pick runs there plain (`form`), at these warps and stages: the
# moved picks ran x1.044 (bf16) and x1.042 (fp16), 90 of 90 faster (call 3). Over a
# column-major B (rc) the same tiles ran x1.026-1.074 plain at K 136-512 (6 of 6 shapes),
# x1.028 at 720 and x0.989 at 1224 (call 4), so rc picks take the rule too.
SHORT_K = 512
PLAIN_SHORT = (4, 4)   # (warps, stages)


def short_plain(pick: TileConfig, kind: str, m: int, n: int, k: int, sms: int) -> bool:
    """Whether a pick with a `form` runs plain at PLAIN_SHORT instead: a 16-bit 128x128
    tile over a row-major A (B either way: the layouts measured) at K <= SHORT_K, one
    tile a program (`sms` > 0: the caller's SM count)."""
    return kind in LAYOUTS and pick.block_n == BLOCK_M and 0 < k <= SHORT_K and sms > 0 \
        and cdiv(m, BLOCK_M) * cdiv(n, BLOCK_M) <= sms


def form(pick: TileConfig, kind: str = "rr", m: int = 0, n: int = 0, k: int = 0,
         sms: int = 0) -> TileConfig | None:
    """The warp-specialized form of a TMA pick in a bucket of `kind` (KINDS), or None:
    `tma` 128x128 or `tma_wide` 128x(128 + 16, 32 or 64), 128 bytes deep (`block_k_of`),
    at one program an SM, K whole, where GAIN lists its width for the kind (any stages and
    warps: the form takes its own, `stages_for`, and 8 warps). Given the call's M, N, K
    and SMs: where `short_plain`, the plain `tma` tile at PLAIN_SHORT (None where the pick
    is that already)."""
    elem = elem_of(kind)
    if not _formable(pick.variant, pick.block_m, pick.block_n, pick.block_k, pick.split_k,
                     pick.occupancy, kind):
        return None
    if short_plain(pick, kind, m, n, k, sms):
        warps_, stages_ = PLAIN_SHORT
        plain = replace(pick, num_warps=warps_, num_stages=stages_)
        return None if plain == pick else plain
    return replace(pick, variant="tma_ws", num_warps=WARPS, num_stages=stages_for(
        128, block_n1=pick.block_n - 128, block_k=pick.block_k, elem=elem))


def _formable(variant: str, block_m: int, block_n: int, block_k: int, split_k: int,
              occupancy: int, kind: str) -> bool:
    """Whether a tile of these fields in a bucket of `kind` has a `form`: GAIN lists its
    width, and `fits` takes its warp-specialized tile (8 warps), from the fields alone (a
    lookup asks for each option it prices, and a first call's lookup is cold: no
    TileConfig made to ask)."""
    elem = elem_of(kind)
    if variant not in ("tma", "tma_wide") or (split_k, occupancy) != (1, 1) \
            or (block_m, block_k) != (BLOCK_M, block_k_of(elem)) \
            or block_n not in GAIN.get(kind, ()):
        return False
    rest = block_n - 128
    return rest in _RESTS and (variant == "tma") == (rest == 0) \
        and stages_for(128, block_n1=rest, block_k=block_k, elem=elem) >= 2


@functools.lru_cache(maxsize=4096)   # a lookup asks it for every option it prices
def gain(pick: TileConfig, kind: str = "rr") -> float:
    """How much faster a pick in a bucket of `kind` (KINDS) runs in its `form` than a
    lookup prices it (its table entry's, not warp-specialized): GAIN, its PEERS' for a
    tile that has none, or 1 where none was measured."""
    bm, bn, bk, occ = pick.block_m, pick.block_n, pick.block_k, pick.occupancy
    if _formable(pick.variant, bm, bn, bk, pick.split_k, occ, kind):
        return GAIN[kind][bn]
    peer = PEERS.get(bn)
    # (a hybrid's head is the plain tile: its K-split tail aside, priced alike)
    if peer and pick.variant in ("tma", "tma_hybrid") \
            and _formable("tma", bm, peer, bk, 1, occ, kind):
        return GAIN[kind][peer]
    return 1.0


# The warp-specialized tiles `gemmgate tune` times beside the plain ones (kernels/configs.py
# `search_space`, in a bucket of a KINDS kind): 128 rows at every width the kernel takes,
# and for 16-bit the 64-row tiles session 49 ran (64x64 at two programs an SM, 64x128).
# Session 51 (run 7): at short K where each program has one tile, the 128x128x64 form ran
# x0.93-0.94 of the plain tile at 4 warps, which the lookup never offered there; a tuned
# entry is priced as it ran, with no credit (`gain`: 1 for a `tma_ws` tile).
_SEARCH_WIDTHS = (128, 144, 160, 192, 256)


def search_tiles(elem: int, rows: int = BLOCK_M) -> tuple[TileConfig, ...]:
    """The `tma_ws` tiles a tuning search over `elem`-byte operands times (`fits`, at the
    most stages that fit, at most 5), none taller than `rows` (thin M: 64)."""
    deep = block_k_of(elem)
    out = [TileConfig(BLOCK_M, w, deep, 8, 5, warps(BLOCK_M), "tma_ws") for w in _SEARCH_WIDTHS]
    if elem == 2:
        out += [TileConfig(64, 64, 128, 8, 5, warps(64), "tma_ws", occupancy=2),
                TileConfig(64, 128, 128, 8, 5, warps(64), "tma_ws")]
    staged = [replace(c, num_stages=stages(c, elem)) for c in out
              if c.block_m <= rows]
    return tuple(c for c in staged if fits(c, elem))

