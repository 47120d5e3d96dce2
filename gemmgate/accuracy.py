"""Accuracy verdicts: relative Frobenius error against float64, bound and downgrade band.

error = ||C - C_ref||_F / ||C_ref||_F. NaN/Inf anywhere fails. An error under the 1e-2
bound but above the mode's `max_error` is "downgraded": the numbers look like a lower
precision than the mode promises (see gemmgate/precision.py for the bands).

The whole output's error dilutes a fault in a few rows or columns (a tail tile on another
path): 8 rows of 4096 in tf32 inside an fp32 result give a whole error of 1.3e-5, under
fp32's 2e-5, and one wrong row of 65,536 in bf16 gives 3.9e-3, under the bound. So C is
also cut into blocks of whole rows and of whole columns, each at least `BLOCK_ELEMENTS`
elements (fewer only where C is smaller; the last block ends at C's edge, overlapping the
one before), and the worst block's own relative error must
stay under the bound, and under `BLOCK_SLACK` x the mode's band (or the mode's own
`block_max_error`: tf32's, fp16's and tf32x3's kernels' is the band itself, where a
block of the downgrade each band is there for passed twice it).
On random normal inputs the worst block measured at most 1.13x the whole (CPU, every mode
emulated, 11 shapes from 2x2x2 to 4097x4097x257 and 1x4096x4096), so the slack of 2 leaves
room (tf32 at K = 1: 1.76x, a row's error being its one element of A's rounding).
Where the output is 16-bit (bf16, fp16) and the inputs are exact on the tensor cores, the
error the sum itself made shows apart from the output's rounding: the output against the
reference rounded to its dtype (`Errors.excess`). fp32 sums rounded to nearest leave <= 1e-4
of it (CPU, K 64 to 61,440); partial sums kept to 13 bits leave >= 2.5e-4 at any K, where
the whole error moves by a few percent; an fp32 sum that truncates (as tensor cores have
been measured to) leaves 3.5e-4 at K = 11,008 in a simulation. A mode's `max_excess`
bounds it where the device's honest figure is known to sit well apart from a downgrade's:
bf16's (gemmgate/precision.py).
A product of few elements can cancel: a 1 x 1 x K output is one sum whose size is a
matter of chance, and an honest fp32 error relative to it passed fp32's band 96-98% of
the time (CPU, 200 seeds, K 4,096 and 65,536; in the harness's own seeds 1x1x8976 failed
every run). So no denominator is below `FLOOR`^2 of the size such a product has on the
harness's inputs (independent, zero-mean: ||A||^2 ||B||^2 / K, `GemmInputs.scale2`; a
block its share of it). Outputs of more than a few elements never meet the floor (their
norm concentrates at 1/FLOOR^2 = 4x above it); tf32 on 1 x 1 x 4,096 is still caught as
downgraded 95% of the time, as before.
`classify` is pure; `errors` and `relative_error` are the only torch code here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gemmgate.precision import PrecisionMode

PASS, FAIL, DOWNGRADED = "pass", "fail", "downgraded"
BLOCK_ELEMENTS = 4096
TILE = 64   # 2-D blocks: TILE x TILE (BLOCK_ELEMENTS), where M and N are TILE or more
BLOCK_SLACK = 2.0
# One element's error over a typical element's size (the RMS of the reference, never below
# the floor's): a block of 4,096 elements dilutes one wrong element 64-fold, so a corner
# element off by 60% of a typical one (a split-K partial lost) passed bf16 and fp8 at
# 2048^2 (a review). Honest outputs stay far below: bf16's rounding is at most 2^-9 of an
# element (~0.012 of a typical one at 6 sigma), fp8's fast accumulation at the edge of its
# band ~0.06 (CPU model, 11 bits, K = 28,672).
ELEMENT_SLACK = 25.0   # x the mode's bound: 0.25 of a typical element
FLOOR = 0.5   # of a typical product's norm: the least a denominator is (see above)


@dataclass(frozen=True)
class Errors:
    """An output's relative error, whole and in its worst block of rows or columns."""

    whole: float
    block: float = 0.0
    where: str = ""      # e.g. "rows 8-15 of 4096"
    excess: float | None = None   # beyond the output's own rounding (16-bit outputs)
    block_excess: float | None = None   # the same in its worst block (recorded, not
    excess_where: str = ""              # judged: docs/PERF.md, session 70)
    nonfinite: bool = False   # the output holds a NaN or an Inf
    element: float = 0.0      # the worst element's error over a typical element's size
    element_where: str = ""   # e.g. "element (4095, 4095)"


