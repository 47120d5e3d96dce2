"""gemmgate/plots.py, plots_errors.py and plots_history.py: the data functions that
decide what a figure shows (heat-map grid and failure marks, error bands, roofline
ceilings, intensity), and that each figure function draws from plain data without a
display. No pixels compared."""

import io
import math

import pytest
from matplotlib.patches import Rectangle

from gemmgate import plots, plots_errors, plots_history
from gemmgate.chips import CHIPS
from gemmgate.plots import Point
from gemmgate.plots_history import Series


def _pt(m, n, k, ratio=1.0, layout="rr", failed=False, mode="fp32", **kw) -> Point:
    tf = kw.pop("tflops", {"triton": 1.0 * ratio, "vendor": 1.0})
    errs = kw.pop("errors", {"triton": 1e-7, "vendor": 2e-7})
    return Point(mode, m, n, k, layout, ratio, tf, errs, failed, **kw)


POINTS = [_pt(64, 64, 64, 1.2), _pt(64, 128, 64, 0.8, failed=True), _pt(128, 64, 64, 1.0),
          _pt(64, 64, 32, 2.0), _pt(64, 32, 96, 0.5, layout="cr"),
          _pt(32, 64, 48, 0.9, layout="rr+p5")]


def _png_size(fig) -> tuple[int, int]:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=plots.DPI)
    data = buf.getvalue()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_heat_panels_one_per_k_with_the_failed_case_marked_and_other_layouts_apart():
    panels, off = plots.heat_panels(POINTS)
    assert [p.k for p in panels] == [32, 64]
    k64 = panels[1]
    assert k64.ms == (64, 128) and k64.ns == (64, 128)
    assert k64.ratio == ((1.2, 0.8), (1.0, None))          # 128x128 was not run
    assert k64.failed == ((False, True), (False, False))    # only 64x128x64 failed
    assert panels[0].ratio == ((2.0,),) and panels[0].failed == ((False,),)
    assert [p.layout for p in off] == ["cr", "rr+p5"]


def test_heatmap_hatches_exactly_the_failed_cells():
    fig = plots.heatmap(POINTS, "cpu fp32")
    marks = [a for ax in fig.axes for a in ax.patches
             if isinstance(a, Rectangle) and a.get_gid() == "failed"]
    assert len(marks) == 1 and marks[0].get_hatch() == "xx"
    assert marks[0].get_xy() == (0.5, -0.5)                 # column N=128, row M=64
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "FAIL\n0.8" in texts and "" in texts and "—" not in texts   # 128x128: not run
    assert [ax.get_title() for ax in fig.axes[:2]] == ["K = 32", "K = 64"]
    # a case there without a ratio (an empty output) is "—", told from a cell not run
    fig = plots.heatmap([*POINTS, Point("fp32", 128, 128, 64, "rr", None, {}, {}, False)],
                        "cpu fp32")
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "—" in texts and "" not in texts
    _png_size(fig)


def test_a_failed_cases_ratio_does_not_stretch_the_heatmaps_scale():
    """A wrong, fast kernel at 1000x stretched the colour scale to 2^-10..2^10, and every
    passing case (0.8 to 1.25) read as parity (a review): the scale is the passing
    cases'."""
    pts = [_pt(64, 64, 64, 1.25), _pt(64, 128, 64, 0.8), _pt(128, 64, 64, 1000.0, failed=True)]
    image = plots.heatmap(pts, "x").axes[0].images[0]
    assert image.norm.vmax == pytest.approx(max(0.25, math.log2(1.25)))


def test_a_nan_error_is_labelled_nan_on_the_page():
    """point_of_result turned a NaN error into inf, and the error figure labelled it "inf"
    (a review)."""
    from gemmgate.report_sources import point_of_result
    from gemmgate.results import CaseResult, ProviderResult
    from gemmgate.shapes import Case

    r = CaseResult("fp32", Case(8, 8, 8), {
        "triton": ProviderResult("triton", "fail", math.nan, "NaN/Inf in the output"),
        "vendor": ProviderResult("vendor", "pass", 1e-7)})
    pt = point_of_result(r)
    assert math.isnan(pt.errors["triton"])
    texts = [t.get_text() for t in plots_errors.error_bands([pt], "fp32", "x").axes[0].texts]
    assert "nan" in texts


