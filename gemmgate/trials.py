"""Trials: how well the gate tells a real slowdown from noise, measured the way CI meets
it. Each trial is a fresh-process `gemmgate check` with a known injected slowdown
(`--inject-slowdown F`, 0 = A/A); levels are interleaved per repeat so drift hits every
level alike. Every case check becomes one row of checks.csv (`check_rows`: the one
definition of that row, also used for the data under docs/results); `power` counts, per
level, the case checks flagged "regressed" (at 0: false alarms) and "improved".

--out gets each check's JSON, checks.csv (one row per case check) and two summaries,
checks_summary.csv (one row per check) and cases_summary.csv (one row per level and
case): the summaries are what docs/results keeps.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from gemmgate.baseline_provenance import MEASURED_BY, measured
from gemmgate.baseline_schema import Baseline
from gemmgate.compare import DEFAULT_FLOOR, is_floor
from gemmgate.files import read_text, write_csv_atomic
from gemmgate.gate import EMPTY, compare_run
from gemmgate.results import RunRecord, run_file_data
from gemmgate.starter import starter_env
from gemmgate.trial_summaries import CASE_SUMMARY, CHECK_SUMMARY, summarize_cases, summarize_checks
from gemmgate.tuning import config_name

UNJUDGED = ("failed", EMPTY)   # case checks a trial's power does not count (`power`)

COLUMNS = (
    "source", "commit", "date", "injected", "ab_ref", "mode", "case", "verdict", "remeasured",
    "ratio_change", "ratio_tolerance", "ab_change", "ab_tolerance", "tflops_change",
    "tflops_tolerance", "triton_median_ms", "vendor_median_ms", "reference_median_ms",
    "triton_tflops", "vendor_tflops", "ratio", "triton_config", "reference_config",
    "injected_sized", "sm_clock_mhz", "power_w", "temp_c", "clock_reasons", "note",
    "rc", "worker", "gpu", "level", "stored_verdict", "ab_verdict",
)  # reference_config is blank when the reference ran the Triton tile; gpu: UUID prefix


def _g(x, sig: int = 5):
    if x is None:
        return ""
    if isinstance(x, bool):
        return int(x)
    return x if isinstance(x, int) else f"{x:.{sig}g}"


def _short_note(note: str) -> str:
    """The gate's note less what other columns hold (the level and its tolerance)."""
    return "; ".join(p for p in note.split("; ") if not p.startswith("stored: "))


def _prov(providers: dict, name: str, key: str, sig: int = 5):
    return _g(providers[name].get(key), sig) if name in providers else ""


def check_rows(source: str, data: dict, rc: int | str = "") -> list[dict]:
    """One row per case a `gemmgate check --json` judged (COLUMNS, as strings)."""
    env, gate = data["environment"], data["gate"]
    cases = {c["id"]: c for c in data["cases"]}
    rows = []
    for v in gate["verdicts"]:
        c = cases[v["id"]]
        t, p = c.get("telemetry", {}), c["providers"]
        inj = t.get("injected_slowdown") or {}
        r, ab, tf = v.get("ratio") or {}, v.get("ab") or {}, v.get("tflops") or {}
        tile = t.get("triton_config") or (config_name(t["tuning"]["config"])
                                          if t.get("tuning") else "")

        rows.append({
            "source": source, "commit": str(env.get("commit") or "")[:10],
            "date": str(env.get("date", "")).removesuffix("+00:00"),
            "injected": _g(gate.get("inject_slowdown", 0.0)),
            "ab_ref": (gate.get("ab_ref") or "")[:10], "mode": c["mode"],
            "case": c["id"][len(c["mode"]) + 1:], "verdict": v["verdict"],
            "remeasured": _g(bool(v.get("remeasured"))),
            "ratio_change": _g(r.get("change"), 4), "ratio_tolerance": _g(r.get("tolerance"), 4),
            "ab_change": _g(ab.get("change"), 4), "ab_tolerance": _g(ab.get("tolerance"), 4),
            "tflops_change": _g(tf.get("change"), 4),
            "tflops_tolerance": _g(tf.get("tolerance"), 4),
            "triton_median_ms": _prov(p, "triton", "median_ms"),
            "vendor_median_ms": _prov(p, "vendor", "median_ms"),
            "reference_median_ms": _prov(p, "reference", "median_ms"),
            "triton_tflops": _prov(p, "triton", "tflops", 4),
            "vendor_tflops": _prov(p, "vendor", "tflops", 4), "ratio": _g(c.get("ratio")),
            "triton_config": tile,
            "reference_config": "" if t.get("reference_config") == tile
            else t.get("reference_config", ""),
            "injected_sized": _g(inj.get("sized"), 4),
            "sm_clock_mhz": _g(t.get("sm_clock_mhz")), "power_w": _g(t.get("power_w"), 4),
            "temp_c": _g(t.get("temp_c")), "clock_reasons": "+".join(t.get("clock_reasons") or []),
            "note": _short_note(v.get("note", "")), "rc": rc,
            "worker": c.get("worker", "").split("/")[0], "gpu": t.get("gpu_uuid", "")[:12],
            "level": v.get("level", ""),
            "stored_verdict": r.get("verdict", ""), "ab_verdict": ab.get("verdict", ""),
        })
    return rows


