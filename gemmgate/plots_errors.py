"""The report's error figure (`gemmgate report`): each provider's relative error per
case over its mode's bands (expected, downgraded, fail). Pure, as gemmgate/plots.py, whose
canvas and case styles it shares."""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.figure import Figure

from gemmgate.plots import (
    Point,
    categorical_axis,
    figure,
    plain_text,
    providers_of,
    style_of,
    width_for,
)
from gemmgate.precision import ERROR_BOUND, MODES, band_for


def error_band(error: float | None, mode: str, provider: str = "vendor") -> str | None:
    """Where `provider`'s error falls: "expected" (<= its band: the mode's max_error, the
    kernels' own in tf32x3, `precision.band_for`), "downgraded" (above it, under the bound:
    a lower precision ran) or "fail" (above the 1e-2 bound, NaN/Inf)."""
    if error is None:
        return None
    if not math.isfinite(error) or error > MODES[mode].bound:
        return "fail"
    return "expected" if error <= band_for(MODES[mode], provider).max_error else "downgraded"



BAND_COLOR = {"expected": "#2ca02c", "downgraded": "#ff9f1c", "fail": "#d62728"}


@plain_text
def error_bands(points: Sequence[Point], mode: str, title: str) -> Figure:
    """Relative errors per shape and provider (log scale) over the mode's bands: expected
    (<= max_error), downgraded (a lower precision ran), fail (> 1e-2, NaN/Inf plotted at
    the top). A silent downgrade is a point in the middle band."""
    m = MODES[mode]
    fig = figure(width_for(points) + 2, 4.6)   # (+ its legend beside the axes)
    ax = fig.subplots()
    finite = [e for p in points for e in p.errors.values() if math.isfinite(e) and e > 0]
    bottom = min([m.max_error / 1e4, *(e / 10 for e in finite)])
    top = 1.0
    ax.axhspan(bottom, m.max_error, color=BAND_COLOR["expected"], alpha=0.12,
               label=f"expected ≤ {m.max_error:g}")
    ax.axhspan(m.max_error, ERROR_BOUND, color=BAND_COLOR["downgraded"], alpha=0.15,
               label=f"downgraded ({m.downgrade_hint})")
    ax.axhspan(ERROR_BOUND, top, color=BAND_COLOR["fail"], alpha=0.12,
               label=f"fail > {ERROR_BOUND:g}")
    if m.kernel_max_error is not None:   # tf32x3: the kernels' side has its own band
        ax.axhline(m.kernel_max_error, color=BAND_COLOR["downgraded"], linestyle="--",
                   linewidth=1, label=f"the kernels' band ≤ {m.kernel_max_error:g}")
    names = providers_of(points, "errors")
    for i, name in enumerate(names):  # side by side: equal errors stay visible
        dx = (i - (len(names) - 1) / 2) * 0.18
        xy = [(j + dx, p.errors[name]) for j, p in enumerate(points) if name in p.errors]
        ys = [min(max(e, bottom * 1.5), top * 0.8) if math.isfinite(e) else top * 0.8
              for _, e in xy]  # 0 at the bottom, NaN/Inf at the top
        color, mark = style_of(name, names)
        # a point outside its own band ringed in that band's colour: the shading is the
        # vendor's band, and tf32x3's kernels are held to a narrower one (3e-6 against
        # 1e-5), so a kernel's downgrade could sit in the green unmarked
        bands = [error_band(e, mode, name) for _, e in xy]
        ax.scatter([j for j, _ in xy], ys, color=color, marker=mark, label=name, zorder=3,
                   edgecolor=[BAND_COLOR[b] if b != "expected" else "black" for b in bands],
                   linewidth=[1.8 if b != "expected" else 0.5 for b in bands],
                   gid=f"errors-{name}")
        for (x, e), y in zip(xy, ys):   # drawn at an edge: the figure says what it is (an
            # error of 0 read as ~1e-9; a review), and so does one over the top's 0.8 (a
            # failing extra's 15 was drawn as 0.8, unlabelled)
            if e == 0 or not math.isfinite(e) or e > y:
                text = "0" if e == 0 else str(e) if not math.isfinite(e) else f"{e:.2g}"
                ax.annotate(text, (x, y), xytext=(0, 7 if e == 0 else -8),   # inside the
                            # axes: above the bottom, below the top (7 pt above the top ran
                            # into the title; a review)
                            textcoords="offset points", fontsize=6, ha="center",
                            va="center", gid=f"edge-{name}")
    categorical_axis(ax, points)
    ax.set_yscale("log")
    ax.set_ylim(bottom, top)
    ax.set_xlim(-0.7, max(0, len(points) - 1) + 0.7)
    ax.set_ylabel("relative error vs float64")
    ax.set_title(f"{title}: errors against the bound and the {mode} band")
    # beside the axes, never over them: inside, at the upper left, it covered the fail
    # band of the first cases (the smallest), and a failing error there was hidden
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return fig
