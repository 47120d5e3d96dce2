"""The tuning knowledge base: committed per-chip tables of tuned tiles, read at call time.

`gemmgate tune` searches tiles offline and writes kernels/tuned/<chip>.json. Each entry
records what it was tuned on and for: chip, driver, triton version, the source hash of
the variant's kernel, the bucket (family, mode, operand layouts, tma or pointer path) and
the exact shape. At call time, `lookup` returns the entry for the exact shape, or a near
entry of the same bucket by regime (`regime`: how many output tiles, how deep K, how
narrow the thinner side; within NEAREST_MAX): of the NEIGHBOURS nearest, the one whose
tile `pricing.transfer` predicts fastest here (its tuned time per SM step, times the steps it
takes on this shape: kernels/steps.py's step model), each tile also with K split anew
where its tiles leave SMs idle (`resplits`); a farther one's (up to FAR_NEIGHBOURS) where
it predicts FAR_MARGIN faster still; or None (the caller's heuristic then decides). A
neighbour's tile that fits an SM twice is also weighed at two programs per SM (`twins`,
TWIN_MARGIN faster), a 16-bit 128x256 one at 128x192, and a 128x128 one widened to cover
N (where B is K-major also made as tall, to cover M; `wides`, WIDE_MARGIN), and a 16-bit
or fp8 128x256 one widened to 288 or 320 (or made as tall) where that covers the shape in
one wave and 128x256 takes two, an fp8 128x128x128 or 16-bit 128x128x64 one made 288 or
320 tall (a tf32 128x128x32 one 320 tall) where that covers it in one wave and 128x128 takes
more (`one_wave`, WIDE_MARGIN; 16-bit rr calls run the tall form there, `wides`' tall forms
only over a K-major B; a 16-bit call that cannot run it, cr, the wide form). bf16 and fp16
lend each other tiles: the other type's nearest pick where predicted OTHER_TYPE_MARGIN
faster than its own type's (`_other_type`). Only entries whose variant the call can run
count; a `fragile` tile serves its own shape and shapes it tiles exactly; a bucket of
unaligned rows (ld16-ld64) with nothing near borrows from its ld128 sibling, and a 16-bit
TMA bucket of other layouts (or IEEE fp32's cr pointer bucket) from the row-major ones,
with the forms derived from them that ran as fast there (`_LAYOUT_FREE`). An entry whose
kernel hash differs from the current source is stale: never used (kernels/table_file.py
reads the files and tells which entries are stale); a lookup that passes stale entries
over warns, once per table and count of them (`table_file.warn_stale`).
"""

from __future__ import annotations

import functools
import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from pathlib import Path

from kernels.configs import thin_n
from kernels.fma import fma_split
from kernels.pricing import Chip, chip_for, fastest, per_step_of, priced
from kernels.table_file import DEFAULT_DIR, is_stale, table_for_device, warn_stale, warn_triton
from kernels.table_file import reload as _reload_files
from kernels.tile import WGMMA_M, TileConfig, cdiv

NEAREST_MAX = 2.0   # L1 distance between regimes (log2 units); 1024^3 -> 2048^3 is 3
# (session 5: a 1024^3 entry taken for 2048^3 ran at 0.40 of cuBLAS where the heuristic
# ran 0.93; tile counts per SM change regime over such distances)
_TILES_CAP = 10     # log2 of 128x128 output tiles: 1024 tiles are ~8 waves of 132 SMs;
                    # past that the best tile no longer depends on the count (session 9)