def test_the_edge_labels_stay_inside_the_axes():
    """A NaN/Inf or over-the-top error is drawn at the top and labelled; its label was
    set 7 pt above the point, over the figure's title (a review). Each label's box lies
    within the axes, at the top as at the bottom (an error of 0)."""
    from gemmgate.report_sources import point_of_result
    from gemmgate.results import CaseResult, ProviderResult
    from gemmgate.shapes import Case

    r = CaseResult("fp32", Case(8, 8, 8), {
        "triton": ProviderResult("triton", "fail", math.nan, "NaN/Inf in the output"),
        "vendor": ProviderResult("vendor", "pass", 0.0),
        "x:y": ProviderResult("x:y", "fail", 15.0)})
    fig = plots_errors.error_bands([point_of_result(r)], "fp32", "x")
    fig.canvas.draw()
    ax = fig.axes[0]
    box = ax.get_window_extent()
    texts = [t for t in ax.texts if t.get_gid() and t.get_gid().startswith("edge-")]
    assert sorted(t.get_text() for t in texts) == ["0", "15", "nan"]
    for t in texts:
        b = t.get_window_extent()
        assert box.y0 <= b.y0 and b.y1 <= box.y1, (t.get_text(), b, box)


def test_heatmap_without_grid_cases_still_draws():
    fig = plots.heatmap([_pt(64, 32, 96, layout="cr")], "x")
    assert "no row-major" in fig.axes[0].texts[0].get_text()


@pytest.mark.parametrize("error,mode,band", [
    (1e-7, "fp32", "expected"), (3e-4, "fp32", "downgraded"),   # fp32 that ran as tf32
    (3e-3, "fp16", "downgraded"), (2e-3, "bf16", "expected"),
    (0.05, "bf16", "fail"), (math.inf, "fp32", "fail"), (None, "fp32", None)])
def test_error_band_puts_a_downgrade_in_the_middle_band(error, mode, band):
    assert plots_errors.error_band(error, mode) == band


def test_tf32x3_s_kernels_have_their_own_band_and_the_vendor_fp32_s():
    """bf16x3 (4.4e-6) under tf32x3's 1e-5: the kernels' side is judged at 3e-6, the
    vendor's IEEE fp32 at 1e-5 (precision.band_for)."""
    assert plots_errors.error_band(4.4e-6, "tf32x3", "triton") == "downgraded"
    assert plots_errors.error_band(4.4e-6, "tf32x3", "vendor") == "expected"
    assert plots_errors.error_band(3.6e-7, "tf32x3", "triton") == "expected"


def test_an_error_drawn_at_an_edge_says_what_it_is():
    """0 (an empty output, K = 0) is drawn at the axis' bottom and NaN/inf at its top: each
    is labelled (a 0 read as ~1e-9, a review); other errors are not."""
    pts = [_pt(8, 8, 0, errors={"triton": 0.0, "vendor": 1e-7}),
           _pt(8, 8, 8, errors={"triton": math.nan, "vendor": math.inf})]
    texts = [t.get_text() for t in plots_errors.error_bands(pts, "fp32", "x").axes[0].texts]
    assert sorted(texts) == ["0", "inf", "nan"]


def test_error_figure_draws_the_bound_and_the_modes_band():
    pts = [_pt(64, 64, 64, errors={"triton": 3e-4, "vendor": 1e-7}),
           _pt(48, 80, 72, errors={"triton": math.inf, "vendor": 0.0})]
    fig = plots_errors.error_bands(pts, "fp32", "cpu fp32")
    ax = fig.axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert "expected ≤ 2e-05" in labels and "fail > 0.01" in labels
    assert any(lab.startswith("downgraded") for lab in labels)
    lo, hi = ax.get_ylim()
    assert lo < 2e-5 and hi == 1.0 and ax.get_yscale() == "log"
    ys = [y for c in ax.collections for _, y in c.get_offsets()]
    assert all(lo <= y < hi for y in ys)                    # inf and 0 are drawn in range
    _png_size(fig)