@dataclass(frozen=True)
class Accuracy:
    error: float
    status: str          # pass | fail | downgraded
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == PASS


def classify(error: float | Errors, mode: PrecisionMode) -> Accuracy:
    """The verdict on an output's error (a float: the whole output's alone)."""
    e = error if isinstance(error, Errors) else Errors(error,
                                                        nonfinite=not math.isfinite(error))
    err = e.whole
    if not math.isfinite(err):   # else a finite output, nonzero where the product is zero
        return Accuracy(err, FAIL, "NaN/Inf in the output" if e.nonfinite
                        else "a nonzero output where the product is zero")
    if err > mode.bound:
        return Accuracy(err, FAIL, f"error {err:.2e} > bound {mode.bound:.0e}")
    if e.block > mode.bound:
        return Accuracy(err, FAIL, f"error {e.block:.2e} in {e.where} > bound "
                        f"{mode.bound:.0e} (the whole output's {err:.2e})")
    if e.element > ELEMENT_SLACK * mode.bound:
        return Accuracy(err, FAIL, f"{e.element_where} off by {e.element:.2f} x a typical "
                        f"element's size > {ELEMENT_SLACK * mode.bound:g} (the whole "
                        f"output's error {err:.2e})")
    if err > mode.max_error:
        return Accuracy(err, DOWNGRADED,
                        f"precision downgraded: error {err:.2e} > {_band(mode.max_error)} "
                        f"expected of {mode.name}; looks like {mode.downgrade_hint}")
    if mode.max_excess is not None and e.excess is not None and e.excess > mode.max_excess:
        return Accuracy(err, DOWNGRADED,
                        f"accumulated below fp32: error {e.excess:.2e} beyond the output's "
                        f"own rounding > {_band(mode.max_excess)} (the whole output's "
                        f"{err:.2e})")
    own = mode.block_max_error   # (tf32, fp16: the band itself; a downgraded tile passed 2x)
    if e.block > (BLOCK_SLACK * mode.max_error if own is None else own):
        band = f"{BLOCK_SLACK:g} x {_band(mode.max_error)}" if own is None else _band(own)
        return Accuracy(err, DOWNGRADED,
                        f"precision downgraded in {e.where}: error {e.block:.2e} there > "
                        f"{band} expected of {mode.name} "
                        f"(the whole output's {err:.2e}); looks like {mode.downgrade_hint}")
    return Accuracy(err, PASS)


def _band(x: float) -> str:
    """A band as its figure is: one digit where that is exact (2e-05), else two (tf32's
    1.5e-03 was shown "2e-03": "error 1.70e-03 > 2e-03", a review)."""
    one = f"{x:.0e}"
    return one if float(one) == x else f"{x:.1e}"


def past_range(ref, output_dtype: str) -> float | None:
    """The reference's largest magnitude where an honest output of `output_dtype` cannot
    hold it (it rounds to inf: fp16 past 65,504 and half its last step), else None. Such
    a case's every output is "NaN/Inf", a verdict on the inputs, not on the kernels."""
    import torch

    dtype = getattr(torch, output_dtype)
    if not ref.numel() or dtype not in (torch.float16, torch.bfloat16):
        return None
    low, high = torch.aminmax(ref)   # (no full-size |ref| made: the reference is float64)
    top = max(-float(low), float(high))
    big = torch.finfo(dtype).max
    ulp = 2.0 ** (math.floor(math.log2(big)) - (10 if dtype == torch.float16 else 7))
    return top if top >= big + ulp / 2 else None   # (from there it rounds to inf)


def relative_error(out, ref) -> float:
    """||out - ref||_F / ||ref||_F in float64; inf for NaN/Inf; 0/0 (empty or K=0) is 0."""
    return errors(out, ref).whole


