"""How a lookup prices a near table entry's tile on a shape it was not tuned on
(kernels/table.py picks the fastest): the entry's tuned time per step on its own shape
(`per_step_of`), times the steps the tile takes here, plus a launch's fixed part
(`transfer`, kernels/steps.py's step model); besides the entry's own tile, the tiles
derived from it, each with the margin it must win by (`priced`: `resplits`, `twins`,
`wides`, `halves`, `one_wave`, `hybrids`), each at the speed of the form the dispatcher
runs it in (a 16-bit TMA pick warp-specialized: `ws_forms.gain`). `Chip` is what
the model knows of the device and the call (`chip_for` a bucket).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernels import ws_forms
from kernels.steps import (
    HYBRID_MARGIN,
    STAGE_COST,
    TWIN_MARGIN,
    fixed_ms,
    hybrids,
    resplits,
    split_residency,
    splits_fit,
    steps,
    twins,
)
from kernels.tile import ELEM_BYTES, TileConfig
from kernels.wide_forms import FIT_MIN_K_BYTES, WIDE_MARGIN, halves, one_wave, wide_step, wides

if TYPE_CHECKING:
    from kernels.table import _Row

_WIDE = ("tma_wide", "tma_tall")   # `wides`' variants


@dataclass(frozen=True)
class Chip:
    """What a lookup's model knows of the device: SMs (0: nothing to predict with),
    shared memory a program (0: no `twins`); and of the call: the bucket's family and
    whether its A is K-major (row-major: `hybrids`' eight-warp form)."""

    sms: int
    smem: int
    fam: str
    a_kmajor: bool
    b_kmajor: bool = True
    tf32: bool = False   # fp32 operands on single-pass TF32 (the bucket's mode word)
    fma: bool = False    # IEEE fp32, on the FMA units (`fma_bucket`)
    # the shared memory by which a split tile's programs pair on an SM (`split_residency`):
    # none for IEEE fp32, whose FMA units a second program does not speed (session 46,
    # call 1: x0.980)
    split_smem: int = 0
    anew: bool = False   # a tile tuned split is split anew (`resplits`): 16-bit and tf32
    ws: str = ""   # the bucket's ws_forms.KINDS (TMA, 16-bit rr or rc, or fp8): its picks run
    # warp-specialized


@functools.lru_cache(maxsize=1024)   # one a bucket and device: every lookup asks
def chip_for(sms: int, smem: int, fam: str, bucket: str) -> Chip:
    """The lookup's `Chip` for a call of `bucket`: its A K-major where the layouts word
    starts with 'r' (row-major), its B where it ends with 'c' (column-major)."""
    tf32, fma = bucket.split(" ")[1:2] == ["tf32"], fma_bucket(bucket)
    return Chip(sms, smem, fam, _layouts(bucket).startswith("r"), b_kmajor(bucket), tf32,
                fma, 0 if fma else smem, fam == "16bit" or tf32, ws_forms.kind_of(bucket))


def _layouts(bucket: str) -> str:
    """A bucket's operand layouts word, as the kernel reads them (copies made): 'rc'."""
    words = bucket.split(" ")
    return words[2] if len(words) > 2 else ""


def b_kmajor(bucket: str) -> bool:
    """Whether the kernel reads the bucket's B K-major (copies made): its layouts word
    ends in 'c' (the lookup's `Chip`; the heuristic's tf32x3 skinny tile)."""
    return _layouts(bucket).endswith("c")


def fma_bucket(bucket: str) -> bool:
    """Whether the bucket's calls run IEEE fp32 on the FMA units (its mode word)."""
    return bucket.split(" ")[1:2] == ["fp32"]


@functools.lru_cache(maxsize=4096)   # an entry's, for every shape it lends a tile to
def per_step_of(r: _Row, sms: int, fam: str, split_smem: int) -> float:
    """An entry's tuned time per step on its own shape, its fixed part left out (at least
    a tenth of its time: a tiny shape's time is mostly fixed); a split tile's programs
    paired on an SM where `split_smem` lets two fit (`split_residency`)."""
    (rm, rn, rk) = r.shape
    return max(r.ms - fixed_ms(r.config, rm, rn, sms), 0.1 * r.ms) / \
        steps(r.config, rm, rn, rk, sms, split_residency(r.config, fam, split_smem))


def transfer(parent: TileConfig, c: TileConfig, m: int, n: int, k: int, chip: Chip
             ) -> tuple[float, float, float, float]:
    """How a tile `c` is priced from an entry of tile `parent` on another shape (the
    entry's tile, K split otherwise (`resplits`), `twins`, `wides` or `hybrids`):
    (fixed, stage, wide, steps), its price `fixed + per_step * stage * wide * steps`
    (`priced`). A fixed part (`fixed_ms`: the launch, and split-K's partials) plus the
    entry's tuned time per step on its own shape (`per_step_of`), times what a step of
    `c` costs against the parent's (`stage`: a twin's dropped stages; `wide`: `wide_step`),
    times the steps `c` takes here. A tile won on its shape for that shape's fit (3072 x
    320 x 2304 bf16: 128x64 makes 120 tiles, one wave; 64x128 makes 144) can lose on a
    neighbour that another neighbour's tile fits (1024 x 1024 x 2048: 64x128x128 from 1280
    x 768 x 2560 ran 12.6 us where 128x64x64 ran 16.2, session 12). `chip`: its SMs, and
    the call's family and shared memory for a wide tile's price (`wide_step`) and a split
    tile's programs an SM (`split_residency`). Pure in its arguments: a lookup works it out
    once per table tile for all the entries that have it (`priced`'s `memo`)."""
    stage, wide, per_sm = _factors(parent, c, chip.fam, chip.split_smem)
    return fixed_ms(c, m, n, chip.sms), stage, wide, _steps(c, m, n, k, chip.sms, per_sm)


# `steps` past its cache: a lookup prices tiles on its own shape, new to the cache in a first
# call (each miss would cost the key and push out an entry's own shape, `per_step_of`)
_steps = steps.__wrapped__


@functools.lru_cache(maxsize=4096)   # the same few table tiles' options, for every shape
def _factors(parent: TileConfig, c: TileConfig, fam: str, split_smem: int
             ) -> tuple[float, float, int]:
    """`transfer`'s factors that no shape changes: (stage, wide, the programs of a split
    tile an SM)."""
    stage = wide = 1.0
    if c.occupancy > parent.occupancy:
        stage = STAGE_COST ** (parent.num_stages - c.num_stages)
    if c.variant in _WIDE and parent.variant not in _WIDE:
        wide = wide_step(parent, c, fam)
    return stage, wide, split_residency(c, fam, split_smem) if c.variant == "tma_split" else 1


# A table tile's options on one shape (`_options`): (tile, margin, fixed, stage, wide,
# steps, the ws form's gain)
_Option = tuple[TileConfig, float, float, float, float, float, float]


def priced(rows: list[_Row], m: int, n: int, k: int, variants: tuple[str, ...], chip: Chip,
           memo: dict | None = None) -> list[tuple[float, TileConfig, float]]:
    """(predicted ms, tile, the margin it must win by) of each timed row's tile, its K
    re-splits (1), its `twins` (TWIN_MARGIN), `wides` and `halves` (WIDE_MARGIN) and
    `hybrids` (HYBRID_MARGIN) on this shape, each at the speed of the form it runs in.
    Rows of one tile share its options (`_options`: most of a first call's plan, worked
    out once per tile, not per row; a lookup's ~13 near rows hold ~3 distinct tiles);
    `memo` carries them between calls on the same shape, variants and chip (a lookup's
    own and other-type passes), and each row scales them by its tuned time per step."""
    memo = {} if memo is None else memo
    sms, out = chip.sms, []
    for r in rows:
        if r.ms > 0:
            options = memo.get(r.config)
            if options is None:
                options = memo[r.config] = _options(r.config, m, n, k, variants, chip)
            if options:
                # the row's, once for every option priced from it
                ps = per_step_of(r, sms, chip.fam, chip.split_smem)
                out += [((fixed + ps * stage * wide * st) / gain, c, margin)
                        for c, margin, fixed, stage, wide, st, gain in options]
    return out


def _options(parent: TileConfig, m: int, n: int, k: int, variants: tuple[str, ...],
             chip: Chip) -> tuple[_Option, ...]:
    """A table tile's options on this shape, in `priced`'s order, each `transfer`'s
    factors and its ws form's gain (1 where it runs plain); none where its K ranges do not
    fit here (`splits_fit`)."""
    if not splits_fit(parent, k):
        return ()
    elem = ELEM_BYTES.get(chip.fam, 2)
    sms = chip.sms
    # `wides`' tall forms only over a K-major B (16-bit rr runs `tma_tall` in one wave only)
    fits = variants if chip.b_kmajor else tuple(v for v in variants if v != "tma_tall")
    fit = k * elem >= FIT_MIN_K_BYTES
    tiles = [(c, 1.0) for c in (parent, *resplits(parent, m, n, k, variants, sms, chip.fam,
                                                   chip.split_smem, chip.anew))]
    tiles += [(c, TWIN_MARGIN) for c in twins(parent, chip.fam, chip.smem, chip.fma)]
    tiles += [(c, WIDE_MARGIN)
              for c in (*wides(parent, chip.fam, chip.smem, fits, fit),
                        *halves(parent, m, n, chip.fam, chip.smem, fits, sms, fit),
                        *one_wave(parent, m, n, k, chip.fam, chip.smem, variants, sms,
                                  chip.tf32))]
    tiles += [(c, HYBRID_MARGIN)
              for c in (() if chip.fma else hybrids(parent, m, n, k, variants, sms, elem,
                                                    chip.a_kmajor))]
    # each tile at the speed of the form it runs in (entries are tuned plain; only 128-row
    # tiles have a form or a peer's)
    kind = chip.ws
    return tuple((c, margin, *transfer(parent, c, m, n, k, chip),
                  ws_forms.gain(c, kind) if kind and c.block_m == ws_forms.BLOCK_M else 1.0)
                 for c, margin in tiles)


def fastest(options: list[tuple[float, TileConfig, float]]) -> tuple[float, TileConfig]:
    """The option predicted fastest, each weighed by its margin; (its prediction, tile):
    the first of the least, as `min` takes it (a loop: no key call per option)."""
    ms, c, margin = options[0]
    least = ms * margin
    for o in options:
        if o[0] * o[2] < least:
            least, ms, c = o[0] * o[2], o[0], o[1]
    return ms, c