def test_intensity_is_flops_over_bytes_moved():
    p = _pt(64, 32, 96, in_bytes=2, out_bytes=2)
    assert p.intensity == pytest.approx(2 * 64 * 32 * 96 / ((64 * 96 + 96 * 32) * 2 + 64 * 32 * 2))
    assert _pt(0, 8, 8).intensity is None


def test_roofline_ceiling_is_the_lower_of_compute_and_bandwidth():
    h200 = CHIPS["nvidia-h200"]
    peak, bw = h200.peak("bf16"), h200.mem_bw_gbs
    ridge = peak * 1e3 / bw
    assert plots.roofline_ceiling(ridge / 10, peak, bw) == pytest.approx(ridge / 10 * bw / 1e3)
    assert plots.roofline_ceiling(ridge * 10, peak, bw) == peak
    assert plots.roofline_ceiling(5.0, None, None) is None
    assert plots.roofline_ceiling(5.0, None, bw) == pytest.approx(5.0 * bw / 1e3)


def test_roofline_figure_draws_the_chip_ceilings():
    h200 = CHIPS["nvidia-h200"]
    peak, bw = h200.peak("bf16"), h200.mem_bw_gbs
    pts = [_pt(4096, 4096, 4096, mode="bf16", in_bytes=2, out_bytes=2,
               tflops={"triton": 700.0, "vendor": 720.0, "reference": 690.0})]
    fig = plots.peak_and_roofline(pts, "h200 bf16", "nvidia-h200", peak, bw)
    left, right = fig.axes
    lines = {ln.get_gid(): ln for ln in right.lines}
    assert set(lines["compute-ceiling"].get_ydata()) == {peak}
    x, y = lines["bandwidth-ceiling"].get_data()
    assert y[0] == pytest.approx(x[0] * bw / 1e3)
    assert max(lines["roofline"].get_ydata()) == pytest.approx(peak)
    heights = sorted(round(b.get_height(), 3) for b in left.patches)
    assert heights == sorted(round(100 * t / peak, 3) for t in (700.0, 720.0, 690.0))
    _png_size(fig)


def test_roofline_without_chip_figures_says_so():
    fig = plots.peak_and_roofline([_pt(64, 64, 64)], "cpu fp32", "cpu", None, None)
    (ax,) = fig.axes                                         # no % of peak panel
    assert [t.get_text() for t in ax.texts] == ["cpu: no peak or bandwidth in the chip table"]
    assert not [ln for ln in ax.lines if ln.get_gid()] and len(ax.collections) == 2


def test_tflops_bars_one_series_per_provider_that_ran():
    pts = [_pt(64, 64, 64, tflops={"triton": 1.0, "vendor": 2.0, "reference": 1.1}),
           _pt(48, 80, 72, tflops={"triton": 1.5, "vendor": 2.5})]
    fig = plots.tflops_bars(pts, "cpu fp32")
    ax = fig.axes[0]
    assert ax.get_legend_handles_labels()[1] == ["triton", "vendor", "reference"]
    assert len(ax.patches) == 6 and ax.get_yscale() == "log"


def test_a_providers_bars_where_it_failed_accuracy_are_hatched():
    """An extra's wrong result stood as its tallest bar, unmarked (a review)."""
    tf = {"triton": 1.0, "vendor": 2.0, "mod:bad": 9.0}
    pts = [_pt(64, 64, 64, tflops=tf, failed_by=("mod:bad",)), _pt(48, 80, 72, tflops=tf)]
    for fig in (plots.tflops_bars(pts, "cpu fp32"),
                plots.peak_and_roofline(pts, "cpu fp32", "cpu", 10.0, 100.0)):
        bars = [b for b in fig.axes[0].patches if isinstance(b, Rectangle)]
        assert [b.get_hatch() for b in bars] == [None] * 4 + ["//", None], fig


