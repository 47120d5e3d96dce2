"""The report's figures (`gemmgate report`): plain typed data in, a matplotlib Figure out.

Pure: no file is read or written here (gemmgate/report_page.py collects the data and
saves the PNGs). Figures are built with the object API on an explicit Agg canvas, never
through pyplot, so drawing needs no display and sets no process-wide backend.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

DPI = 100
PROVIDERS = ("triton", "vendor", "reference")   # first, in this order; extras after them
COLOR = {"triton": "#1f77b4", "vendor": "#ff7f0e", "reference": "#2ca02c"}
SHAPE_MARK = {"triton": "o", "vendor": "s", "reference": "^"}
# extra providers (--providers: inductor, vendor_fast, module:function), in order of
# appearance: colours and markers none of the three above takes
_EXTRA_COLORS = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
_EXTRA_MARKS = ("D", "v", "P", "X", "*", "<")


@dataclass(frozen=True)
class Point:
    """One case of one run or baseline, as the figures need it."""
    mode: str
    m: int
    n: int
    k: int
    layout: str                       # "rr", "cr", "rr+p8", ...
    ratio: float | None               # vendor time / Triton time (> 1: Triton faster)
    tflops: dict[str, float] = field(default_factory=dict)   # per provider that ran
    errors: dict[str, float] = field(default_factory=dict)   # relative error (NaN, inf: not finite)
    failed: bool = False              # accuracy failure or downgrade
    in_bytes: int = 4
    out_bytes: int = 4
    failed_by: tuple[str, ...] = ()   # the providers that failed it (an extra's too)
    unsupported_by: tuple[str, ...] = ()   # the providers that could not run it

    @property
    def label(self) -> str:
        return f"{self.m}×{self.n}×{self.k}" + ("" if self.layout == "rr" else f" {self.layout}")

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def intensity(self) -> float | None:
        """FLOPs per byte moved at least once: (MK + KN) inputs, MN output."""
        moved = (self.m * self.k + self.k * self.n) * self.in_bytes \
            + self.m * self.n * self.out_bytes
        return self.flops / moved if self.flops and moved else None


@dataclass(frozen=True)
class HeatPanel:
    """The M×N grid of one K: ratio[i][j] for ms[i], ns[j]; None where no case ran or it
    has no ratio (an empty output); `held`: whether a case ran there."""
    k: int
    ms: tuple[int, ...]
    ns: tuple[int, ...]
    ratio: tuple[tuple[float | None, ...], ...]
    failed: tuple[tuple[bool, ...], ...]
    held: tuple[tuple[bool, ...], ...]


def heat_panels(points: Sequence[Point]) -> tuple[list[HeatPanel], list[Point]]:
    """Row-major unpadded cases as one M×N panel per K (the last of duplicate cases wins)
    and the other cases (other layouts, padded), which the page lists apart."""
    grid = {(p.k, p.m, p.n): p for p in points if p.layout == "rr"}
    panels = []
    for k in sorted({key[0] for key in grid}):
        ms = sorted({m for kk, m, _ in grid if kk == k})
        ns = sorted({n for kk, _, n in grid if kk == k})
        cell = [[grid.get((k, m, n)) for n in ns] for m in ms]
        panels.append(HeatPanel(k, tuple(ms), tuple(ns),
                                tuple(tuple(p.ratio if p else None for p in r) for r in cell),
                                tuple(tuple(bool(p and p.failed) for p in r) for r in cell),
                                tuple(tuple(p is not None for p in r) for r in cell)))
    return panels, [p for p in points if p.layout != "rr"]


def roofline_ceiling(intensity: float, peak_tflops: float | None,
                     mem_bw_gbs: float | None) -> float | None:
    """Attainable TFLOP/s at an arithmetic intensity: min(peak, intensity × bandwidth)."""
    roofs = [x for x in (peak_tflops, intensity * mem_bw_gbs / 1e3 if mem_bw_gbs else None)
             if x]
    return min(roofs) if roofs else None


F = TypeVar("F", bound=Callable)


def plain_text(draw: F) -> F:
    """`draw` with every `$` drawn as itself: a chip id or title from a run file holding
    `$...$` was read as math, and a malformed one stopped the report (a review)."""
    @functools.wraps(draw)
    def drawn(*args, **kwargs):
        with matplotlib.rc_context({"text.parse_math": False}):
            fig = draw(*args, **kwargs)
        _math_ticks(fig)
        return fig
    return drawn  # type: ignore[return-value]


def _math_ticks(fig) -> None:
    """Tick labels read as math again: a log axis's formatter writes them as mathtext
    (`$\\mathdefault{10^{-6}}$`) when the figure is saved, and the ticks made under
    `plain_text` drew that text raw (a review). A log axis's labels are numbers, never a
    run file's free text (a categorical axis may: only log axes are read so); new ticks
    copy these ones' properties."""
    if not isinstance(fig, Figure):
        return
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() != "log":
                continue
            for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks()):
                tick.label1.set_parse_math(True)
                tick.label2.set_parse_math(True)


