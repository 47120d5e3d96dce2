"""Baseline noise at its levels, from per-run medians tagged with the machine each ran on.

Noise, per case, at three levels (each a relative spread; the gate's tolerance is
max(floor, factor x spread in log space: compare.scaled), the factor 2.5 from 5 runs up,
more from fewer: gemmgate/compare.py):
- `ab`: A/B in one process, interleaved: the spread of the reference/current time ratio
  when both are the same kernel (`calibrate --ab-ref HEAD`);
- `ratio`, `tflops` (process level): fresh processes on one machine, the largest
  per-machine spread of the run medians;
- `machine`, `tflops_machine`: different physical GPUs (or CPU machines) of the chip: the
  spread of every run median, pooled over machines (present once runs come from two or
  more machines: `calibrate --devices 0,1`, or `gemmgate baseline merge` of calibrations
  made on several hosts).
A machine is host/GPU UUID on a GPU, host/machine id on the CPU (`machine_of`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from gemmgate.baseline_schema import NOISE_LEVELS, Noise
from gemmgate.compare import aa_noise, ab_noise
from gemmgate.results import CaseResult


def machine_of(result: CaseResult, env: dict) -> str:
    """The machine a case ran on: host/GPU UUID on a GPU; on the CPU host/machine id
    (`env.machine_id`), or the host alone in records from before machine ids."""
    host = env.get("host") or "unknown-host"
    here = result.telemetry.get("gpu_uuid") or env.get("machine_id")
    return f"{host}/{here}" if here else host


def _by_machine(values: Sequence[float], machines: Sequence[str]) -> dict[str, list[float]]:
    """Per-run medians grouped by the machine each ran on."""
    by: dict[str, list[float]] = {}
    for v, m in zip(values, machines):
        by.setdefault(m, []).append(v)
    return by


def level_noise(values: Sequence[float], machines: Sequence[str]) -> tuple:
    """(process, machine) spread of per-run medians tagged by machine: process is the
    largest spread within one machine's runs (None without a machine of >= 2 runs),
    machine the spread of all runs pooled (None with fewer than two machines)."""
    by = _by_machine(values, machines)
    within = [aa_noise(vs) for vs in by.values() if len(vs) > 1]
    process = max(within) if within else None
    machine = aa_noise(values) if len(by) > 1 else None
    if machine is not None and process is not None:
        machine = max(machine, process)
    return process, machine


def runs_behind(figure: float | None, values: Sequence[float], machines: Sequence[str],
                level: str) -> int:
    """How many runs a stored noise figure was estimated from, for the tolerance's factor
    (`compare.noise_factor`): "process", the runs of the machine whose spread it is;
    "machine", the machines pooled (their offsets are what it measures); "ab", the A/B
    runs. 0 where the runs stored beside it do not give the figure (a level carried from
    a calibration whose runs the file no longer lists: `stored_floor`)."""
    if figure is None or not values:
        return 0
    if level == "ab":
        return len(values) if math.isclose(ab_noise(values), figure, rel_tol=1e-9) else 0
    by = _by_machine(values, machines)
    # the machine figure is the pooled spread, or a machine's own where that is larger
    # (`level_noise`): either way what it says of other machines comes from these
    # machines (a 2-machine calibration whose one GPU had a 4% outlier run took the 5-run
    # x2.5 for its 4%, 10%, where a 1.9% outlier kept the machines' x48.2, 92%: more
    # noise, a tolerance 9x narrower; a review)
    if level == "machine" and len(by) > 1 and math.isclose(
            level_noise(values, machines)[1], figure, rel_tol=1e-9):
        return len(by)
    return next((len(vs) for vs in by.values() if len(vs) > 1
                 and math.isclose(aa_noise(vs), figure, rel_tol=1e-9)), 0)


def figure_runs(figure: float | None, values: Sequence[float], machines: Sequence[str],
                level: str, calibration_runs: int, stored: int = 0) -> int:
    """`runs_behind`; else (a figure kept from runs the file no longer lists: `baseline
    update` keeps the noise and lists its own run) the count stored with it (`stored`:
    `Noise.behind`); else, in files from before that count, the calibration's run count
    (`Noise.runs`): at least the runs behind the figure, so its factor is never above the
    true one's, and not the 5-run factor (2.5) a 2-run spread's figure took before (x48.2
    its due; an update turned a 2-run calibration's ±817% into ±42% and an A/A check
    failed, a review)."""
    if figure is None:
        return 0
    return runs_behind(figure, values, machines, level) or stored or calibration_runs


_LEVEL_OF = {"ratio": "process", "tflops": "process", "ab": "ab", "machine": "machine",
             "tflops_machine": "machine"}


def behind(n: Noise, level: str, known: bool = False) -> int:
    """The runs (at a machine level: machines) behind `n`'s figure at `level` (one of
    `NOISE_LEVELS`), for its tolerance's factor: from the runs listed beside it, else
    stored with it, else the calibration's run count (`figure_runs`; `known`: not that
    one, 0 instead: a count to store is a count, not a bound, unless a merge would lose
    the bound, `_count`); 0 without a figure."""
    if level in ("ratio", "machine"):
        values, machines = n.ratio_runs, n.run_machines
    elif level == "ab":
        values, machines = n.ab_runs, ()
    else:
        values, machines = n.tflops_runs, tflops_machines_of(n)
    return figure_runs(getattr(n, level), values, machines, _LEVEL_OF[level],
                       0 if known else n.runs, n.behind.get(level, 0))


def counts(n: Noise) -> dict[str, int]:
    """The known runs behind each figure of `n` (`behind`, `known`)."""
    return {level: behind(n, level, known=True) for level in NOISE_LEVELS
            if getattr(n, level) is not None}


def with_counts(n: Noise, runs: dict[str, int]) -> Noise:
    """`n` storing `runs` (level: runs behind its figure) where the runs listed beside
    the figure do not give it (`Noise.behind`): a figure kept by an update, which then
    lists its own run, or taken from a merged part over the pooled one."""
    listed = replace(n, behind={}, runs=0)
    return replace(n, behind={level: c for level, c in runs.items()
                              if c and getattr(n, level) is not None
                              and not behind(listed, level)})


def from_runs(ratios, machines, tflops, tflops_machines, abs_, runs) -> Noise:
    """Noise at every level from per-run medians (each list tagged with its machines)."""
    process, machine = level_noise(ratios, machines) if ratios else (None, None)
    if len(tflops_machines) != len(tflops):  # untagged: count them as one machine
        tflops_machines = ["?"] * len(tflops)
    tf_process, tf_machine = level_noise(tflops, tflops_machines) if tflops else (None, None)
    return Noise(process, tf_process, ab_noise(abs_) if len(abs_) > 1 else None, machine,
                 tf_machine, tuple(ratios), tuple(tflops), tuple(abs_), tuple(machines), runs,
                 tuple(tflops_machines))


def tflops_machines_of(n: Noise) -> tuple[str, ...]:
    """The machine of each TFLOP/s run."""
    if len(n.tflops_machines) == len(n.tflops_runs):
        return n.tflops_machines
    if len(n.run_machines) == len(n.tflops_runs):
        return n.run_machines
    return ("?",) * len(n.tflops_runs)


def _count(n: Noise, level: str, pooled: Noise) -> int:
    """The runs behind `n`'s figure at `level` to store with it in a merge (`pooled`'s
    run count is the parts' sum): a known count; else, where `n`'s own calibration count
    bounds it and the merged file's would not (a file from before `behind`), that one:
    x48.2 a 2-run spread's due would fall to the 5-run x2.5 again (a review)."""
    known = behind(n, level, known=True)
    return known or (0 if n is pooled or n.runs == pooled.runs else behind(n, level))


def stored_floor(pooled: Noise, stored: Sequence[Noise]) -> Noise:
    """Each level's noise from the pooled runs, but never below what a part stored: a
    baseline refreshed by `baseline update` keeps the noise of calibrations whose runs it
    no longer lists (one run, one machine), so recomputing from its runs alone would drop
    its process and machine levels (a merge of pr's 78 cases with one host's tf32x3 and
    fp32 run once left 52 cases with no machine level and tf32x3 8192^3's TFLOP/s machine
    noise at 0.1% where the stored calibration said 1.7%). The runs behind a part's figure
    are stored with it (`with_counts`)."""
    floors, runs = {}, {}
    for level in NOISE_LEVELS:   # the largest figure, and the runs behind that one
        held = [(getattr(n, level), _count(n, level, pooled))
                for n in (pooled, *stored) if getattr(n, level) is not None]
        if held:
            floors[level], runs[level] = max(held, key=lambda fc: fc[0])
    return with_counts(replace(pooled, **floors), runs)