_DEPTH_CAP = 12     # log2 K: past 4096 the pipeline is in steady state
_NARROW_CAP = 8     # log2 min(M, N): 256 and up fill a 128- or 256-wide tile
NEIGHBOURS = 3      # the nearest entries whose tiles compete for a shape (`pricing.transfer`)
# Farther entries within NEAREST_MAX compete too, but only where `pricing.transfer` predicts
# their tile FAR_MARGIN faster than the nearest three's best: predictions carried over
# larger regime distances miss by more (session 17, call G, 24 cases that 8 neighbours
# changed: every change predicted >= 1.115x ran 1.00-1.32x; those predicted 1.015-1.08x
# ran 0.78-1.09x, bf16 2016 x 192 x 2816 0.78)
FAR_NEIGHBOURS = 8
FAR_MARGIN = 1.10
# Buckets whose TMA tiles carry across operand layouts: 16-bit, where wgmma reads either
# major order from shared memory (not the tiled kernel's: its pointer loads depend on the
# layout; bf16 208 x 491 x 173 cc borrowed rr's 64x64x64 at x0.71, session 20, call B).
# A call in a layout with no entry near borrows the row-major bucket's (holdout4, session
# 20: bf16 cr 384 x 1568 x 3200 ran the heuristic's tile at 0.49 of cuBLAS and 3360 x 304
# x 6624 at 0.67, borrowing 1.04 and 1.09; the tune set holds row-major shapes, and thin
# rc and cc ones only).
# Besides the rows' own variants, the forms a lookup derives from them (`wides`,
# `hybrids`) carry where they ran as fast as over row-major operands. Session 38, call 1
# (bf16, 3 shapes, every layout): a wide 128x160 over a column-major A (cr, cc: its A
# MN-major) ran 1.08-1.25x its row-major time, over a column-major B (rc) 0.95-1.07x; the
# tall form over a column-major B ran faster than over a row-major one (`steps`). Calls 2
# and 3, A/B of the picks this (with the tall form where B is K-major) moved among random
# rc and cc shapes, two draws, bf16 and fp16: x1.15-1.23, 231 of 238 faster.
_LAYOUT_FREE: dict[tuple[str, str, str], tuple[str, ...]] = {
    ("16bit", "tma", "rc"): ("tma", "tma_split", "tma_wide", "tma_tall", "tma_hybrid"),
    ("16bit", "tma", "cc"): ("tma", "tma_split", "tma_tall", "tma_hybrid"),
    ("16bit", "tma", "cr"): ("tma", "tma_split", "tma_hybrid"),
    # IEEE fp32 with A column-major (B row-major) runs the tiled kernel on the FMA units'
    # own order; row-major's tiled tiles carry (holdout4 cr 3360 x 304 x 6624 and 384 x
    # 1568 x 3200: 0.76 and 0.60 on the heuristic's unsplit tile, 1.06 and 0.92 on
    # row-major's split ones; session 20, calls A and D)
    ("fp32", "ptr", "cr"): ("tiled",),
}
# The two 16-bit types lend each other tiles: a bf16 call also runs the nearest lookup
# on fp16's entries, and an fp16 call on bf16's (`_other_type`); the other type's tile is
# taken where predicted OTHER_TYPE_MARGIN faster than the call's own type's best, or where
# its own type has nothing near. An exact entry of its own type decides alone. The H200
# runs both types at one rate (session 26, call 3: on 120 cases run on one tile in both,
# Triton's bf16 time was 0.990 of fp16's, geomean), but each type's table was tuned and
# kept apart: fp16 80 x 608 x 320 ran 0.78 of cuBLAS where bf16's tile ran 0.95.
# Session 27, call 1, A/B against the tables apart of one pooled lookup (both types'
# neighbours in one list, no margin): 42 picks changed, bf16's 16 ran x1.038 (0.85-1.38),
# fp16's 26 x1.009 (0.89-1.22), 22 of fp16's predicted under 5% faster. The margin keeps
# 18 of those picks: bf16's 14 ran x1.039, fp16's 4 x1.035 (80 x 608 x 320 x1.22).
_OTHER_TYPE = {"bf16": "fp16", "fp16": "bf16"}
OTHER_TYPE_MARGIN = 1.05


def regime(m: int, n: int, k: int) -> tuple[float, float, float]:
    """Where a shape sits for tile choice, in log2 units: (128x128 output tiles, K, the
    thinner of M and N), each capped where it stops mattering. Shapes of one regime take
    the same tile (8192 x 28672 x 8192 runs 8192^3's), unlike shapes merely near in
    M, N, K (2048^3 does not run 1024^3's)."""
    tiles = cdiv(max(m, 1), 128) * cdiv(max(n, 1), 128)
    return (min(math.log2(tiles), _TILES_CAP), min(math.log2(max(k, 1)), _DEPTH_CAP),
            min(math.log2(max(min(m, n), 1)), _NARROW_CAP))