def figure(width: float, height: float) -> Figure:
    """An empty figure of that size (inches at DPI) on its own Agg canvas."""
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _empty(ax, text: str) -> None:
    ax.set_axis_off()
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, wrap=True)


@plain_text
def heatmap(points: Sequence[Point], title: str) -> Figure:
    """Triton/vendor speed ratio over M×N, one panel per K; failed cases hatched, 'FAIL'."""
    panels, _ = heat_panels(points)
    cols = min(4, max(1, len(panels)))
    rows = max(1, math.ceil(len(panels) / cols))
    fig = figure(3.6 * cols + 1.2, 3.2 * rows + 0.6)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    fig.suptitle(f"{title}: vendor time / Triton time (> 1: Triton faster)")
    if not panels:
        _empty(axes[0], "no row-major unpadded cases: see the table of cases off the grid")
        return fig
    # the scale from the cases that passed: a failed one's ratio (a wrong, fast kernel at
    # 1000x) stretched it until every passing case read as parity (a review); a failed
    # cell, hatched and marked, takes the scale's end
    logs = [abs(math.log2(r)) for p in panels for row, bad in zip(p.ratio, p.failed)
            for r, b in zip(row, bad) if r and not b]
    lim = max([0.25, *logs])
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-lim, vmax=lim)
    image = None
    for ax, p in zip(axes, panels):
        data = [[math.log2(r) if r else math.nan for r in row] for row in p.ratio]
        image = ax.imshow(data, cmap="RdYlGn", norm=norm, origin="lower", aspect="auto")
        ax.set_xticks(range(len(p.ns)), [str(n) for n in p.ns], rotation=45)
        ax.set_yticks(range(len(p.ms)), [str(m) for m in p.ms])
        ax.set_xlabel("N")
        ax.set_ylabel("M")
        ax.set_title(f"K = {p.k}")
        for i, row in enumerate(p.ratio):
            for j, r in enumerate(row):
                bad = p.failed[i][j]
                if bad:
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="xx",
                                           edgecolor="black", linewidth=0, gid="failed"))
                # a case without a ratio (an empty output: nothing timed) "—"; no case
                # there, blank (both were "—", a review)
                text = ("FAIL\n" if bad else "") + (f"{r:.3g}" if r else
                                                     "—" if p.held[i][j] else "")
                ax.text(j, i, text, ha="center", va="center", fontsize=8,
                        fontweight="bold" if bad else "normal")
    for ax in axes[len(panels):]:
        ax.set_axis_off()
    bar = fig.colorbar(image, ax=list(axes[:len(panels)]), shrink=0.9)
    step = max(1, math.ceil(lim / 3))
    ticks = [t for t in range(-step * 3, step * 3 + 1, step) if abs(t) <= lim]
    if lim < 1:   # ratios within 0.5 to 2 (fp8 on an H100: 0.97 to 1.1): whole powers of
        # two left the bar one tick, "1", and its ends (0.84, 1.19) unsaid (a review)
        ticks = [f * lim for f in (-1, -0.5, 0, 0.5, 1)]
    bar.set_ticks(ticks, labels=[f"{2.0 ** t:.3g}" for t in ticks])
    bar.set_label("speed ratio (log scale)")
    return fig