def power(rows: Iterable[dict], verdict: str = "verdict") -> dict[float, dict]:
    """Per injected slowdown: checks, case checks judged, flagged regressed and improved,
    checks that exited 1, and the cases that went the wrong way (a false alarm at 0, a
    miss above it) with how often. Rows carry `file` and `source` to tell checks apart.
    `verdict` picks the column counted: "verdict" (the gate's), "stored_verdict" (the
    stored baseline's ratio judgement alone), "ab_verdict" (A/B alone)."""
    out: dict[float, dict] = defaultdict(lambda: {
        "checks": set(), "red": set(), "judged": 0, "regressed": 0, "improved": 0,
        "wrong": Counter()})
    for r in rows:
        level = float(r["injected"] or 0)
        p = out[level]
        check = (r.get("file", ""), r["source"])
        p["checks"].add(check)
        if str(r.get("rc", "")) == "1":
            p["red"].add(check)
        if r["verdict"] in UNJUDGED or not r.get(verdict):
            continue
        p["judged"] += 1
        hit = r[verdict] == "regressed"
        p["regressed"] += hit
        p["improved"] += r[verdict] == "improved"
        if hit == (level == 0):
            p["wrong"][f"{r['mode']}-{r['case']}"] += 1
    return {level: {**p, "checks": len(p["checks"]), "red": len(p["red"])}
            for level, p in sorted(out.items())}


def parse_levels(text: str) -> tuple[float, ...]:
    try:
        levels = tuple(float(t) for t in text.split(","))
    except ValueError:
        raise ValueError(f"--levels takes comma-separated fractions, got {text!r}") from None
    if not levels or any(not 0 <= x <= 10 for x in levels):
        raise ValueError(f"--levels must be fractions between 0 and 10, got {text!r}")
    return levels


def schedule(levels: Sequence[float], repeats: int) -> list[float]:
    """Levels interleaved per repeat: 0, 0.03, 0, 0.03, ..."""
    return [lv for _ in range(repeats) for lv in levels]


def write_csv(path: Path, rows: Sequence[dict], columns: Sequence[str] = COLUMNS,
              extra: str = "ignore") -> None:
    """`rows` as CSV, whole or not at all: rewritten after every trial, a kill mid-write
    must not cut off the trials before it. `extra`: csv.DictWriter's `extrasaction` for
    keys outside `columns` (checks.csv's rows carry more than it keeps)."""
    write_csv_atomic(path, rows, columns, extra)


def read_csv(*paths: Path) -> list[dict]:
    """The rows of checks.csv files, each tagged with the file it came from (`file`)."""
    rows = []
    for p in paths:
        with open(p, newline="") as f:
            rows += [{**r, "file": str(p)} for r in csv.DictReader(f)]
    return rows


