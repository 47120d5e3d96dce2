"""Presenting results: rich tables for the terminal, Markdown for CI summaries, JSON.

Columns per mode: shape, Triton and vendor TFLOP/s, speed ratio (vendor time / Triton
time: > 1 means Triton is faster), % of the chip's datasheet peak, both errors, verdict;
with a reference kernel (`--ab-ref`), "A/B": reference time / current time, the median of
per-round ratios (> 1: the current kernel is faster). Each extra provider (`--providers`:
inductor, module:function) adds its TFLOP/s (with its accuracy status unless it passed)
and "ratio vs NAME" (its time / Triton time, as "ratio"); the mode's line gives its
geomean ratio too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gemmgate import stats
from gemmgate.accuracy import EXCESS_RATIO, kept_less
from gemmgate.markdown import md_row
from gemmgate.precision import MODES
from gemmgate.results import REFERENCE, CaseResult, summary_by_mode


def _f(x: float | None, fmt: str) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def _err(p) -> str:
    if p.accuracy == "unsupported":
        return "n/a"
    return _f(p.error, ".1e") if p.error is None or math.isfinite(p.error) else "NaN/Inf"


def _status(r: CaseResult) -> str:
    if r.passed:
        return "pass"
    bad = [f"{n}: {p.message or p.accuracy}" for n, p in r.providers.items()
           if p.accuracy not in ("pass", "unsupported") or (n == "triton" and
                                                             p.accuracy != "pass")]
    return "FAIL " + "; ".join(bad)   # (Triton unsupported fails the case: named too)


def _rows(results: Sequence[CaseResult], ab: bool = False, extras: Sequence[str] = ()):
    for r in results:
        t, v = r.providers["triton"], r.providers["vendor"]
        row = (r.case.id, _f(t.tflops, ".4g"), _f(v.tflops, ".4g"), _f(r.ratio, ".3g"),
               _f(r.pct_peak, ".0f"), _err(t), _err(v))
        if ab:   # a reference that failed accuracy is no yardstick (the gate's A/B
            ref = r.providers.get(REFERENCE)   # is none; a review): its figure not shown
            row += (_f(stats.median(r.ab_samples) if r.ab_samples else None, ".3f")
                    if ref is None or ref.accuracy == "pass" else f"ref {ref.accuracy}",)
        for n in extras:
            row += _extra_cells(r, n)
        yield row + (_status(r),)


def _extra_cells(r: CaseResult, name: str) -> tuple[str, str]:
    """An extra provider's TFLOP/s, with its status unless it passed, and its ratio."""
    p = r.providers.get(name)
    if p is None:
        return "not run", "—"
    tf = _f(p.tflops, ".4g")
    if p.accuracy != "pass":
        tf = p.accuracy if p.tflops is None else f"{tf} {p.accuracy}"
    return tf, _f(r.ratio_to(name), ".3g")


HEAD = ("shape", "Triton TFLOP/s", "vendor TFLOP/s", "ratio", "% peak", "Triton err",
        "vendor err", "status")


def _head(ab: bool, extras: Sequence[str] = ()) -> tuple[str, ...]:
    cols = tuple(c for n in extras for c in (f"{n} TFLOP/s", f"ratio vs {n}"))
    return HEAD[:-1] + (("A/B",) if ab else ()) + cols + HEAD[-1:]


def _extras(results: Sequence[CaseResult]) -> list[str]:
    """The extra providers (--providers) of these results, in run order."""
    return list(dict.fromkeys(n for r in results for n in r.extras))


def _extra_line(s: dict) -> str:
    return "".join(f", vs {n} {_f(g, '.3f')}" for n, g in s.get("geomean_ratios", {}).items())


