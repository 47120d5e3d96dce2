"""A report's inputs (`gemmgate report`): run files and baselines, validated and turned
into typed rows (plots.Point) per source, and which source each chip's figures show.
Reads files; draws and writes nothing (gemmgate/report_page.py writes the page).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from gemmgate.accuracy import DOWNGRADED, FAIL
from gemmgate.baseline_provenance import calibration_mark
from gemmgate.baseline_schema import SCHEMA as BASELINE_SCHEMA
from gemmgate.baseline_schema import Baseline
from gemmgate.baseline_schema import load as load_baseline
from gemmgate.chips import CHIPS
from gemmgate.plots import Point
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
    def when(self) -> tuple:
        """The date as an order: the instant, in UTC. The text's order put an ISO date of
        another offset wrongly (18:30-05:00, 23:30 UTC, before 22:00+00:00: the older run
        became the headline; a review); a date without an offset is UTC (the harness
        writes UTC), and one that is no ISO date comes first, by its text."""
        at = _utc(self.date)
        return (0, 0.0, self.date) if at is None else (1, at.timestamp(), self.date)

    @property
    def label(self) -> str:
        """Kind, date (UTC) to the minute and commit: two runs of one commit and day were
        one label on the history's axis (a review); where even those match, `_series` adds
        the file's name."""
        at = _utc(self.date)
        day = at.strftime("%Y-%m-%d %H:%M") if at else self.date[:16].replace("T", " ")
        return f"{self.kind} {day or '?'} {self.commit[:7] or '?'}"

    @property
    def modes(self) -> list[str]:
        return [m for m in MODE_NAMES if any(p.mode == m for p in self.points)]


def _utc(date: str) -> datetime | None:
    """An ISO date as a UTC datetime (no offset: UTC); None where it is none."""
    try:
        at = datetime.fromisoformat(date)
        return (at if at.tzinfo else at.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)
    except (ValueError, OverflowError):   # (9999-12-31T23:00-05:00 is past datetime's end)
        return None


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


def newest_per_chip(sources: Sequence[Source]) -> dict[str, Source]:
    """Per chip, its newest source that holds cases (an empty run does not hide the
    chip's data)."""
    newest: dict[str, Source] = {}
    with_cases: dict[str, Source] = {}
    for s in sorted(sources, key=lambda s: s.when):
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
    runs = {**newest_per_chip([s for s in sources if s.kind == "run" and s.points]),
            **newest_per_chip([s for s in sources if s.kind == "run" and s.usable and s.points])}
    return [runs.get(chip, s) for chip, s in sorted(newest_per_chip(sources).items())]


def ceilings(chip_id: str, mode: str) -> tuple[float | None, float | None]:
    """(peak TFLOP/s of the mode, memory GB/s) from the chip table; None where unknown."""
    chip = CHIPS.get(chip_id)
    if chip is None:
        return None, None
    return chip.peak(mode), chip.mem_bw_gbs or None