def categorical_axis(ax, points: Sequence[Point]) -> None:
    ax.set_xticks(range(len(points)), [("✗ " if p.failed else "") + p.label for p in points],
                  rotation=45, ha="right", fontsize=8)
    for tick, p in zip(ax.get_xticklabels(), points):
        if p.failed:
            tick.set_color("red")


def _hatched(bars, points: Sequence[Point], name: str) -> None:
    """The bars of a provider that failed accuracy on their case hatched, red-edged: an
    extra's wrong result stood as its tallest bar, unmarked (a review)."""
    for bar, p in zip(bars, points):
        if name in p.failed_by:
            bar.set_hatch("//")
            bar.set_edgecolor("red")
            bar.set_gid("failed")


def providers_of(points: Sequence[Point], field: str = "tflops") -> list[str]:
    """Who has figures in these points: the three known first, then the extras."""
    seen = dict.fromkeys(n for p in points for n in getattr(p, field))
    return [n for n in PROVIDERS if n in seen] + [n for n in seen if n not in PROVIDERS]


def style_of(name: str, names: Sequence[str]) -> tuple[str, str]:
    """(colour, marker) of a provider: fixed for the three known, else by its place
    among the extras of `names`."""
    if name in COLOR:
        return COLOR[name], SHAPE_MARK[name]
    i = [n for n in names if n not in COLOR].index(name)
    return _EXTRA_COLORS[i % len(_EXTRA_COLORS)], _EXTRA_MARKS[i % len(_EXTRA_MARKS)]


def width_for(points: Sequence[Point]) -> float:
    return min(18.0, max(6.4, 0.45 * len(points) + 3))


@plain_text
def tflops_bars(points: Sequence[Point], title: str) -> Figure:
    """TFLOP/s per shape for every provider that ran (log scale)."""
    fig = figure(width_for(points), 4.6)
    ax = fig.subplots()
    names = providers_of(points)
    w = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        xs = [j + (i - (len(names) - 1) / 2) * w for j in range(len(points))]
        ys = [p.tflops.get(name, 0.0) for p in points]
        _hatched(ax.bar(xs, ys, w, label=name, color=style_of(name, names)[0]), points, name)
    categorical_axis(ax, points)
    if any(v > 0 for p in points for v in p.tflops.values()):
        ax.set_yscale("log")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"{title}: TFLOP/s per shape")
    ax.grid(axis="y", alpha=0.3)
    if names:
        ax.legend(fontsize=8)
    return fig


