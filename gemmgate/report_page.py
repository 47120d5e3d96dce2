"""The report page (`gemmgate report`): a report's sources (gemmgate/report_sources.py:
runs and baselines as plain typed rows) drawn by gemmgate/plots.py and plots_history.py,
written as DIR/index.html plus PNGs that open offline (no script, no remote resource).

Per subject (each chip's newest run; for a chip without runs, its newest baseline) and
mode: the speed-ratio heat-map, TFLOP/s per shape, % of peak and the roofline,
errors against their bands, and a table of the cases off the M×N grid. Then a history per
chip that has two or more runs/baselines, and a cross-chip view when two chips are given.
Every file is written atomically (a temp file renamed over); index.html comes last, so it
never names a PNG that is not there yet. A report's PNG names carry a token of what it
draws (`r<8 hex>-`), so a report stopped part-way (Ctrl-C, an error while drawing) leaves
the earlier page whole: its PNGs are not redrawn under it with the new inputs' figures.
Once index.html is written, the PNGs of earlier reports in DIR (token-named, not on the new
page) are removed.
"""

from __future__ import annotations

import hashlib
import html
import io
import math
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gemmgate import plots, plots_errors, plots_history
from gemmgate.chips import CHIPS, Chip
from gemmgate.files import write_bytes_atomic, write_text_atomic
from gemmgate.plots_history import Series
from gemmgate.precision import MODE_NAMES
from gemmgate.report_sources import Source, ceilings, newest_per_chip, subjects


@dataclass(frozen=True)
class Image:
    file: str                 # name inside DIR
    width: int                # pixels, as the <img> tag states
    height: int
    alt: str


def _series(s: Source, name: str = "") -> Series:
    chip = CHIPS.get(s.chip)
    return Series(name or f"{s.chip} {s.label}", s.chip, s.points,
                  dict(chip.peak_tflops) if chip else {})


def _named_apart(sources: Sequence[Source]) -> list[Series]:
    """Each source's series, named by chip and label, and by file name too where two
    would share one."""
    names = [f"{s.chip} {s.label}" for s in sources]
    return [_series(s, n if names.count(n) == 1 else f"{n} ({Path(s.path).name})")
            for s, n in zip(sources, names)]


OWN_PNG = re.compile(r"r[0-9a-f]{8}-.+\.png")   # a report's figure (`_Writer`), by name


def token(sources: Sequence[Source]) -> str:
    """The report's PNG prefix: 8 hex digits of what it draws (the same inputs, the same
    names: a report drawn again replaces its own figures)."""
    return "r" + hashlib.sha1(repr(tuple(sources)).encode()).hexdigest()[:8] + "-"


class _Writer:
    """Saves figures as DIR/<prefix><name>.png, atomically, and remembers what it wrote."""

    def __init__(self, out: Path, prefix: str = "") -> None:
        self.out, self.prefix, self.images = out, prefix, []

    def save(self, fig, name: str, alt: str) -> Image:
        name = self.prefix + name
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=plots.DPI, metadata={"Software": None})
        data = png.getvalue()
        write_bytes_atomic(self.out / f"{name}.png", data)
        # the size the PNG has (its IHDR), not inches x DPI: matplotlib 3.7 rounds a
        # 4.6-inch figure to 459 px where the page said 460 (a review)
        w, h = struct.unpack(">II", data[16:24])
        img = Image(f"{name}.png", w, h, alt)
        self.images.append(img)
        fig.clear()
        return img


def _img(i: Image) -> str:
    return (f'<figure><img src="{html.escape(i.file)}" width="{i.width}" height="{i.height}"'
            f' alt="{html.escape(i.alt)}"><figcaption>{html.escape(i.alt)}</figcaption>'
            "</figure>")


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                  for r in rows)
    return f"<table><tr>{th}</tr>{trs}</table>"


def _f(x: float | None, fmt: str = ".3g") -> str:
    return "—" if x is None or not math.isfinite(x) else format(x, fmt)