def fragile(c: TileConfig, m: int, n: int, k: int = 0, fma: bool = False) -> bool:
    """A tile fast only where it was measured: the tiled kernel unsplit with a 128x128
    tile or larger (pointer loads, 128+ accumulator registers per thread) on a shape it
    does not tile exactly. Taken from an entry of the same regime for such shapes, it ran
    at 0.31-0.71 of the pick before (session 9 holdout: M = 170-4827, not multiples of
    128); for 8192 x 28672 x 8192 from 4096^3 at 1.39. And a TMA tile of more than 64
    rows at M < 64, where the search offers 64 rows only (kernels.dispatch.candidates):
    fp32 63 x 1000 x 2048 borrowed 128x64 split-K at 0.34 of cuBLAS where 48 x 1000 x
    2048 ran its 64-row tile at 0.85 (session 19, call F). And an IEEE fp32 (`fma`)
    TMA tile unsplit on a shape whose `fma_split` is 4 or more: 1000^3's and 1024^3's,
    which won there by 4-7% over split 4, ran holdout5's 463 x 1227 x 581, 1792 x 751 x
    801 rc and 3717 x 320 x 640 rc at x0.75-0.83 of the split tiles they replaced
    (session 23, call 3). Only an exact entry uses it."""
    if fma and c.variant == "tma" and fma_split(m, n, k) >= 4:
        return True
    if c.variant != "tiled":
        return m < WGMMA_M and c.block_m > WGMMA_M
    return c.split_k == 1 and c.block_m * c.block_n >= 128 * 128 \
        and (m % c.block_m != 0 or n % c.block_n != 0)


def crossed(m: int, n: int, shape: tuple[int, int, int], family: str) -> bool:
    """Whether an entry of `shape` is thin in M (under wgmma's 64 rows, across a wide N)
    where the M x N call is thin in N and the heuristic has a thin-N tile for it
    (`configs.thin_n`). `regime` takes the thinner side whichever it is, and the tile does
    not: a thin-M entry's 64x128 tiles lay their 128 columns across the thin N (bf16 11008
    x 32 x 4096 cr borrowed 24 x 6000 x 3000's as tma_hybrid 64x64x128 k3, priced 37.6 us,
    and ran 51 at 0.88 of cuBLAS where a search found 64x32x128 at 0.98; H100, session
    81). Such rows are not lent there. Other families keep them: the heuristic has no
    thin-N tile of theirs (fp8's and tf32's thin-N picks fell to 128x256 tiles without)."""
    return thin_m(shape) and thin_n(family, m, n)


def thin_m(shape: tuple[int, int, int]) -> bool:
    """Whether an entry of `shape` is thin in M across a wide N: `crossed`'s entry half."""
    return shape[0] < WGMMA_M <= shape[1]


@dataclass(frozen=True, eq=False)
class _Row:
    """A table entry as a lookup reads it: parsed once per table (`_index`); one object
    per entry, hashed by identity (`per_step_of` caches on it)."""

    config: TileConfig
    shape: tuple[int, int, int]
    where: tuple[float, float, float]   # its regime
    stale: bool
    ms: float                           # its tuned time (0: not recorded)
    order: int = 0                      # its place among its bucket's entries in the file
    logs: tuple[float, float, float] = field(init=False)   # log2 M, N, K: `_near`'s tie-break

    def __post_init__(self) -> None:
        object.__setattr__(self, "logs", _logs(*self.shape))


def _logs(m: int, n: int, k: int) -> tuple[float, float, float]:
    return math.log2(max(m, 1)), math.log2(max(n, 1)), math.log2(max(k, 1))


def _tiles_of(r: _Row) -> float:
    """A row's first regime coordinate, by which `_index` sorts a bucket's rows."""
    return r.where[0]


@functools.cache
def _index(device_name: str, directory: str) -> tuple[str, dict[str, tuple[_Row, ...]]]:
    """(the table file or files as warnings name them, `DeviceTable.name`; bucket -> rows)
    for this device: regimes computed once, so a nearest
    lookup on a new shape costs microseconds, not a parse of every entry (session 10:
    ~320 us on the dev CPU for 118 entries, most of a first call's own cost). A bucket's
    rows are sorted by their regime's output tiles (file order within: `order`), so `_near`
    reads only those within NEAREST_MAX of a shape's."""
    table = table_for_device(device_name, Path(directory))
    path, entries = table.name, table.entries   # warnings name both files where layered
    warn_triton(path, entries)
    rows: dict[str, list[_Row]] = {}
    tiles: dict[TileConfig, TileConfig] = {}   # one object a tile: the caches keyed by
    for e in entries:                          # tiles then match it by identity
        m, n, k = int(e["m"]), int(e["n"]), int(e["k"])
        got = rows.setdefault(e["bucket"], [])
        tile = TileConfig(**e["config"])
        got.append(_Row(tiles.setdefault(tile, tile), (m, n, k), regime(m, n, k),
                        is_stale(e), float(e.get("tuned_ms") or 0.0), len(got)))
    return path, {b: tuple(sorted(r, key=_tiles_of)) for b, r in rows.items()}