def accumulation_note(results: Sequence[CaseResult]) -> str:
    """A line where Triton's or the vendor's error beyond the output's own rounding is over
    EXCESS_RATIO x the other's on the same inputs: a sum kept below fp32 on that side
    (e.g. fp8's fast accumulation). Judged only in a mode with a `kept_less_floor`
    (fp16: above it the case is downgraded, `judging.judge_kept_less`), and the line says
    so; empty where no case shows it."""
    lines = []
    for side, other in (("triton", "vendor"), ("vendor", "triton")):
        hits = [r for r in results if side in r.providers and other in r.providers and
                kept_less(r.providers[side].excess, r.providers[other].excess)]
        if hits:
            lo = min(r.providers[side].excess for r in hits)
            hi = max(r.providers[side].excess for r in hits)
            ks = sorted({r.case.k for r in hits})
            # (it said "not judged" of fp16 too, where a case above the floor is
            # downgraded; a review)
            floors = {r.mode: f for r in hits
                      if (f := getattr(MODES.get(r.mode), "kept_less_floor", None)) is not None}
            judged = "not judged" if not floors else "judged in " + ", ".join(
                f"{m} above {f:.1e} (downgraded)" for m, f in floors.items())
            lines.append(f"note: {side}'s error beyond the output's own rounding is over "
                         f"{EXCESS_RATIO:g}x {other}'s in {len(hits)} of {len(results)} "
                         f"cases ({lo:.1e} to {hi:.1e}, K {ks[0]} to {ks[-1]}): its sum "
                         f"kept less than fp32? ({judged}; docs/GATE.md)")
    return "\n".join(lines)


def precision_note(results: Sequence[CaseResult]) -> str:
    """A line per provider whose error is under its mode's `min_error` (precision.py):
    it computed more precisely than the mode (tf32 at IEEE fp32), so its speed ratio
    compares two modes. Not judged; empty where no case shows it."""
    lines = []
    names = dict.fromkeys(n for r in results for n in r.providers if n != REFERENCE)
    for name in names:
        hits = [r for r in results if name in r.providers and _more_precise(r, name)]
        if hits:
            mode = MODES[hits[0].mode]
            hi = max(r.providers[name].error for r in hits)
            lines.append(f"note: {name}'s error is under {mode.min_error:.0e} in {len(hits)} "
                         f"of {len(results)} {mode.name} cases (up to {hi:.1e}): it ran more "
                         f"precisely than {mode.name} (its switch not taken? on ROCm, "
                         "HIPBLASLT_ALLOW_TF32), so the speed ratio compares two modes "
                         "(not judged)")
    return "\n".join(lines)


def _more_precise(r: CaseResult, name: str) -> bool:
    floor = MODES[r.mode].min_error if r.mode in MODES else None
    p = r.providers[name]
    return floor is not None and p.accuracy == "pass" and p.error is not None \
        and 0 <= p.error < floor and r.case.m * r.case.n * r.case.k > 0


def _notes(results: Sequence[CaseResult]) -> str:
    return "\n".join(n for n in (accumulation_note(results), precision_note(results)) if n)


def _has_ab(results: Sequence[CaseResult]) -> bool:
    return any(REFERENCE in r.providers for r in results)


def print_tables(results: Sequence[CaseResult], console: Console, title: str = "") -> None:
    summary = summary_by_mode(results)
    ab = _has_ab(results)
    for mode, s in summary.items():
        rs = [r for r in results if r.mode == mode]
        extras = _extras(rs)
        table = Table(title=escape(f"{title} {mode}".strip()), title_justify="left")
        for h in _head(ab, extras):
            table.add_column(escape(h), justify="left" if h in ("shape", "status") else "right",
                             no_wrap=h == "shape", overflow="fold")  # names stay whole
        for row in _rows(rs, ab, extras):
            style = None if row[-1] == "pass" else "red"
            table.add_row(*map(escape, row), style=style)
        console.print(table)
        note = _notes(rs)
        console.print(f"[bold]{mode}[/]: geomean Triton/vendor speed ratio "
                      f"{_f(s['geomean_ratio'], '.3f')}{escape(_extra_line(s))}, "
                      f"{s['passed']}/{s['cases']} passed"
                      + (f"\n[yellow]{escape(note)}[/]" if note else "") + "\n")


def markdown(results: Sequence[CaseResult], title: str = "") -> str:
    lines = [f"## {title}" if title else ""]
    ab = _has_ab(results)
    for mode, s in summary_by_mode(results).items():
        rs = [r for r in results if r.mode == mode]
        extras = _extras(rs)
        head = _head(ab, extras)
        lines += [f"### {mode}: geomean ratio {_f(s['geomean_ratio'], '.3f')}"
                  f"{_extra_line(s)}, {s['passed']}/{s['cases']} passed", "",
                  md_row(head), "|" + "---|" * len(head)]
        lines += [md_row(row) for row in _rows(rs, ab, extras)]
        note = _notes(rs)
        lines += ["", note] if note else []
        lines.append("")
    return "\n".join(lines).lstrip("\n")