def test_extra_providers_get_bars_points_and_colours_of_their_own():
    """--providers extras (inductor, vendor_fast, module:function) were left out of every
    figure; they come after the three known, each in a colour none of those takes."""
    pts = [_pt(64, 64, 64, tflops={"triton": 1.0, "vendor": 2.0, "inductor": 1.2,
                                   "vendor_fast": 2.4},
               errors={"triton": 2e-3, "vendor": 1.7e-3, "vendor_fast": 2.1e-3}, mode="fp8"),
           _pt(48, 80, 72, tflops={"triton": 1.5, "vendor": 2.5, "inductor": 1.1},
               mode="fp8")]
    ax = plots.tflops_bars(pts, "h200 fp8").axes[0]
    assert ax.get_legend_handles_labels()[1] == ["triton", "vendor", "inductor",
                                                 "vendor_fast"]
    colours = {c.get_label(): c.patches[0].get_facecolor() for c in ax.containers}
    assert len(set(colours.values())) == 4
    err = plots_errors.error_bands(pts, "fp8", "h200 fp8").axes[0]
    assert "vendor_fast" in err.get_legend_handles_labels()[1]
    fig = plots.peak_and_roofline(pts, "h200 fp8", "nvidia-h200", 1978.9, 4800.0)
    assert "inductor" in fig.axes[0].get_legend_handles_labels()[1]


def test_figure_pixel_size_is_its_inches_at_dpi():
    """Within a pixel: matplotlib 3.7 (the floor pyproject admits) rounds 4.6 inches at
    100 DPI to 459 px, later ones to 460; the report page reads the PNG's own size."""
    fig = plots.figure(7.0, 4.6)
    fig.subplots().plot([1, 2], [1, 2])
    w, h = _png_size(fig)
    assert w == 700 and h in (459, 460)


def _series(chip, ratio, date, peaks):
    return Series(f"{chip} {date}", chip, (
        _pt(64, 64, 64, ratio, tflops={"triton": 10.0 * ratio, "vendor": 10.0}),
        _pt(1024, 1024, 1024, ratio * 1.1, tflops={"triton": 30.0, "vendor": 33.0})), peaks)


def test_history_draws_the_geomean_per_snapshot():
    ss = [_series("cpu", r, f"2026-11-0{i}", {}) for i, r in enumerate((1.0, 0.9, 1.1), 1)]
    fig = plots_history.history(ss, "fp32", "cpu fp32")
    ratio_ax = fig.axes[0]
    gm = next(ln for ln in ratio_ax.lines if ln.get_gid() == "geomean")
    expect = [plots_history.geomean([r, r * 1.1]) for r in (1.0, 0.9, 1.1)]
    assert list(gm.get_ydata()) == pytest.approx(expect)
    assert [t.get_text() for t in ratio_ax.get_xticklabels()] == [s.label for s in ss]


def test_the_history_names_the_cases_that_moved_most_at_their_ends():
    """The thin lines had no names: a history could not say which shape went down (a
    review). The NAMED_CASES that moved most are named at their last point."""
    pts = [[_pt(64 * (j + 1), 64, 64, r * (1.0 if j else 0.5 ** i),
                tflops={"triton": 1.0, "vendor": 1.0}) for j in range(7)]
           for i, r in enumerate((1.0, 1.0))]
    ss = [Series(f"cpu 2026-11-0{i}", "cpu", tuple(p), {}) for i, p in enumerate(pts, 1)]
    fig = plots_history.history(ss, "fp32", "cpu fp32")
    named = {t.get_gid(): t for t in fig.axes[0].texts}
    assert list(named) == ["named-64×64×64"] and named["named-64×64×64"].xy == (1, 0.5)
    pts = [[_pt(64 * (j + 1), 64, 64, 1.0 + i * j / 10, tflops={"triton": 1.0, "vendor": 1.0})
            for j in range(9)] for i in range(2)]                 # 8 moved: the 5 most
    ss = [Series(f"cpu 2026-11-0{i}", "cpu", tuple(p), {}) for i, p in enumerate(pts, 1)]
    texts = plots_history.history(ss, "fp32", "cpu fp32").axes[0].texts
    assert sorted(t.get_text() for t in texts) == sorted(f"{64 * j}×64×64"
                                                         for j in (9, 8, 7, 6, 5))
    # two cases ending at one figure: their names 7 points apart, not one over the other
    pts = [[_pt(64, 64, 64, (0.5, 1.0)[i]), _pt(128, 64, 64, (2.0, 1.0)[i])]
           for i in range(2)]
    ss = [Series(f"cpu 2026-11-0{i}", "cpu", tuple(p), {}) for i, p in enumerate(pts, 1)]
    texts = plots_history.history(ss, "fp32", "cpu fp32").axes[0].texts
    assert [t.xy for t in texts] == [(1, 1.0), (1, 1.0)]
    assert abs(texts[0].xyann[1] - texts[1].xyann[1]) >= 7


def test_the_history_legend_counts_the_cases_its_geomean_is_over():
    """An empty output (no ratio) in every snapshot was counted in "geomean of the N
    common cases" and left out of the geomean (a review)."""
    empty = Point("fp32", 0, 8, 8, "rr", None, {}, {}, False)
    ss = [Series(f"cpu 2026-11-0{i}", "cpu", (*_series("cpu", 1.0, "x", {}).points, empty),
                 {}) for i in (1, 2)]
    fig = plots_history.history(ss, "fp32", "cpu fp32")
    for ax in fig.axes[:2]:
        gm = next(ln for ln in ax.lines if ln.get_gid() == "geomean")
        assert "of the 2 common cases" in gm.get_label()


def test_the_history_geomean_is_over_the_cases_every_snapshot_holds_and_passed():
    """A snapshot without one of the cases (another set), or with it failing, does not move
    the geomean: only the cases every snapshot holds and passed count (a case left out
    moved it 15x, session 57)."""
    whole = _series("cpu", 1.0, "2026-11-01", {})
    part = Series("cpu 2026-11-02", "cpu", whole.points[1:], {})        # 64^3 not run
    fig = plots_history.history([whole, part], "fp32", "cpu fp32")
    gm = next(ln for ln in fig.axes[0].lines if ln.get_gid() == "geomean")
    assert list(gm.get_ydata()) == pytest.approx([1.1, 1.1])
    assert "1 common cases" in gm.get_label()
    failing = Series("cpu 2026-11-03", "cpu", (whole.points[0], _pt(
        1024, 1024, 1024, 0.01, failed=True, tflops={"triton": 1.0})), {})
    fig = plots_history.history([whole, failing], "fp32", "cpu fp32")
    gm = next(ln for ln in fig.axes[0].lines if ln.get_gid() == "geomean")
    assert list(gm.get_ydata()) == pytest.approx([1.0, 1.0])


def test_cross_chip_normalises_to_each_chips_peak_and_names_chips_without_one():
    peaks = dict(CHIPS["nvidia-h200"].peak_tflops)
    ss = [_series("nvidia-h200", 1.0, "2026-11-30", peaks), _series("cpu", 0.01, "2026-11-29", {})]
    fig = plots_history.cross_chip(ss, "fp32")
    left = fig.axes[0]
    pct = [c for c in left.collections if c.get_gid() == "pct-nvidia-h200"]
    ys = sorted(y for c in pct for _, y in c.get_offsets())
    assert ys == pytest.approx(sorted(100 * t / peaks["fp32"] for t in (10.0, 30.0, 10.0, 33.0)))
    assert any("no datasheet peak: cpu" in t.get_text() for t in left.texts)
    _png_size(fig)


def test_a_dollar_in_a_title_or_chip_is_drawn_as_itself():
    """A run file's chip id `<x>$\\frac{$` was read as math, and the malformed formula
    stopped the report (a review): every figure draws `$` as text."""
    weird = r"evil$\frac{$ chip"
    figs = [plots.heatmap(POINTS, weird), plots.tflops_bars(POINTS, weird),
            plots_errors.error_bands(POINTS, "fp32", weird),
            plots.sweep_curve("num_stages", [1, 2], [1.0, 2.0], ["ok", "ok"], 1.5, weird),
            plots_history.history([_series(weird, 1.0, "2026-11-01", {})], "fp32", weird),
            plots_history.cross_chip([_series(weird, 1.0, "2026-11-01", {})], "fp32")]
    for fig in figs:
        assert _png_size(fig)[0] > 0
        texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
        assert any(r"$\frac{$" in t for t in texts)


def test_a_log_axis_s_tick_labels_are_drawn_as_math_not_raw_text():
    """`plain_text` made tick labels plain text, and a log axis's formatter fills them
    with mathtext when the figure is saved: `$\\mathdefault{10^{-9}}$` drawn raw (a
    review). Titles stay plain; tick labels read math again."""
    import io

    pts = [plots.Point("fp32", 64, 64, 64, "rr", 1.0, {"triton": 1.0},
                       {"triton": 2e-7, "vendor": 3e-7}),
           plots.Point("fp32", 32, 32, 32, "rr", 1.0, {"triton": 1.0},
                       {"triton": 1e-6, "vendor": 3e-7})]
    fig = plots_errors.error_bands(pts, "fp32", "a $5 title")
    fig.savefig(io.BytesIO(), format="png")
    labels = [t.label1 for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
              for t in (*axis.get_major_ticks(), *axis.get_minor_ticks())]
    assert any("$" in x.get_text() for x in labels)
    assert all(x.get_parse_math() for x in labels if "$" in x.get_text())
    assert not fig.axes[0].title.get_parse_math()


def test_no_error_is_drawn_under_the_legend():
    """The legend sat inside the axes at the upper left, over the fail band of the first
    (smallest) cases: a failing or NaN error of the first case was drawn under it."""
    pts = [_pt(32, 32, 32, failed=True, errors={"triton": 0.5, "vendor": 1e-7}),
           _pt(32, 64, 32, failed=True, errors={"triton": math.inf, "vendor": 1e-7}),
           *(_pt(64 * i, 64, 64) for i in range(1, 5))]
    for mode in ("fp32", "tf32x3"):   # (tf32x3: one more line in the legend)
        fig = plots_errors.error_bands(pts, mode, "cpu")
        fig.canvas.draw()
        ax = fig.axes[0]
        box = ax.get_legend().get_window_extent().expanded(1.05, 1.05)
        xy = [p for c in ax.collections for p in ax.transData.transform(c.get_offsets())]
        assert len(xy) == 12 and not any(box.contains(x, y) for x, y in xy)


def test_the_heatmaps_colour_bar_says_its_ends_when_ratios_are_near_1():
    """Ratios within 0.84 to 1.19 (a baseline's fp8 on an H100) got one tick, "1": the
    colours' scale was unsaid."""
    fig = plots.heatmap([_pt(64, 64, 64, 0.97), _pt(64, 128, 64, 1.1)], "h100 fp8")
    fig.canvas.draw()
    bar = fig.axes[-1]
    labels = [t.get_text() for t in bar.get_yticklabels() if t.get_text()]
    assert len(labels) >= 3 and "1" in labels
    assert float(labels[0]) < 0.9 and float(labels[-1]) > 1.1


@pytest.mark.parametrize("peak,bw", [(None, None), (66.9, 3350.0)])
def test_a_mode_of_empty_outputs_only_draws_without_a_warning(peak, bw):
    """`--shapes 0x8x8`: no provider has a figure; legend() of nothing warned on stderr
    ("No artists with labels found to put in legend") under the report's line."""
    import warnings
    pts = [Point("fp32", 0, 8, 8, "rr", None, {}, {"triton": 0.0, "vendor": 0.0})]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _png_size(plots.peak_and_roofline(pts, "x fp32", "x", peak, bw))