def _ratio(diff2: float, ref2: float) -> float:
    if ref2 == 0.0:
        return 0.0 if diff2 == 0.0 else math.inf
    return math.sqrt(diff2 / ref2)


# One provider's excess against another's on the same inputs: above both, its sum kept
# less than the other's (`kept_less`). Shown as a note; judged only in a mode with a
# `kept_less_floor` (fp16: judging.judge_kept_less): the tensor cores' own fp32 sums may
# truncate, but both sides' alike.
EXCESS_RATIO = 3.0
EXCESS_FLOOR = 1e-4


def kept_less(mine: float | None, theirs: float | None, floor: float = EXCESS_FLOOR) -> bool:
    """Whether an output's excess over its rounding (`Errors.excess`) says its sum kept
    less precision than another's on the same inputs did."""
    if mine is None or theirs is None or not math.isfinite(theirs):
        return False
    return mine > floor and mine > EXCESS_RATIO * theirs


CHUNK_ELEMENTS = 1 << 24   # rows at a time: float64 temporaries stay ~0.7 GB a chunk


def errors(out, ref, scale2: float = 0.0) -> Errors:
    """The whole output's relative error and, for a 2-D output, its worst block's: runs of
    whole rows, and of whole columns, of at least BLOCK_ELEMENTS elements each, and TILE x
    TILE tiles (on a grid whose last row and column of tiles end at C's edges): a bad
    tile (a split-K fix-up, a stream-K tail) was diluted in whole rows, 32 x 32 of tf32 in
    a 4096^2 fp32 output showing at 3.4e-5 under the 4e-5 threshold (a review, session
    67; honest outputs' worst tile is 1.00-1.07x the whole, every mode emulated on the
    CPU over 8 shapes up to 4097 x 1000 x 257 and 64 x 64 x 65536). Computed
    a chunk of rows at a time (the float64 squares of a 16384 x 16384 output are 2 GiB
    each), keeping each row's and each column's sums. `scale2`: a typical product's
    squared norm for these operands; no denominator is below FLOOR^2 of it (its share)."""
    import torch

    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"output shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
    if not bool(torch.isfinite(out).all()):   # (its worst element: not 0.0, "no error",
        return Errors(math.inf, nonfinite=True, element=math.inf)   # in its run file; a review)
    if out.dim() != 2:
        out, ref = out.reshape(1, -1), ref.reshape(1, -1)
    dtype, (m, n) = out.dtype, out.shape
    rounded = dtype in (torch.bfloat16, torch.float16)
    f64 = dict(dtype=torch.float64, device=out.device)
    big = torch.finfo(dtype).max if rounded else 0.0   # past the type's range: its largest
    step = max(1, CHUNK_ELEMENTS // max(n, 1))
    tile_cols = _starts(n, TILE, out.device) if m >= TILE and n >= TILE else None
    sums = _Sums(m, n, tile_cols, f64)                         # the error's squares
    owns = _Sums(m, n, tile_cols, f64) if rounded else None    # the sum's own error's
    worst_d2, worst_at = 0.0, 0
    for lo in range(0, m, step):
        o, r = out[lo:lo + step].double(), ref[lo:lo + step].double()
        r2, d2 = r.square(), (o - r).square()
        sums.add(lo, d2, r2)
        if d2.numel():   # (the worst element: its flat index, row-major, in C)
            flat = d2.reshape(-1)
            i = int(flat.argmax())
            if float(flat[i]) > worst_d2:
                worst_d2, worst_at = float(flat[i]), lo * n + i
        if owns is not None:   # the reference rounded as the output was: what is left is
            # the sum's own error
            owns.add(lo, (o - r.to(dtype).double().clamp(-big, big)).square(), r2)
    floor2 = FLOOR * FLOOR * max(scale2, 0.0)
    ref2 = max(float(sums.row_r.sum()), floor2)
    whole = _ratio(float(sums.row_d.sum()), ref2)
    excess = _ratio(float(owns.row_d.sum()), ref2) if owns is not None else None
    if not out.numel():
        return Errors(whole, excess=excess)
    element = _ratio(worst_d2 * out.numel(), ref2)   # over the typical element's size
    spot = dict(element=element, element_where=f"element ({worst_at // n}, {worst_at % n})")
    block, where = sums.worst(floor2)
    if owns is None:
        return Errors(whole, block, where, excess, **spot)
    return Errors(whole, block, where, excess, *owns.worst(floor2), **spot)


class _Sums:
    """One squared quantity's sums over each row, each column and each row's stretch of
    each column of TILE x TILE tiles, with the reference's squares beside them, from which
    `worst` finds the worst block of rows, of columns or tile."""

    def __init__(self, m: int, n: int, tile_cols, f64: dict) -> None:
        import torch

        self.m, self.n, self.tile_cols = m, n, tile_cols
        self.row_d, self.row_r = torch.zeros(m, **f64), torch.zeros(m, **f64)
        self.col_d, self.col_r = torch.zeros(n, **f64), torch.zeros(n, **f64)
        if tile_cols is not None:   # each row's sums over each column of tiles
            self.row_td = torch.zeros(m, tile_cols.numel(), **f64)
            self.row_tr = torch.zeros(m, tile_cols.numel(), **f64)

    def add(self, lo: int, d2, r2) -> None:
        """Rows lo.. of the quantity's squares `d2` and the reference's `r2`."""
        hi = lo + d2.shape[0]
        self.row_d[lo:hi], self.row_r[lo:hi] = d2.sum(1), r2.sum(1)
        if self.tile_cols is not None:
            self.row_td[lo:hi] = _windows(d2, self.tile_cols, TILE, 1)
            self.row_tr[lo:hi] = _windows(r2, self.tile_cols, TILE, 1)
        self.col_d += d2.sum(0)
        self.col_r += r2.sum(0)

    def worst(self, floor2: float) -> tuple[float, str]:
        """(relative size, where) of the worst block: runs of whole rows, and of whole
        columns, of at least BLOCK_ELEMENTS elements each, and the tiles."""
        m, n, best, where = self.m, self.n, 0.0, ""
        for ds, rs, other, name in ((self.row_d, self.row_r, n, "rows"),
                                    (self.col_d, self.col_r, m, "columns")):
            count = ds.numel()
            width = min(count, -(-BLOCK_ELEMENTS // other))   # lines a block, ceil
            starts = _starts(count, width, ds.device)         # the last ends at the edge
            i, err = _worst(_windows(ds, starts, width, 0), _windows(rs, starts, width, 0),
                            floor2 * width / count)
            if err > best:
                lo = int(starts[i])
                best, where = err, f"{name} {lo}-{lo + width - 1} of {count}"
        if self.tile_cols is not None:
            cols = self.tile_cols
            tile_rows = _starts(m, TILE, cols.device)
            i, err = _worst(_windows(self.row_td, tile_rows, TILE, 0),
                            _windows(self.row_tr, tile_rows, TILE, 0),
                            floor2 * TILE * TILE / (m * n))
            if err > best:
                r0, c0 = int(tile_rows[i // cols.numel()]), int(cols[i % cols.numel()])
                best, where = err, (f"the tile of rows {r0}-{r0 + TILE - 1}, "
                                    f"columns {c0}-{c0 + TILE - 1}")
        return best, where


def _worst(bd, br, floor2: float) -> tuple[int, float]:
    """(flat index, relative error) of the worst block, of blocks' squared error sums `bd`
    and squared reference sums `br` (no reference sum below `floor2`)."""
    import torch

    bd, br = bd.clamp_min(0.0), br.clamp_min(floor2)
    ratio = torch.where(br > 0, bd / br.clamp_min(torch.finfo(torch.float64).tiny),
                        torch.where(bd > 0, math.inf, 0.0)).flatten()
    i = int(ratio.argmax())
    return i, math.sqrt(float(ratio[i]))


def _starts(count: int, width: int, device):
    """Window starts every `width` along `count`, the last ending at the edge."""
    import torch

    return torch.arange(0, count, width, device=device).clamp_max(count - width)


def _windows(x, starts, width: int, dim: int):
    """Sums of `x` over windows [s, s + width) along `dim`, one per start."""
    import torch

    c = torch.cumsum(x, dim)
    zero = torch.zeros_like(c.narrow(dim, 0, 1))
    c = torch.cat([zero, c], dim)
    return c.index_select(dim, starts + width) - c.index_select(dim, starts)