@functools.cache
def _exacts(device_name: str, directory: str
            ) -> dict[str, tuple[dict[str, int], dict[tuple[int, int, int], tuple[_Row, ...]]]]:
    """bucket -> (its stale entries per variant, shape -> its fresh rows in file order):
    what `_lookup` reads before it prices, so that it does not walk a bucket per call."""
    out = {}
    for bucket, rows in _index(device_name, directory)[1].items():
        stale: dict[str, int] = {}
        exact: dict[tuple[int, int, int], list[_Row]] = {}
        for r in sorted(rows, key=_IN_FILE):
            if r.stale:
                stale[r.config.variant] = stale.get(r.config.variant, 0) + 1
            else:
                exact.setdefault(r.shape, []).append(r)
        out[bucket] = (stale, {sh: tuple(rs) for sh, rs in exact.items()})
    return out


_IN_FILE = attrgetter("order")   # a bucket's rows in file order (`_index` sorts them otherwise)


def lookup(device_name: str, bucket: str, m: int, n: int, k: int,
           directory: Path = DEFAULT_DIR, variants: tuple[str, ...] = ("tma", "tiled"),
           sms: int = 0, smem: int = 0) -> tuple[TileConfig, str] | None:
    """(tile, "table" | "table-nearest") for this shape among entries whose variant the
    call can run, or None. A bucket with nothing near borrows from the next of
    `_sources` that has (its ld128 sibling: the same operands, rows aligned to 128 bytes;
    the row-major buckets, where `_LAYOUT_FREE` says). Given the device's
    `sms`, a nearest lookup weighs the NEIGHBOURS nearest entries' tiles by `pricing.transfer`;
    given its shared memory a program (`smem`), each one-program TMA tile's `twins` too."""
    path, rows = _index(device_name, str(directory))
    exacts = _exacts(device_name, str(directory))
    buckets, fam = _sources(bucket)
    chip = chip_for(sms, smem, fam, bucket)
    where = regime(m, n, k)
    for i, (source, carried) in enumerate(buckets):
        found = _lookup(path, rows.get(source, ()), exacts.get(source, _NO_EXACTS), m, n, k,
                        where, _carried(variants, carried), chip,
                        rows.get(_other_type(source), ()))
        if found is not None:
            return found if i == 0 else (found[0], "table-nearest")
    return None


@functools.lru_cache(maxsize=1024)   # pure in the bucket's name: every lookup asks
def _sources(bucket: str) -> tuple[tuple[tuple[str, tuple[str, ...] | None], ...], str]:
    """The buckets a lookup reads, in order, each with the variants whose tiles carry over
    from it (None: all), and the bucket's family (its first word): the bucket; below ld128
    its ld128 sibling; and where `_LAYOUT_FREE` names the bucket's family, path and layouts,
    the row-major buckets' tiles of those variants."""
    head, _, ld = bucket.rpartition(" ld")
    out = [(bucket, None)] if ld == "128" else [(bucket, None), (f"{head} ld128", None)]
    words = (bucket.split(" ") + ["", "", "", ""])[:4]   # family, mode, layouts, path
    family, layouts, path = words[0], words[2], words[3]
    # (the fp32 family's rule is IEEE fp32's, measured there: tf32 and tf32x3 calls of
    # that bucket had borrowed by it too, unmeasured; a review)
    carried = _LAYOUT_FREE.get((family, path, layouts)) \
        if family != "fp32" or words[1] == "fp32" else None
    if carried:
        for rr_path in ("tma", "ptr") if "tiled" in carried else ("tma",):
            rr = " ".join((*words[:2], "rr", rr_path))
            out += [(f"{rr} ld{x}", carried) for x in dict.fromkeys((ld, "128"))]
    return tuple(out), family


@functools.lru_cache(maxsize=1024)
def _other_type(bucket: str) -> str:
    """The bucket of the other 16-bit type whose entries a lookup also weighs (the same
    operands, layouts, path and row alignment); "" for the other families."""
    words = bucket.split(" ")
    other = _OTHER_TYPE.get(words[1]) if len(words) > 1 and words[0] == "16bit" else None
    return " ".join((words[0], other, *words[2:])) if other else ""