def test_a_two_step_history_keeps_its_legends_inside_their_axes():
    """A nightly's history is two steps (the baseline, the night's run), labelled "chip
    kind date time commit": at 30 degrees the first label ran far left, the axes were
    squeezed to a sliver and each legend spilled out over the other panel's labels."""
    pts = tuple(_pt(64 * i, 64, 64, 1.0 + i / 10) for i in range(1, 8))
    series = [Series(f"nvidia-h100 baseline 2026-12-0{d} 04:39 6fe4ccb", "nvidia-h100", pts)
              for d in (6, 7)]
    fig = plots_history.history(series, "fp32", "nvidia-h100 fp32")
    fig.canvas.draw()
    for ax in fig.axes:
        box, legend = ax.get_window_extent(), ax.get_legend().get_window_extent()
        assert box.x0 <= legend.x0 and legend.x1 <= box.x1
        assert box.width > 200   # pixels (an 8-inch figure: 800)


def test_a_point_outside_its_own_band_is_ringed_in_that_bands_colour():
    """tf32x3: the shading is the vendor's band (1e-5), the kernels' is 3e-6: a Triton
    error of 4.4e-6 (bf16x3 run as tf32x3) sat in the green unmarked; it is ringed as
    downgraded, the vendor's same error not."""
    from matplotlib.colors import to_hex

    pts = [_pt(64, 64, 64, errors={"triton": 4.4e-6, "vendor": 4.4e-6})]
    ax = plots_errors.error_bands(pts, "tf32x3", "x").axes[0]
    edge = {c.get_gid(): to_hex(c.get_edgecolor()[0]) for c in ax.collections
            if c.get_gid()}
    assert edge["errors-triton"] == plots_errors.BAND_COLOR["downgraded"]
    assert edge["errors-vendor"] == "#000000"


def test_a_history_does_not_join_a_case_that_failed_accuracy():
    """A case that failed accuracy (a wrong answer 1000x "faster") was a step of its thin
    line, and named as the case that moved most, unmarked (a review): it is a red x, out
    of the line and of the names."""
    ok = (_pt(64, 64, 64, 1.0), _pt(128, 64, 64, 1.0))
    bad = (_pt(64, 64, 64, 1000.0, failed=True), _pt(128, 64, 64, 1.0))
    ss = [Series(f"cpu 2026-11-0{i}", "cpu", p, {}) for i, p in enumerate((ok, ok, bad), 1)]
    ax = plots_history.history(ss, "fp32", "cpu fp32").axes[0]
    thin = [list(ln.get_ydata()) for ln in ax.lines if ln.get_gid() != "geomean"]
    assert all(not any(y == 1000.0 for y in ys) for ys in thin)
    (failed,) = [c for c in ax.collections if c.get_gid() == "failed"]
    assert [tuple(o) for o in failed.get_offsets()] == [(2, 1000.0)]
    assert not [t for t in ax.texts if t.get_gid() == "named-64×64×64"]


def test_an_error_over_the_top_of_the_axis_is_labelled_with_its_value():
    """A failing extra's error of 15 was drawn at 0.8, the axis' top, unlabelled (NaN/Inf
    and 0 at the edges are labelled)."""
    pts = [_pt(8, 8, 8, errors={"triton": 1e-7, "vendor": 1e-7, "mine": 15.4})]
    texts = [t.get_text() for t in plots_errors.error_bands(pts, "fp32", "x").axes[0].texts]
    assert texts == ["15"]


def test_a_providers_roofline_point_where_it_failed_accuracy_is_marked():
    """Its bar was hatched on the left, and its point on the roofline stood as any other:
    a wrong answer's speed under the ceiling, unmarked (a review)."""
    tf = {"triton": 1.0, "vendor": 2.0, "mod:bad": 9.0}
    pts = [_pt(64, 64, 64, tflops=tf, failed_by=("mod:bad",)), _pt(48, 80, 72, tflops=tf)]
    right = plots.peak_and_roofline(pts, "cpu fp32", "cpu", 10.0, 100.0).axes[1]
    failed = [c for c in right.collections if c.get_gid() == "failed"]
    assert len(failed) == 1 and len(failed[0].get_offsets()) == 1
    assert failed[0].get_offsets()[0][1] == 9.0
    plain = [c for c in right.collections if c.get_label() == "mod:bad"]
    assert [len(c.get_offsets()) for c in plain] == [1]   # its passing case only
    assert "mod:bad: failed accuracy" in right.get_legend_handles_labels()[1]
