"""The noise level a stored figure is judged at, and the tolerance the gate gives it there
(the verdict policy itself: gemmgate/gate.py). One home, without torch: the gate's
verdicts, `bisect`'s A/B and a baseline write's wide-noise warning (cli_merge) all ask it,
so they cannot drift apart."""

from __future__ import annotations

from dataclasses import dataclass

from gemmgate.baseline_noise import behind
from gemmgate.baseline_schema import BaselineCase
from gemmgate.compare import noise_factor, tolerance

PROCESS, MACHINE, ADVISORY = "process", "machine", "advisory"


def stored_level(base: BaselineCase, machine: str) -> str:
    """Which noise level judges this case against the stored baseline."""
    if machine in base.noise.machines:
        return PROCESS
    # a case with no stored ratio (the vendor unsupported) is judged on Triton's TFLOP/s:
    # its machine-level figure is that one's (it was "advisory", "machine noise
    # unmeasured", on a merge of three machines, and a 2x slowdown passed; a review)
    held = base.noise.machine if base.ratio is not None else base.noise.tflops_machine
    return MACHINE if held is not None else ADVISORY


@dataclass(frozen=True)
class StoredTolerance:
    """A stored figure's tolerance as the gate applies it at one level."""
    noise: float | None   # the spread compared with (None: unmeasured, the floor alone)
    level: str            # the level that spread is of: PROCESS or MACHINE
    runs: int             # the runs (machines) behind it
    factor: float         # its log-space factor (`compare.noise_factor`)
    tolerance: float


def stored_tolerance(base: BaselineCase, level: str, machine: str, floor: float,
                     figure: str = "ratio") -> StoredTolerance:
    """The tolerance `judge_case` gives the stored `figure` ("ratio", or "tflops" at
    twice the floor) of a case checked on `machine` at `level` (`stored_level`; advisory
    is judged as process). The one home of that choice: the wide-noise warning of a
    baseline write (cli_merge.warn_wide) asks it, so it cannot drift from the gate's.
    - machine level: the machine-level spread;
    - else the process-level spread, and with one run per machine only the pooled one
      (the machine level's);
    - scaled for the runs behind it, and for a one-run figure where the figure compared
      with is one run alone (after `baseline update`, or a machine's one run of a merge:
      its spread's factor passed twice the false alarms it is set for, a review; 5
      machines of one run: 2.4% of A/A checks regressed, 1.1% with the one-run factor;
      Monte Carlo, session 79)."""
    n = base.noise
    tf = figure == "tflops"
    pooled = n.tflops_machine if tf else n.machine
    own = n.tflops if tf else n.ratio
    noise, of = (pooled, MACHINE) if level == MACHINE or own is None else (own, PROCESS)
    runs = behind(n, ("tflops" if tf else "ratio") if of == PROCESS
                  else ("tflops_machine" if tf else "machine"))
    factor = noise_factor(runs, one_run=base.runs_on(machine, figure) == 1)
    return StoredTolerance(noise, of, runs, factor,
                           tolerance(noise, 2 * floor if tf else floor, factor))


def ab_tolerance(base: BaselineCase | None, floor: float) -> float:
    """The tolerance of a case's A/B figure (this kernel against the reference commit's,
    vs 1): its stored A/B noise scaled for the runs behind it, at least `floor`; the floor
    alone without a baseline case or A/B noise. `check --ab-ref` and `bisect` both."""
    if base is None:
        return tolerance(None, floor)
    noise = base.noise
    factor = noise_factor(behind(noise, "ab"), about_one=True)
    return tolerance(noise.ab, floor, factor)
