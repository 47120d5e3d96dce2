"""The report's comparison figures (`gemmgate report`): a chip's runs and baselines over
time, and chips side by side normalised to each one's datasheet peak. Plain data in, a
matplotlib Figure out, like gemmgate/plots.py (whose Point and canvas it uses).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from matplotlib.figure import Figure

from gemmgate import stats
from gemmgate.plots import Point, figure, plain_text


@dataclass(frozen=True)
class Series:
    """A run or baseline of one chip: what the history and cross-chip views compare."""
    label: str
    chip: str
    points: tuple[Point, ...]
    peaks: dict[str, float] = field(default_factory=dict)   # mode -> datasheet TFLOP/s


def geomean(xs: Sequence[float | None]) -> float:
    """The geomean of the values present (gemmgate.stats.geomean: NaN where none is)."""
    return stats.geomean([x for x in xs if x is not None])


NAMED_CASES = 5   # a history's thin lines named at their ends: the cases that moved
# most (by over 1%)


def _wrapped(label: str) -> str:
    """A series label ("chip kind YYYY-MM-DD HH:MM commit (file)") as three short lines."""
    words = label.split(" ")
    if len(words) < 5:
        return label
    return "\n".join((words[0], " ".join(words[1:4]), " ".join(words[4:])))


@plain_text
def history(series: Sequence[Series], mode: str, title: str) -> Figure:
    """A chip's runs and baselines in date order: the speed ratio and Triton TFLOP/s of
    every case (thin lines) and their geomean (bold) over the cases every one of them
    holds and passed (a geomean over each one's own cases moved with the shape set: one
    case left out moved it 15x, session 57)."""
    fig = figure(max(8.0, 1.6 * len(series) + 4), 4.8)
    axes = fig.subplots(1, 2)
    labels = sorted({p.label for s in series for p in s.points if p.mode == mode})
    common = set.intersection(*({p.label for p in s.points if p.mode == mode and not p.failed}
                                for s in series)) if series else set()
    for ax, what, get in ((axes[0], "speed ratio (vendor / Triton)", lambda p: p.ratio),
                          (axes[1], "Triton TFLOP/s", lambda p: p.tflops.get("triton"))):
        # a case that failed accuracy in a snapshot: no step of its line (a wrong answer's
        # speed is no figure, as cross-chip's), a red x at its value instead: joined, its
        # 1000x "speed-up" was the line's step and named as the case that moved most
        by = [{p.label: get(p) for p in s.points if p.mode == mode and not p.failed}
              for s in series]
        bad = [(i, get(p)) for i, s in enumerate(series) for p in s.points
               if p.mode == mode and p.failed and get(p)]
        if bad:
            ax.scatter([i for i, _ in bad], [y for _, y in bad], marker="x", color="#d62728",
                       zorder=4, label="failed accuracy (not joined)", gid="failed")
        moved = []
        for lab in labels:
            ys = [b.get(lab) or math.nan for b in by]
            (line,) = ax.plot(range(len(series)), ys, lw=0.8, marker=".", alpha=0.6)
            held_at = [(i, y) for i, y in enumerate(ys) if math.isfinite(y) and y > 0]
            change = abs(math.log(held_at[-1][1] / held_at[0][1])) if len(held_at) > 1 else 0
            if change > 0.01:
                moved.append((change, lab, held_at[-1], line.get_color()))
        # the common cases with this figure in every one (an empty output has no ratio:
        # counted in the legend, left out of the geomean; a review)
        held = sorted(lab for lab in common if all(b.get(lab) is not None for b in by))
        ax.plot(range(len(series)), [geomean([b[lab] for lab in held]) for b in by],
                "k-o", lw=2.5, label=f"geomean of the {len(held)} common cases",
                gid="geomean")
        # each label on three lines (chip; kind, date; commit or file): one line at 30
        # degrees ran past the first tick's left, and with two or three runs (a nightly:
        # the baseline and the night's run) the axes were squeezed under their own legend
        few = len(series) <= 3
        ax.set_xticks(range(len(series)), [_wrapped(s.label) for s in series], fontsize=7,
                      rotation=0 if few else 30, ha="center" if few else "right")
        ax.set_yscale("log")
        _name_ends(ax, sorted(moved, reverse=True)[:NAMED_CASES], len(series))
        ax.set_ylabel(what)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"{title}: history, {len(labels)} cases")
    return fig


def _name_ends(ax, named: list, steps: int, gap_pt: float = 7.0) -> None:
    """The cases that moved most named at their last point (unnamed, the thin lines could
    not say which shape went down; a review), each name at least `gap_pt` points above
    the one below it at the same step (log axis), and room on the right for them."""
    if not named:
        return
    ax.set_xlim(-0.3, steps - 1 + 0.7)
    lo, hi = (math.log(v) for v in ax.get_ylim())
    height = ax.get_window_extent().height * 72 / ax.figure.dpi   # the axes, in points
    below: dict[int, float] = {}
    for _, lab, (i, y), color in sorted(named, key=lambda t: (t[2][0], t[2][1])):
        at = (math.log(y) - lo) / ((hi - lo) or 1.0) * height
        shown = max(at, below.get(i, -math.inf) + gap_pt)
        below[i] = shown
        ax.annotate(lab, (i, y), xytext=(4, shown - at), textcoords="offset points",
                    fontsize=6, color=color, va="center", gid=f"named-{lab}")


@plain_text
def cross_chip(series: Sequence[Series], mode: str) -> Figure:
    """Chips side by side, normalised: Triton (filled) and vendor (hollow) % of each
    chip's datasheet peak against the case's GFLOP, and the speed ratio; cases that failed
    accuracy left out (a wrong answer's speed is no figure)."""
    fig = figure(13.0, 4.8)
    left, right = fig.subplots(1, 2)
    missing = []
    for i, s in enumerate(series):
        pts = [p for p in s.points if p.mode == mode and p.flops and not p.failed]
        color = f"C{i}"
        peak = s.peaks.get(mode)
        if peak:
            for name, face in (("triton", color), ("vendor", "none")):
                xy = [(p.flops / 1e9, 100 * p.tflops[name] / peak) for p in pts
                      if p.tflops.get(name)]
                left.scatter([x for x, _ in xy], [y for _, y in xy], facecolors=face,
                             edgecolors=color, label=f"{s.chip} {name}", gid=f"pct-{s.chip}")
        else:
            missing.append(s.chip)
        xy = [(p.flops / 1e9, p.ratio) for p in pts if p.ratio]
        right.scatter([x for x, _ in xy], [y for _, y in xy], color=color, label=s.label)
    left.set_title(f"{mode}: % of each chip's datasheet peak")
    if missing:
        left.text(0.02, 0.98, "no datasheet peak: " + ", ".join(missing), va="top",
                  transform=left.transAxes, fontsize=8)
    right.axhline(1.0, color="black", lw=0.8, ls="--")
    right.set_title(f"{mode}: speed ratio vendor / Triton (> 1: Triton faster)")
    for ax, ylabel in ((left, "% of peak"), (right, "speed ratio")):
        ax.set_xscale("log")
        ax.set_xlabel("GFLOP per case (2MNK / 1e9)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    right.set_yscale("log")
    return fig