def _carried(variants: tuple[str, ...], carried: tuple[str, ...] | None) -> tuple[str, ...]:
    return variants if carried is None else tuple(v for v in variants if v in carried)


def predict(device_name: str, bucket: str, m: int, n: int, k: int, config: TileConfig,
            directory: Path = DEFAULT_DIR, sms: int = 132,
            variants: tuple[str, ...] = ("tma", "tma_split", "tiled"), smem: int = 0
            ) -> float | None:
    """What `lookup`'s model predicts `config` takes on this shape, in ms: the fastest
    `pricing.transfer` of it from an entry `lookup` could take it from (`_near`, of the bucket or
    its ld128 sibling), as the entry's tile, K re-split from it or its `twins` (given
    `smem`); None where none has it.
    For sizing a change to the table or the lookup before a device A/B
    (scripts/lookup_diff.py --predict)."""
    _, rows = _index(device_name, str(directory))
    buckets, fam = _sources(bucket)
    chip = chip_for(sms, smem, fam, bucket)
    for b, carried in buckets:
        runs = _carried(variants, carried)
        near = [*_near(rows.get(b, ()), m, n, k, runs, chip.fma, family=chip.fam),
                *_near(rows.get(_other_type(b), ()), m, n, k, runs, chip.fma,
                       family=chip.fam)]
        got = [ms for ms, c, _ in priced(near, m, n, k, runs, chip) if c == config]
        if got:
            return min(got)
    return None


_WINDOW_SLACK = 1e-9               # `_near`'s window, a hair wider than NEAREST_MAX
_BY_DISTANCE = itemgetter(0, 1, 2)    # (distance, shape distance, file order)
# `_near` compares regime distances in units of 1/_TIE_SCALE: sums of log2 differences
# that are equal in exact arithmetic can differ in the last bit (3072 x 192 x 5098 is
# 1.415... from both 160 x 5120 x 3072 and 1280 x 768 x 2560, 4e-16 apart), and a tie is a
# tie. (int(), not round(x, 9): a third of the time, in a first call's loop.)
_TIE_SCALE = 1e9
# NEAREST_MAX in those units: a row at exactly NEAREST_MAX is in whatever the last bit says
# (128 x 640 x 1024 to 128 x 256 x 640 summed to 2.0000000000000004, 128 x 768 x 1024 to
# 128 x 256 x 768 to 2.0; a review), and the shape distance ties alike (256 x 1408 x 4096
# is log2(3) from 768 x 1408 x 4096 and from 256 x 4224 x 4096, 2e-15 apart)
_NEAR_MAX_UNITS = int(NEAREST_MAX * _TIE_SCALE + 0.5)
_NEAR_WIDE = NEAREST_MAX + _WINDOW_SLACK


def _near(rows: tuple[_Row, ...], m: int, n: int, k: int,
          variants: tuple[str, ...], fma: bool = False,
          where: tuple[float, float, float] | None = None, family: str = "") -> list[_Row]:
    """The rows a nearest lookup weighs: fresh, of a variant the call can run, not
    `fragile` here, not `crossed` (given the bucket's `family`), within NEAREST_MAX of this
    shape's regime (`where`, where the caller has it); nearest first; of equal distance (to
    1/`_TIE_SCALE`), nearest in uncapped log2 M, N, K, then first in the file. (The
    regime's caps put 8192^3 and 4096 x 4096 x 11008 at 0 from 8192 x 8192 x 28672, where
    file order gave the latter's tile, x0.575 on an H100, session 65.) `rows`: one
    bucket's, as `_index` sorts them."""
    if not rows:
        return []
    t, d, w = where or regime(m, n, k)
    lm, ln, lk = _logs(m, n, k)
    # the window of output-tile coordinates within NEAREST_MAX (a hair wider: the test
    # below is the rule, in its own arithmetic)
    lo = bisect_left(rows, t - NEAREST_MAX - _WINDOW_SLACK, key=_tiles_of)
    hi = bisect_right(rows, t + NEAREST_MAX + _WINDOW_SLACK, lo=lo, key=_tiles_of)
    # `crossed`, its call's half asked once (a first call's loop), its rows' half only
    # for a thin-N call
    thin = bool(family) and thin_n(family, m, n)
    scored = []
    for i in range(lo, hi):
        r = rows[i]
        rt, rd, rw = r.where
        dt = t - rt   # the cheap tests first: each coordinate alone within NEAREST_MAX
        if -_NEAR_WIDE <= dt <= _NEAR_WIDE:
            dist = abs(dt) + abs(d - rd) + abs(w - rw)
            if dist <= _NEAR_WIDE and r.config.variant in variants and not r.stale \
                    and not fragile(r.config, m, n, k, fma) \
                    and not (thin and thin_m(r.shape)):
                units = int(dist * _TIE_SCALE + 0.5)   # (the rule: in units, below)
                if units <= _NEAR_MAX_UNITS:
                    rm, rn, rk = r.logs   # the tie-break, inline: a first call's loop
                    scored.append((units, int((abs(lm - rm) + abs(ln - rn) + abs(lk - rk))
                                              * _TIE_SCALE + 0.5), r.order, r))
    scored.sort(key=_BY_DISTANCE)
    return [r for *_, r in scored]


_NO_EXACTS: tuple[dict, dict] = ({}, {})


def _lookup(path: str, rows: tuple[_Row, ...], exacts: tuple[dict, dict], m: int, n: int,
            k: int, where: tuple[float, float, float], variants: tuple[str, ...], chip: Chip,
            other_type: tuple[_Row, ...] = ()) -> tuple[TileConfig, str] | None:
    """One source bucket's tile here: its first fresh exact entry of a variant the call
    can run (`exacts`: the bucket's `_exacts`), else the nearest pricing of its rows and
    the other 16-bit type's; each lookup warns of the bucket's stale runnable entries."""
    stale_by_variant, by_shape = exacts
    if stale_by_variant:
        stale = sum(stale_by_variant.get(v, 0) for v in dict.fromkeys(variants))
        if stale:
            warn_stale(path, stale)
    for r in by_shape.get((m, n, k), ()):
        if r.config.variant in variants:
            return r.config, "table"
    if not rows and not other_type:
        return None
    memo: dict = {}   # the table tiles' options here, shared by both passes (`priced`)
    own = _nearest(rows, m, n, k, variants, chip, memo, where)   # (`_near` skips stale rows)
    other = _nearest(other_type, m, n, k, variants, chip, memo, where)
    if own is None or (other is not None and other[0] * OTHER_TYPE_MARGIN <= own[0] < math.inf):
        own = other
    return None if own is None else (own[1], "table-nearest")


def over_split(c: TileConfig, k: int) -> bool:
    """Whether `c` splits K into more ranges than K has blocks of `c.block_k` (some
    ranges empty)."""
    return c.split_k > cdiv(k, c.block_k)


def _nearest(rows: tuple[_Row, ...], m: int, n: int, k: int, variants: tuple[str, ...],
             chip: Chip, memo: dict | None = None,
             where: tuple[float, float, float] | None = None
             ) -> tuple[float, TileConfig] | None:
    """(predicted ms, tile) of the rows' best near tile here (NEIGHBOURS nearest, a
    farther one FAR_MARGIN faster), or None; without `sms` the nearest row's tile at
    infinite ms (nothing to predict with). `memo`: `priced`'s, for this shape."""
    memo = {} if memo is None else memo
    near = _near(rows, m, n, k, variants, chip.fma, where, chip.fam)
    if not near:
        return None
    options = priced(near[:NEIGHBOURS], m, n, k, variants, chip, memo) if chip.sms else []
    if not options:   # no near tile priced here: the nearest taken as it is, but for a
        # split into more ranges than K has blocks (some ranges empty: bf16 98 x 153 x 4011
        # ran k64 over 32 blocks, x1.11 by the heuristic's split on an H100, session 77;
        # other unpriced picks ran x0.81-0.89 by the heuristic's: kept)
        c = near[0].config
        if chip.sms and over_split(c, k):
            return None   # the next source or the heuristic decides
        return math.inf, c
    best = fastest(options)
    far = priced(near[NEIGHBOURS:FAR_NEIGHBOURS], m, n, k, variants, chip, memo)
    if far:
        far_best = fastest(far)
        if far_best[0] * FAR_MARGIN <= best[0]:
            best = far_best
    return best


def reload() -> None:
    """Forget the tables read so far, for the lookup only: `kernels.matmul` keeps its
    cached plans, so after a table is written call `kernels.dispatch.reset()`, which
    calls this (as `gemmgate tune` does; a review found this docstring misled)."""
    _reload_files()
    _index.cache_clear()
    _exacts.cache_clear()
    per_step_of.cache_clear()
