"""Trials: how well the gate tells a real slowdown from noise, measured the way CI meets
it. Each trial is a fresh-process `gemmgate check` with a known injected slowdown
(`--inject-slowdown F`, 0 = A/A); levels are interleaved per repeat so drift hits every
level alike. Every case check becomes one row of trials.csv; `power_table` turns rows
into "injected | case checks | flagged" (level 0: the false-alarm rate).

The rows are the data kept under docs/results; the per-check JSON stays in --out.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from gemmgate.results import RunRecord


@dataclass(frozen=True)
class TrialRow:
    trial: int
    level: float
    rc: int
    case: str
    verdict: str
    remeasured: bool
    ratio_change: float | None
    ratio_tolerance: float | None
    ab_change: float | None
    ab_tolerance: float | None
    tflops_change: float | None


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


def rows_of(check_json: dict, trial: int, level: float, rc: int) -> list[TrialRow]:
    """One row per case the check judged."""
    out = []
    for v in check_json.get("gate", {}).get("verdicts", []):
        r, ab, tf = v.get("ratio") or {}, v.get("ab") or {}, v.get("tflops") or {}
        out.append(TrialRow(trial, level, rc, v["id"], v["verdict"], bool(v.get("remeasured")),
                            r.get("change"), r.get("tolerance"), ab.get("change"),
                            ab.get("tolerance"), tf.get("change")))
    return out


def power_table(rows: Iterable[TrialRow]) -> list[dict]:
    """Per level: checks, case checks, flagged regressed / improved, checks that exited 1."""
    by: dict[float, list[TrialRow]] = {}
    for r in rows:
        by.setdefault(r.level, []).append(r)
    table = []
    for level, rs in sorted(by.items()):
        n = len(rs)
        table.append({"level": level, "checks": len({r.trial for r in rs}), "case_checks": n,
                      "regressed": sum(r.verdict == "regressed" for r in rs),
                      "improved": sum(r.verdict == "improved" for r in rs),
                      "red_checks": len({r.trial for r in rs if r.rc == 1})})
    return table


def write_csv(path: Path, rows: Sequence[TrialRow]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, [fl.name for fl in fields(TrialRow)])
        w.writeheader()
        for r in rows:
            w.writerow(asdict(r))


def read_csv(path: Path) -> list[TrialRow]:
    def num(x: str):
        return float(x) if x not in ("", "None") else None

    with open(path, newline="") as f:
        return [TrialRow(int(d["trial"]), float(d["level"]), int(d["rc"]), d["case"],
                         d["verdict"], d["remeasured"] == "True", num(d["ratio_change"]),
                         num(d["ratio_tolerance"]), num(d["ab_change"]),
                         num(d["ab_tolerance"]), num(d["tflops_change"]))
                for d in csv.DictReader(f)]


def run_trials(check_args: Sequence[str], levels: Sequence[float], repeats: int,
               out: Path, deadline_s: float | None = None,
               on_trial: Callable[[str], None] | None = None) -> list[TrialRow]:
    """Fresh-process checks (`python -m gemmgate check CHECK_ARGS --inject-slowdown L
    --json ...`), until done or the deadline; returns every case check's row."""
    started, rows = time.monotonic(), []
    for i, level in enumerate(schedule(levels, repeats), 1):
        if deadline_s is not None and time.monotonic() - started > deadline_s:
            if on_trial:
                on_trial(f"deadline: stopping before trial {i}")
            break
        path = out / f"check_{i}_{level:g}.json"
        log = out / f"check_{i}_{level:g}.txt"
        with open(log, "w") as f:
            proc = subprocess.run([sys.executable, "-m", "gemmgate", "check", *check_args,
                                   "--inject-slowdown", str(level), "--json", str(path)],
                                  stdout=f, stderr=subprocess.STDOUT)
        if proc.returncode not in (0, 1) or not path.exists():
            raise RuntimeError(f"trial {i} (slowdown {level:g}) failed with exit "
                               f"{proc.returncode}; see {log}")
        RunRecord.load(path)  # validates the check's JSON before counting it
        got = rows_of(json.loads(path.read_text()), i, level, proc.returncode)
        rows += got
        if on_trial:
            flagged = sum(r.verdict == "regressed" for r in got)
            on_trial(f"trial {i}: slowdown {level:g}, exit {proc.returncode}, "
                     f"{flagged}/{len(got)} case checks flagged")
    write_csv(out / "trials.csv", rows)
    return rows
