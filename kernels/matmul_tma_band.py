"""The TMA band variant: whole waves by the `tma` kernel, the rest split along K.

Where the output tiles fill the SMs a little past a whole wave (1536 x 1536 x 3072 makes
144 tiles of 128x128 on 132 SMs), the last wave's few tiles take as long as a full one.
Stream-K in the same kernel lost 6-53% of the data-parallel loop's speed (sessions 13,
29, 32). This variant leaves the kernels as they are and cuts C in two bands:

- the leading tile-rows (or tile-columns) that fill whole waves run the `tma` kernel
  (kernels/matmul_tma.py) on views of A (or B) and C, unchanged;
- the remaining band runs `tma_split` (kernels/matmul_tma_split.py) with the tile's
  `split_k` K ranges, so its few tiles spread over the SMs, then its reduction.

Three launches (band, split, reduction) in place of one; nothing new is compiled, so the
variant's hash is its two kernels' sources. `band` picks the cut: the axis whose whole
rows or columns of tiles come nearest to whole waves without passing them. Where the
tiles make no whole wave, or exactly whole waves, there is nothing to cut and the tile
runs as `tma`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from kernels import matmul_tma, matmul_tma_split
from kernels.matmul_tma import num_sms, programs_per_sm
from kernels.tile import TileConfig, cdiv

KERNELS = (*matmul_tma.KERNELS, *matmul_tma_split.KERNELS)


@dataclass(frozen=True)
class Cut:
    """Where C is cut: along M (`rows`: the band is C[:at]) or N (C[:, :at]), with the
    band's and the rest's tile counts."""

    rows: bool
    at: int
    band_tiles: int
    rest_tiles: int


def band(M: int, N: int, block_m: int, block_n: int, programs: int) -> Cut | None:
    """The cut whose band of whole tile-rows (or tile-columns) fills the most of the
    whole waves of `programs` programs; None where the tiles make no whole wave or
    exactly whole waves (nothing left to split). Ties go to rows (A's views are its
    leading rows, contiguous for a row-major A)."""
    rows, cols = cdiv(M, block_m), cdiv(N, block_n)
    tiles = rows * cols
    waves = tiles // programs
    if waves == 0 or tiles % programs == 0:
        return None
    best = None
    for by_rows, lines, per_line, block in ((True, rows, cols, block_m),
                                            (False, cols, rows, block_n)):
        take = min(waves * programs // per_line, lines - 1)
        if take < 1:
            continue
        cut = Cut(by_rows, take * block, take * per_line, tiles - take * per_line)
        if best is None or cut.band_tiles > best.band_tiles:
            best = cut
    return best


def _views(cut: Cut, a, b, out) -> tuple[tuple, tuple]:
    """(band's a, b, out), (rest's a, b, out): views, no copies."""
    at = cut.at
    if cut.rows:
        return (a[:at], b, out[:at]), (a[at:], b, out[at:])
    return (a, b[:, :at], out[:, :at]), (a, b[:, at:], out[:, at:])


@dataclass(frozen=True)
class Recipe:
    """The band's `tma` recipe and the rest's `tma_split` recipe, for operands of given
    shapes and layouts."""

    cut: Cut
    band: matmul_tma.Recipe
    rest: matmul_tma_split.Recipe

    def launch(self, a, b, out, sa, sb) -> None:
        first, second = _views(self.cut, a, b, out)
        self.band.launch(*first, sa, sb)
        self.rest.launch(*second, sa, sb)

    def bind(self, a, b, out, sa, sb) -> Callable[[], None]:
        first, second = _views(self.cut, a, b, out)
        one = self.band.bind(*first, sa, sb)
        two = self.rest.bind(*second, sa, sb)

        def run() -> None:
            one()
            two()

        return run


def recipe(config: TileConfig, a, b, out, *, input_precision: str, is_fp32: bool,
           has_scale: bool):
    """The band and the rest's launches for tensors like these; the plain `tma` recipe
    where there is nothing to cut (`band`), or None when an operand or view cannot be
    described (matmul_tma.tma_form)."""
    flags = dict(input_precision=input_precision, is_fp32=is_fp32, has_scale=has_scale)
    M, N = a.shape[0], b.shape[1]
    programs = num_sms(a.device) * programs_per_sm(config, input_precision, is_fp32,
                                                   a.device)
    cut = band(M, N, config.block_m, config.block_n, programs)
    whole = dataclasses.replace(config, variant="tma", split_k=1)
    if cut is None:
        return matmul_tma.recipe(whole, a, b, out, **flags)
    first, second = _views(cut, a, b, out)
    one = matmul_tma.recipe(whole, *first, **flags)
    split = dataclasses.replace(config, variant="tma_split", occupancy=1)
    two = matmul_tma_split.recipe(split, *second, **flags)
    if one is None or two is None:
        return None
    return Recipe(cut, one, two)