@plain_text
def peak_and_roofline(points: Sequence[Point], title: str, chip: str,
                      peak: float | None, mem_bw_gbs: float | None) -> Figure:
    """Left: % of the chip's datasheet peak per shape (left out without a peak). Right:
    the roofline, arithmetic intensity against TFLOP/s, under the compute (peak) and
    bandwidth ceilings."""
    names = providers_of(points)
    if not peak:
        fig = figure(6.4, 4.8)
        right = fig.subplots()
    else:
        fig = figure(max(12.0, width_for(points) + 5), 4.8)
        left, right = fig.subplots(1, 2, width_ratios=(1.4, 1))
        w = 0.8 / max(1, len(names))
        for i, name in enumerate(names):
            xs = [j + (i - (len(names) - 1) / 2) * w for j in range(len(points))]
            _hatched(left.bar(xs, [100 * p.tflops.get(name, 0.0) / peak for p in points], w,
                              label=name, color=style_of(name, names)[0]), points, name)
        categorical_axis(left, points)
        left.axhline(100, color="black", lw=0.8, ls="--")
        left.set_ylabel(f"% of {peak:g} TFLOP/s")
        if names:   # (a mode of empty outputs only: nothing to name, and
            left.legend(fontsize=8)   # matplotlib warned on stderr)
        left.set_title(f"{title}: % of peak")
    pts = [(p.intensity, p.tflops[n], n, n in p.failed_by) for p in points for n in names
           if p.intensity and p.tflops.get(n)]
    for name in names:
        xy = [(x, y) for x, y, n, bad in pts if n == name and not bad]
        color, mark = style_of(name, names)
        right.scatter([x for x, _ in xy], [y for _, y in xy], label=name, color=color,
                      marker=mark, zorder=3)
        # a provider's point where it failed accuracy hollow, red-edged, as its bar on
        # the left is hatched: it stood as any other point, a wrong answer's speed
        # unmarked under the ceiling (a review)
        bad = [(x, y) for x, y, n, b in pts if n == name and b]
        if bad:
            right.scatter([x for x, _ in bad], [y for _, y in bad], facecolors="none",
                          edgecolors="red", marker=mark, zorder=3, gid="failed",
                          label=f"{name}: failed accuracy")
    xs = [x for x, *_ in pts] or [1.0]
    lo, hi = min(xs) / 3, max(xs) * 3
    if mem_bw_gbs and peak:
        lo, hi = min(lo, peak * 1e3 / mem_bw_gbs / 10), max(hi, peak * 1e3 / mem_bw_gbs * 10)
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    if peak:
        right.plot([lo, hi], [peak, peak], "k--", lw=1, gid="compute-ceiling",
                   label=f"peak {peak:g} TFLOP/s")
    if mem_bw_gbs:
        right.plot(grid, [x * mem_bw_gbs / 1e3 for x in grid], ":", color="gray", lw=1,
                   gid="bandwidth-ceiling", label=f"memory {mem_bw_gbs:g} GB/s")
    if peak or mem_bw_gbs:
        right.plot(grid, [roofline_ceiling(x, peak, mem_bw_gbs) for x in grid], "k-", lw=2,
                   gid="roofline", alpha=0.6)
    else:
        right.text(0.02, 0.98, f"{chip}: no peak or bandwidth in the chip table", va="top",
                   transform=right.transAxes, fontsize=8)
    ys = [y for _, y, *_ in pts] or [1.0]
    right.set_ylim(min(ys) / 3, max([*ys, peak or 0]) * 3)
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("arithmetic intensity, FLOP/byte (2MNK / bytes moved)")
    right.set_ylabel("TFLOP/s")
    right.set_title(f"{title}: roofline")
    right.grid(alpha=0.3)
    if right.get_legend_handles_labels()[0]:
        right.legend(fontsize=8)
    return fig


@plain_text
def sweep_curve(param: str, values: Sequence[int], tflops: Sequence[float | None],
                status: Sequence[str], vendor_tflops: float | None, title: str) -> Figure:
    """`gemmgate sweep`: Triton TFLOP/s against one tile parameter's values (the rise and
    the collapse), the vendor's TFLOP/s as a horizontal line; failed values (invalid
    tile, compile or launch error, wrong result) as red crosses on the axis, values the
    kernel did not apply ('ignored') as hollow grey markers."""
    fig = figure(max(6.4, 0.6 * len(values) + 3), 4.4)
    ax = fig.subplots()
    xs = range(len(values))
    ok = [y if s == "ok" and y else math.nan for y, s in zip(tflops, status)]
    ax.plot(list(xs), ok, "-o", color=COLOR["triton"], label="triton", gid="triton",
            zorder=3)  # NaN: the line breaks where a value did not run
    ign = [(x, y) for x, y, s in zip(xs, tflops, status) if s == "ignored" and y]
    if ign:
        ax.scatter([x for x, _ in ign], [y for _, y in ign], facecolors="none",
                   edgecolors="gray", label="not applied by the kernel", gid="ignored")
    bad = [x for x, s in zip(xs, status) if s == "failed"]
    if bad:
        ax.scatter(bad, [0.0] * len(bad), marker="x", color="#d62728", s=80, zorder=4,
                   label="failed", gid="failed", clip_on=False)
    if vendor_tflops:
        ax.axhline(vendor_tflops, color=COLOR["vendor"], ls="--", gid="vendor",
                   label=f"vendor {vendor_tflops:.4g} TFLOP/s")
    ax.set_xticks(list(xs), [("✗ " if s == "failed" else "") + str(v)
                             for v, s in zip(values, status)])
    for tick, s in zip(ax.get_xticklabels(), status):
        if s == "failed":
            tick.set_color("red")
    top = max([y for y in tflops if y] + [vendor_tflops or 0.0, 1e-9])
    ax.set_ylim(0, top * 1.15)
    ax.set_xlim(-0.5, max(0, len(values) - 1) + 0.5)
    ax.set_xlabel(param)
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"{title}: TFLOP/s against {param}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig
