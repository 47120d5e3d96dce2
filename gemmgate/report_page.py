"""The report page (`gemmgate report`): runs and baselines turned into plain typed rows
(plots.Point), drawn by gemmgate/plots.py and plots_history.py, written as DIR/index.html
plus PNGs that open offline (no script, no remote resource).

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
from gemmgate.accuracy import DOWNGRADED, FAIL
from gemmgate.baseline_provenance import calibration_mark
from gemmgate.baseline_schema import SCHEMA as BASELINE_SCHEMA
from gemmgate.baseline_schema import Baseline
from gemmgate.baseline_schema import load as load_baseline
from gemmgate.chips import CHIPS, Chip
from gemmgate.files import write_bytes_atomic, write_text_atomic
from gemmgate.plots import Point
from gemmgate.plots_history import Series
from gemmgate.precision import MODE_NAMES, MODES
from gemmgate.results import REFERENCE, UNSUPPORTED, CaseResult, RunRecord, run_file_data

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "float8_e4m3fn": 1,
               "float8_e4m3fnuz": 1}


@dataclass(frozen=True)
class Source:
    """One input file: a run (`gemmgate run|check --json`) or a baseline."""
    path: str
    kind: str                 # "run" | "baseline"
    chip: str
    date: str
    commit: str
    points: tuple[Point, ...]
    incomplete: str = ""      # a run that stopped early: why (environment.incomplete)
    software: str = ""        # torch, triton, timing method and block it was measured with
    injected: float = 0.0     # a check's --inject-slowdown (validation: not the kernel's)
    ab_ref: str = ""          # --ab-ref: the kernel the "reference" bars are (a run's)

    @property
    def usable(self) -> bool:
        """Whole and unslowed: what the headline, history and cross-chip draw."""
        return not self.incomplete and not self.injected

    @property
    def label(self) -> str:
        """Kind, date to the minute and commit: two runs of one commit and day were one
        label on the history's axis (a review); where even those match, `_series` adds
        the file's name."""
        return f"{self.kind} {self.date[:16].replace('T', ' ') or '?'} {self.commit[:7] or '?'}"

    @property
    def modes(self) -> list[str]:
        return [m for m in MODE_NAMES if any(p.mode == m for p in self.points)]


@dataclass(frozen=True)
class Image:
    file: str                 # name inside DIR
    width: int                # pixels, as the <img> tag states
    height: int
    alt: str


def _bytes(mode: str) -> tuple[int, int]:
    m = MODES[mode]
    return DTYPE_BYTES.get(m.input_dtype, 4), DTYPE_BYTES.get(m.output_dtype, 4)


def point_of_result(r: CaseResult) -> Point:
    provs = r.providers
    return Point(r.mode, r.case.m, r.case.n, r.case.k, r.case.layout_id, r.ratio,
                 {n: p.tflops for n, p in provs.items() if p.tflops},
                 {n: p.error for n, p in provs.items() if p.error is not None},   # (NaN
                 # kept: the error figure labels it, where it read "inf"; a review)
                 not r.gate_passed, *_bytes(r.mode),   # an extra's failure is not
                 failed_by=tuple(n for n, p in provs.items()     # Triton's: its own
                                 if p.accuracy in (FAIL, DOWNGRADED)),
                 unsupported_by=tuple(n for n, p in provs.items() if p.accuracy == UNSUPPORTED))


def software_of(env: dict) -> str:
    """What a run or baseline was measured with, as the report's file table shows it."""
    # --copies per-call times the operand copies in every call: figures the gate and
    # baselines refuse beside kept copies' (trials, calibrate), said here too, so a
    # history mixing them says it was measured two ways (it said nothing; a review)
    return (f"torch {env.get('torch') or '?'}, triton {env.get('triton') or '?'}, "
            f"{env.get('timing') or '?'} timing, block {env.get('block') or 1}"
            + (", copies per call" if env.get("copies") == "per-call" else ""))


def _injected(env: dict) -> float:
    x = env.get("inject_slowdown")
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else 0.0


def from_run(path: str | Path, rec: RunRecord) -> Source:
    env = rec.environment
    return Source(str(path), "run", str(env.get("chip") or "?"), str(env.get("date") or ""),
                  str(env.get("commit") or ""), tuple(map(point_of_result, rec.cases)),
                  str(env.get("incomplete") or ""), software_of(env), _injected(env),
                  str(env.get("ab_ref") or "") if any(
                      REFERENCE in c.providers for c in rec.cases) else "")


def from_baseline(path: str | Path, base: Baseline) -> Source:
    """A baseline's cases (written only when every case passed accuracy)."""
    prov = base.provenance
    pts = tuple(Point(c.mode, c.case.m, c.case.n, c.case.k, c.case.layout_id, c.ratio,
                      {n: p.tflops for n, p in c.providers.items() if p.tflops},
                      {n: p.error for n, p in c.providers.items() if p.error is not None},
                      False, *_bytes(c.mode)) for c in base.cases.values())
    return Source(str(path), "baseline", base.chip, str(prov.get("date") or ""),
                  str(prov.get("commit") or ""), pts, software=software_of(prov))


def _run(path: str) -> RunRecord:
    """A run file; a baseline given as one is named as such (it said only "schema is
    'gemmgate.baseline', expected 'gemmgate.run/1'": `report baselines/x.json`)."""
    data = run_file_data(path)
    if isinstance(data, dict) and data.get("schema") == BASELINE_SCHEMA:
        raise ValueError(f"{path} is a baseline, not a run file: give it as --baseline "
                         f"{path}")
    return RunRecord.from_json(data, str(path))


def load_sources(runs: Sequence[str], baseline_files: Sequence[str]) -> list[Source]:
    """Every input, validated before anything is drawn: a missing or corrupt file is a
    ValueError (exit 2) naming it."""
    records = [(p, _run(p)) for p in runs]
    seen: dict[str, str] = {}
    for p, rec in records:   # a copy of a run drew its history a step that never was
        rid = rec.environment.get("run_id")   # (a review); `baseline merge` refuses one too
        if not isinstance(rid, str):   # (a run from before run ids: not known)
            continue
        if rid in seen:
            raise ValueError(f"{p} is the run {seen[rid]} again (the same run id): give "
                             "each run once")
        seen[rid] = p
    out = [from_run(p, rec) for p, rec in records]
    marks: dict[str, str] = {}
    for p in baseline_files:   # a copy of a baseline drew its history a step that never
        base = load_baseline(p)   # was too (a review): one calibration, one provenance
        mark = calibration_mark(base)
        if mark in marks:
            raise ValueError(f"{p} holds the same calibration as the baseline {marks[mark]} "
                             "(the same provenance): give each baseline once")
        marks[mark] = p
        out.append(from_baseline(p, base))
    return out


def _newest(sources: Sequence[Source]) -> dict[str, Source]:
    """Per chip, its newest source that holds cases (an empty run does not hide the
    chip's data)."""
    newest: dict[str, Source] = {}
    with_cases: dict[str, Source] = {}
    for s in sorted(sources, key=lambda s: s.date):
        newest[s.chip] = s
        if s.points:
            with_cases[s.chip] = s
    return {chip: with_cases.get(chip, s) for chip, s in newest.items()}


def subjects(sources: Sequence[Source]) -> list[Source]:
    """What the per-mode figures show, per chip: its newest complete run without an
    injected slowdown, else its newest run (every one stopped early or slowed on
    purpose), else (no run of that chip with cases given) its newest baseline: a run
    stopped before its first case hid the baseline beside it (a review). (A check with
    `--inject-slowdown 0.5` became a chip's headline: a review.)"""
    runs = {**_newest([s for s in sources if s.kind == "run" and s.points]),
            **_newest([s for s in sources if s.kind == "run" and s.usable and s.points])}
    return [runs.get(chip, s) for chip, s in sorted(_newest(sources).items())]


def ceilings(chip_id: str, mode: str) -> tuple[float | None, float | None]:
    """(peak TFLOP/s of the mode, memory GB/s) from the chip table; None where unknown."""
    chip = CHIPS.get(chip_id)
    if chip is None:
        return None, None
    return chip.peak(mode), chip.mem_bw_gbs or None


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
        ss = sorted((s for s in whole if s.chip == chip), key=lambda s: s.date)
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
    newest = list(_newest([s for s in sources if s.usable]).values())
    if len(newest) < 2:
        return []
    parts = ["<h2 id=cross-chip>Cross-chip</h2>",
             "<p>The newest run or baseline of each chip: "
             + html.escape("; ".join(f"{s.chip}: {s.path}" for s in newest)) + "</p>",
             "<div class=figs>"]
    for mode in MODE_NAMES:
        if sum(mode in s.modes for s in newest) >= 2:
            fig = plots_history.cross_chip(_named_apart(newest), mode)
            parts.append(_img(w.save(fig, f"cross-{mode}",
                                     f"{mode}: chips normalised to their peak")))
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
