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


def chip_for(sms: int, smem: int, fam: str, bucket: str) -> Chip:
    """The lookup's `Chip` for a call of `bucket`: its A K-major where the layouts word
    starts with 'r' (row-major), its B where it ends with 'c' (column-major)."""
    words = bucket.split(" ")
    layouts = words[2] if len(words) > 2 else ""
    tf32, fma = words[1:2] == ["tf32"], fma_bucket(bucket)
    return Chip(sms, smem, fam, layouts.startswith("r"), layouts.endswith("c"), tf32, fma,
                0 if fma else smem, fam == "16bit" or tf32, ws_forms.kind_of(bucket))


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


def transfer(r: _Row, per_step: float, c: TileConfig, m: int, n: int, k: int,
             chip: Chip) -> float:
    """A tile `c` priced from an entry on another shape: the row's tile, K split otherwise
    (`resplits`), `twins`, `wides` or `hybrids`. A fixed part (`fixed_ms`: the launch, and
    split-K's partials) plus the entry's tuned time per step on its own shape (`per_step`,
    `per_step_of`), times the steps `c` takes here. A tile won on its shape for
    that shape's fit (3072 x 320 x 2304 bf16: 128x64 makes 120 tiles, one wave; 64x128
    makes 144) can lose on a neighbour that another neighbour's tile fits (1024 x 1024 x
    2048: 64x128x128 from 1280 x 768 x 2560 ran 12.6 us where 128x64x64 ran 16.2,
    session 12). `chip`: its SMs, and the call's family and shared memory for a wide
    tile's price (`wide_step`) and a split tile's programs an SM (`split_residency`)."""
    if c.occupancy > r.config.occupancy:
        per_step *= STAGE_COST ** (r.config.num_stages - c.num_stages)
    if c.variant in _WIDE and r.config.variant not in _WIDE:
        per_step *= wide_step(r.config, c, chip.fam)
    per_sm = split_residency(c, chip.fam, chip.split_smem) if c.variant == "tma_split" else 1
    return fixed_ms(c, m, n, chip.sms) + per_step * steps(c, m, n, k, chip.sms, per_sm)


def priced(rows: list[_Row], m: int, n: int, k: int, variants: tuple[str, ...], chip: Chip
           ) -> list[tuple[float, TileConfig, float]]:
    """(predicted ms, tile, the margin it must win by) of each timed row's tile, its K
    re-splits (1), its `twins` (TWIN_MARGIN), `wides` and `halves` (WIDE_MARGIN) and
    `hybrids` (HYBRID_MARGIN) on this shape."""
    elem = ELEM_BYTES.get(chip.fam, 2)
    sms, out = chip.sms, []
    # `wides`' tall forms only over a K-major B (16-bit rr runs `tma_tall` in one wave only)
    fits = variants if chip.b_kmajor else tuple(v for v in variants if v != "tma_tall")
    for r in rows:
        if r.ms > 0 and splits_fit(r.config, k):
            # the row's, once for every option priced from it
            ps = per_step_of(r, sms, chip.fam, chip.split_smem)
            out += [(transfer(r, ps, c, m, n, k, chip), c, 1.0)
                    for c in (r.config, *resplits(r.config, m, n, k, variants, sms, chip.fam,
                                                  chip.split_smem, chip.anew))]
            out += [(transfer(r, ps, c, m, n, k, chip), c, TWIN_MARGIN)
                    for c in twins(r.config, chip.fam, chip.smem, chip.fma)]
            fit = k * elem >= FIT_MIN_K_BYTES
            out += [(transfer(r, ps, c, m, n, k, chip), c, WIDE_MARGIN)
                    for c in (*wides(r.config, chip.fam, chip.smem, fits, fit),
                              *halves(r.config, m, n, chip.fam, chip.smem, fits, sms, fit),
                              *one_wave(r.config, m, n, k, chip.fam, chip.smem, variants,
                                        sms, chip.tf32))]
            out += [(transfer(r, ps, c, m, n, k, chip), c, HYBRID_MARGIN)
                    for c in (() if chip.fma else hybrids(r.config, m, n, k, variants, sms,
                                                          elem, chip.a_kmajor))]
    if chip.ws:   # each tile at the speed of the form it runs in (entries are tuned plain;
        # only 128-row tiles have a form or a peer's: the rest skip the call, a first
        # call's plan is mostly this lookup)
        gain, kind, rows_ = ws_forms.gain, chip.ws, ws_forms.BLOCK_M
        out = [(ms / gain(c, kind) if c.block_m == rows_ else ms, c, margin)
               for ms, c, margin in out]
    return out


def fastest(options: list[tuple[float, TileConfig, float]]) -> tuple[float, TileConfig]:
    """The option predicted fastest, each weighed by its margin; (its prediction, tile)."""
    ms, c, _ = min(options, key=lambda o: o[0] * o[2])
    return ms, c