class TrialError(RuntimeError):
    """A child check that did not judge (exit 2 or 3, or no JSON): the trials stop there,
    with the child's exit code (`code`: 2 bad input, 3 not measured to its end)."""

    def __init__(self, message: str, code: int = 3) -> None:
        super().__init__(message)
        self.code = code


def run_trials(check_args: Sequence[str], levels: Sequence[float], repeats: int,
               out: Path, deadline_s: float | None = None,
               on_trial: Callable[[str], None] | None = None,
               started: float | None = None) -> list[dict]:
    """Fresh-process checks (`python -m gemmgate check CHECK_ARGS --inject-slowdown L
    --json ...`), until done or `deadline_s` past `started` (time.monotonic(); default
    now: the command's start, where a calibration ran before); writes and returns every
    case check's row."""
    started, rows = time.monotonic() if started is None else started, []
    out.mkdir(parents=True, exist_ok=True)
    for i, level in enumerate(schedule(levels, repeats), 1):
        if deadline_s is not None and time.monotonic() - started > deadline_s:
            if on_trial:
                on_trial(f"deadline: stopping before trial {i}")
            break
        name = f"check_{i}_{level:g}"
        path, log = out / f"{name}.json", out / f"{name}.txt"
        # an earlier run's file there, kept where this check wrote none (a traceback, exit
        # 1), was counted as this trial's (a review): only what this check writes counts
        path.unlink(missing_ok=True)
        try:
            with open(log, "w") as f:
                proc = subprocess.run([sys.executable, "-m", "gemmgate", "check", *check_args,
                                       "--inject-slowdown", str(level), "--json", str(path)],
                                      stdout=f, stderr=subprocess.STDOUT, env=starter_env())
        except KeyboardInterrupt:   # Ctrl-C, SIGTERM: said only "interrupted", what was kept
            if on_trial:            # and what not unsaid (a review)
                on_trial(f"stopped during trial {i} (slowdown {level:g}, not counted): "
                         f"{out / 'checks.csv'} keeps the {i - 1} check(s) before it")
            raise
        if proc.returncode not in (0, 1) or not path.exists():
            raise TrialError(f"trial {i} (slowdown {level:g}) failed with exit "
                             f"{proc.returncode}{_said(log)}; see {log}",
                             proc.returncode if proc.returncode >= 2 else 3)
        data = run_file_data(path)
        unended = RunRecord.from_json(data, str(path)).environment.get("incomplete")
        if unended:   # an exit 0 or 1 over a record that says the check did not end: a
            # process ended outright (cli_run.mark_running) is no trial to count
            raise TrialError(f"trial {i} (slowdown {level:g}) exited {proc.returncode}, but "
                             f"its check did not end ({unended}); see {log}", 3)
        got = check_rows(name, data, proc.returncode)
        rows += got
        write_csv(out / "checks.csv", rows)  # after every trial: a deadline kill keeps data
        write_summaries(out, rows)
        if on_trial:
            flagged = sum(r["verdict"] == "regressed" for r in got)
            judged = sum(r["verdict"] not in UNJUDGED for r in got)
            on_trial(f"trial {i}: slowdown {level:g}, exit {proc.returncode}, "
                     f"{flagged}/{judged} case checks flagged")
    write_csv(out / "checks.csv", rows)
    write_summaries(out, rows)
    return rows