def slug(text: str) -> str:
    """`text` as a file name and an HTML id: a run's chip id comes from its JSON, and
    written as it is it named PNGs outside the folder ('a/b') or put markup into the page
    (session 57)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:80] or "_"


def _mode_section(w: _Writer, s: Source, idx: int, mode: str) -> list[str]:
    pts = sorted((p for p in s.points if p.mode == mode), key=lambda p: (p.flops, p.label))
    name, title = f"s{idx}-{slug(s.chip)}-{mode}", f"{s.chip} {mode}"
    peak, bw = ceilings(s.chip, mode)
    failed = [p.label for p in pts if p.failed]
    extras = {n: sum(n in p.failed_by for p in pts) for p in pts for n in p.failed_by
              if n not in ("triton", "vendor")}   # shown beside, never gated: said apart
    # a provider that could not run a case draws nothing for it: one unsupported in every
    # case (inductor on the CPU) vanished from the page, where the terminal said so (a
    # review)
    unrun = {n: sum(n in p.unsupported_by for p in pts) for p in pts
             for n in p.unsupported_by}
    timed = [p.ratio for p in pts if p.ratio and not p.failed]
    # a passing case without a ratio (an empty output, M or N 0: nothing computed, not
    # timed) is in no geomean: said, and the geomean's count is the cases it is over
    # (`tail`'s 11 cases read "11 cases ... geomean" over 9, unsaid; a review)
    untimed = [p.label for p in pts if not p.failed and not p.ratio]
    g = plots_history.geomean(timed)
    ceiling = f"{Chip.peak_source(mode)} {peak:g} TFLOP/s" if peak else "no datasheet peak"
    parts = [f'<h3 id="{name}">{html.escape(title)}</h3>',
             f"<p>{len(pts)} cases, {len(failed)} failing accuracy"
             f"{': ' + html.escape(', '.join(failed)) if failed else ''}"
             + (f"; {len(untimed)} without a speed ratio (an empty output, or not timed): "
                + html.escape(", ".join(untimed)) if untimed else "")
             + f"; geomean speed ratio {_f(g)}"
             + (f" over the {len(timed)} passing" + (" timed" if untimed else "")
                if failed or untimed else "") + f"; {html.escape(ceiling)}, memory "
             f"{_f(bw, 'g')} GB/s."
             + (" Failing accuracy beside them (not gated; bars hatched): " + html.escape(
                 ", ".join(f"{n} in {c} of {len(pts)}" for n, c in extras.items())) + "."
                if extras else "")
             + (" Unsupported here (nothing drawn for it): " + html.escape(
                 ", ".join(f"{n} in {c} of {len(pts)}" for n, c in unrun.items())) + "."
                if unrun else "") + "</p>"]
    _, off = plots.heat_panels(pts)
    if off:
        parts.append("<p>Cases off the M×N grid (other layouts, padded):</p>" + _table(
            ("case", "ratio", "Triton TFLOP/s", "accuracy"),
            [(p.label, _f(p.ratio), _f(p.tflops.get("triton")), "FAIL" if p.failed else "pass")
             for p in off]))
    parts.append("<div class=figs>")
    parts.append(_img(w.save(plots.heatmap(pts, title), f"{name}-heatmap",
                             f"{title}: speed ratio over M×N per K (failed cases hatched)")))
    parts.append(_img(w.save(plots.tflops_bars(pts, title), f"{name}-tflops",
                             f"{title}: TFLOP/s per shape and provider")))
    parts.append(_img(w.save(plots.peak_and_roofline(pts, title, s.chip, peak, bw),
                             f"{name}-roofline", f"{title}: % of peak and roofline")))
    parts.append(_img(w.save(plots_errors.error_bands(pts, mode, title), f"{name}-errors",
                             f"{title}: errors against the 1e-2 bound and the {mode} band")))
    return [*parts, "</div>"]


def _history(w: _Writer, sources: Sequence[Source]) -> list[str]:
    parts = []
    whole = [s for s in sources if s.usable]   # a part-run shrinks the common cases; a
    # slowed one is no step of the kernel's history
    for ci, chip in enumerate(sorted({s.chip for s in whole})):   # (chip slugs can meet)
        ss = sorted((s for s in whole if s.chip == chip), key=lambda s: s.when)
        if len(ss) < 2:
            continue
        for mode in MODE_NAMES:   # the sources that measured the mode: a PR run of fewer
            of = [s for s in ss if mode in s.modes]   # modes left no case common to all
            if len(of) < 2:
                continue
            fig = plots_history.history(_named_apart(of), mode, f"{chip} {mode}")
            mixed = sorted({s.software for s in of})
            parts.append(_img(w.save(fig, f"history-c{ci}-{slug(chip)}-{mode}",
                                     f"{chip} {mode}: history over {len(of)} runs/baselines"
                                     + (f"; measured with {len(mixed)} software or timing "
                                        f"settings: {' | '.join(mixed)}"
                                        if len(mixed) > 1 else ""))))
    return ["<h2 id=history>History</h2><div class=figs>", *parts, "</div>"] if parts else []


def _cross(w: _Writer, sources: Sequence[Source]) -> list[str]:
    newest = list(newest_per_chip([s for s in sources if s.usable]).values())
    if len(newest) < 2:
        return []
    parts = ["<h2 id=cross-chip>Cross-chip</h2>",
             "<p>The newest run or baseline of each chip: "
             + html.escape("; ".join(f"{s.chip}: {s.path}" for s in newest)) + "</p>",
             "<div class=figs>"]
    drawn = len(parts)
    for mode in MODE_NAMES:
        if sum(mode in s.modes for s in newest) >= 2:
            fig = plots_history.cross_chip(_named_apart(newest), mode)
            parts.append(_img(w.save(fig, f"cross-{mode}",
                                     f"{mode}: chips normalised to their peak")))
    if len(parts) == drawn:   # a heading over nothing, unsaid (a review)
        parts.append("<p>No mode was measured on two of these chips: nothing to compare "
                     "(" + html.escape("; ".join(f"{s.chip}: {','.join(s.modes) or 'no case'}"
                                                 for s in newest)) + ").</p>")
    return [*parts, "</div>"]


CSS = ("body{font-family:sans-serif;margin:1.5em;max-width:1900px}figure{margin:0}"
       ".figs{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}"
       "img{max-width:100%;height:auto;border:1px solid #ddd}table{border-collapse:collapse;"
       "margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;font-size:90%}"
       "figcaption{color:#555;font-size:90%}")


def write_report(sources: Sequence[Source], out: str | Path) -> list[Image]:
    """Draw every figure into `out` and write out/index.html; returns the images."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    w = _Writer(out, token(sources))
    body = ["<h1>gemmgate report</h1>", _table(
        ("kind", "file", "chip", "date", "commit", "measured with", "modes", "cases",
         "injected slowdown", "stopped early"),
        [(s.kind, s.path, s.chip, s.date, s.commit[:12], s.software or "—",
          ",".join(s.modes), str(len(s.points)), f"{s.injected:g}" if s.injected else "—",
          s.incomplete or "—") for s in sources])]
    for idx, s in enumerate(subjects(sources), 1):
        body.append(f"<h2>{html.escape(s.chip)}: {html.escape(s.label)} "
                    f"({html.escape(s.path)})</h2>")
        if s.incomplete:
            body.append(f"<p><b>This run stopped early</b> ({html.escape(s.incomplete)}): "
                        f"{len(s.points)} case(s) measured; left out of history and "
                        "cross-chip.</p>")
        if s.ab_ref:   # the "reference" bars: which kernel (the page never said; a review)
            body.append(f"<p>reference: the kernel at {html.escape(s.ab_ref[:12])} "
                        "(--ab-ref), timed in the same rounds.</p>")
        if s.injected:
            body.append(f"<p><b>This check was slowed on purpose</b> (--inject-slowdown "
                        f"{s.injected:g}): every run of this chip given was; left out of "
                        "history and cross-chip.</p>")
        for mode in s.modes:
            body += _mode_section(w, s, idx, mode)
    body += _history(w, sources) + _cross(w, sources)
    page = ("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            f"<title>gemmgate report</title><style>{CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
    write_text_atomic(out / "index.html", page)
    drawn = {i.file for i in w.images}
    for f in out.iterdir():   # earlier reports' figures, now named by no page
        if OWN_PNG.fullmatch(f.name) and f.name not in drawn:
            f.unlink(missing_ok=True)
    return w.images