def _said(log: Path) -> str:
    """The child check's own error line (`gemmgate: error: ...`, `measurement failed:`),
    as ": <line>", or "": the reason was only in the log (a review)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    said = [ln.strip() for ln in lines if ln.startswith("gemmgate: ")]
    return f": {said[-1].removeprefix('gemmgate: ')}" if said else ""


MEASURED = re.compile(r"check_\d+_.+\.(json|txt)")   # what only a measuring run writes
# a trials run's own files: its checks, checks.csv and the two summaries (a folder kept
# as docs/results keeps a run, its summaries alone, was written over; a review)
EARLIER = re.compile(MEASURED.pattern + r"|checks\.csv|checks_summary\.csv|cases_summary\.csv")


def earlier_trials(out: Path) -> list[str]:
    """The files of an earlier trials run in `out` (its checks, checks.csv and its
    summaries), sorted: a new run there mixed with them (its checks.csv listed the new
    checks beside the old files; `--rejudge out/check_*.json` took both; a review), or
    replaced the summaries of a run kept as docs/results keeps one."""
    try:
        return sorted(f.name for f in out.iterdir() if EARLIER.fullmatch(f.name))
    except OSError:   # no folder yet (or not one: check_outputs says so)
        return []


def _recorded_floor(gate_rec: dict, path) -> float:
    """The floor a check file's gate record was judged with (DEFAULT_FLOOR where it records
    none: a plain run). A recorded 0 became the default and a negative one a negative
    tolerance, every change past it a verdict (a review)."""
    x = gate_rec.get("floor", DEFAULT_FLOOR)
    if not is_floor(x):
        raise ValueError(f"{path}: gate.floor is {x!r}, not a fraction between 0 and 1 "
                         "(e.g. 0.015); give --floor")
    return float(x)


def _check_gate_record(gate: object, path) -> None:
    """The recorded `gate` fields the rows read: an object, its ab_ref text, its injected
    slowdown a number from 0 to 10 (a hand-edited file was a traceback, exit 1, or a row
    of -500%; a review)."""
    if not isinstance(gate, dict):
        raise ValueError(f"{path}: gate is {type(gate).__name__}, not an object")
    ref = gate.get("ab_ref")
    if ref is not None and not isinstance(ref, str):
        raise ValueError(f"{path}: gate.ab_ref is {ref!r}, not a commit")
    x = gate.get("inject_slowdown", 0.0)
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x <= 10:
        raise ValueError(f"{path}: gate.inject_slowdown is {x!r}, not a number from 0 to 10")


def _timed_as(env: dict, provenance: dict, path) -> None:
    """A recorded check timed otherwise than the baseline (another method, --block, or
    operand copies per call) is refused: judged against it, its figures read as speed-ups
    of 81x and 129x, unsaid, where `check` warns and `baseline merge` refuses (a review)."""
    for key, what in MEASURED_BY:
        was, now = measured(provenance, key), measured(env, key)
        if was is not None and now is not None and was != now:
            raise ValueError(f"{path} was timed with {what} {now}, the baseline with {was}: "
                             "its figures are not the baseline's; rejudge it against a "
                             "baseline timed alike")
    if env.get("copies") == "per-call":
        raise ValueError(f"{path} was timed with --copies per-call, the baseline with kept "
                         "copies: its figures are not the baseline's")


def rejudge(paths: Sequence[str], baseline: Baseline, out: Path,
            floor: float | None = None,
            said: Callable[[str], None] | None = None) -> list[dict]:
    """Recorded checks (`check --json`, or plain `run --json` files) judged again against
    `baseline`, offline: the same rows as `run_trials` (exit code = whether the new
    judgement fails). Each check's cases are its final measurements (re-measured where
    the check re-measured)."""
    rows, unjudged = [], []   # unjudged: recorded case checks the baseline leaves out
    seen: dict[str, str] = {}
    ids: dict[str, str] = {}   # run id: the check file that holds it
    # a row's source: its check's folder and name, the path where two checks share them
    # (a/res/check_1 and b/res/check_1 were one source, their rows folded into one)
    # ("check_1", not "/check_1", for a file given without its folder; a review)
    labels = [f"{Path(p).parent.name}/{Path(p).stem}".lstrip("/") for p in paths]
    labels = [label if labels.count(label) == 1 else str(p) for label, p in zip(labels, paths)]
    for p, label in zip(paths, labels):
        text = read_text(p, "check file")
        if text in seen:   # its verdicts would count twice in the rates
            raise ValueError(f"check file {p} is the same check as {seen[text]}: give each "
                             "check once")
        seen[text] = str(p)
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as e:
            raise ValueError(f"check file {p} is not JSON ({e})") from None
        rec = RunRecord.from_json(data, str(p))
        rid = rec.environment.get("run_id")   # a copy saved otherwise (reindented, a key
        # moved) is the same check: its verdicts counted twice in the rates (a review;
        # `report` and `baseline merge` refuse a run id given twice too)
        if isinstance(rid, str):
            if rid in ids:
                raise ValueError(f"check file {p} is the same check as {ids[rid]} (the "
                                 "same run id): give each check once")
            ids[rid] = str(p)
        unended = rec.environment.get("incomplete")
        if unended:   # a check stopped part-way (Ctrl-C, SIGTERM) was counted as a trial
            raise ValueError(f"check file {p} did not end ({unended}): it is no trial to "
                             "count; leave it out")   # (run_trials refuses it too; a review)
        for c in rec.cases:   # the row reads its fields (a number there, as the gate
            # record keeps it, was an AttributeError traceback, exit 1; a review)
            inj = c.telemetry.get("injected_slowdown")
            if inj is not None and not isinstance(inj, dict):
                raise ValueError(f"{p}: case {c.key}: telemetry.injected_slowdown is "
                                 f"{inj!r}, not an object (asked, sized)")
        # rows are read from the record as the typed loader checked it, not the raw file
        data = {**rec.to_json(), "gate": data.get("gate")}
        chip = rec.environment.get("chip")
        if chip is not None and chip != baseline.chip:
            raise ValueError(f"{p} was checked on {chip}; the baseline is {baseline.chip}'s")
        # a plain run (no gate record): its own injected slowdown, no A/B reference
        gate_rec = data.get("gate") or {
            "inject_slowdown": rec.environment.get("inject_slowdown") or 0.0}
        _check_gate_record(gate_rec, p)
        _timed_as(rec.environment, baseline.provenance, p)
        fl = floor if floor is not None else _recorded_floor(gate_rec, p)
        gate = compare_run(rec.cases, baseline, fl, rec.environment)
        # the cases the check measured again: their recorded figures are the second
        # measurement's (rows said remeasured 0 for them; docs/results/README.md: "1 if
        # the check measured the case again"; a review)
        recorded = gate_rec.get("verdicts")
        again = {v.get("id") for v in (recorded if isinstance(recorded, list) else ())
                 if isinstance(v, dict) and v.get("remeasured") is True
                 and isinstance(v.get("id"), str)}
        data["gate"] = {**gate_rec, "failed": gate.failed,
                        "verdicts": [{**v.to_json(), "remeasured": v.key in again}
                                     for v in gate.verdicts]}
        judged = {v["id"] for v in data["gate"]["verdicts"]}
        unjudged += [c["id"] for c in data["cases"] if c["id"] not in judged]
        rows += check_rows(label, data, int(gate.failed))
    if unjudged and said:   # left out silently: a check's cases counted fewer than it judged
        names = sorted(set(unjudged))
        said(f"note: {len(unjudged)} recorded case check(s) not in the baseline, not "
             f"judged: {', '.join(names[:5])}{', ...' if len(names) > 5 else ''}")
    if not rows:   # nothing judged is no measure of the gate's power
        raise ValueError(f"no case of these checks is in the baseline ({len(baseline.cases)} "
                         "cases): nothing to judge; give checks of its cases")
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "checks.csv", rows)
    write_summaries(out, rows)
    return rows


# --- summaries: what is kept in the repository (docs/results; gemmgate/trial_summaries.py)

def write_summaries(out: Path, rows: Sequence[dict]) -> None:
    """checks_summary.csv and cases_summary.csv: the reviewable data of a trials run."""
    for name, cols, data in (("checks_summary.csv", CHECK_SUMMARY, summarize_checks(rows)),
                             ("cases_summary.csv", CASE_SUMMARY, summarize_cases(rows))):
        write_csv(out / name, data, cols, extra="raise")   # a summary's rows: its columns
