"""The regression gate: this run's cases against the chip's baseline, and the verdict
policy (stated in README and docs/GATE.md; tested in tests/gemmgate/test_gate.py).

Accuracy failures fail the gate. Each case present on both sides is judged on up to
three figures (gemmgate/compare.py: median change, its 95% CI, a noise-derived tolerance):
- A/B (`--ab-ref`): current against the reference commit's kernel, in the same process
  on the same inputs, tolerance from the baseline's A/B noise. **This is the PR gate.**
- the stored baseline's speed ratio (vendor time / Triton time), at the noise level that
  applies to the GPU the case ran on:
  - "process": the GPU is one the baseline was calibrated on: process-level noise;
  - "machine": another GPU, and the baseline holds machine-level noise (calibrations
    from two or more GPUs): machine-level noise;
  - "advisory": another GPU and no machine-level noise measured: the judgement is shown
    but decides nothing (a single machine's noise does not describe a fleet: H200,
    2026-11-30, 16.9% of A/A case checks on another host said "improved").
- Triton TFLOP/s: reported at the same level, explains drift, never decides alone where
  there is a speed ratio; a case with no vendor figure (the vendor unsupported) is
  judged on it, at twice the floor (said in its note: "no ratio: judged on TFLOP/s").
Verdict: "regressed" when A/B says so, or the stored ratio says so at a deciding level;
"improved" when A/B says so (with A/B) or the stored ratio does (without A/B), and
nothing says regressed: "improved" obeys the same tolerance as "regressed". With only an
advisory stored judgement and no A/B, a change beyond it is "inconclusive".
Deciding levels: process always; machine only without A/B. With A/B on another GPU, the
A/B verdict stands against a machine-level stored judgement (shown, not gated): the two
kernels timed side by side measured no change, so a stored difference is this machine's
offset or a change before the reference commit, which the nightly (no A/B) judges. H200,
2026-11-30: one uncalibrated GPU sat 3-4% below the stored bf16 2048^2-p8 ratio (machine
tolerance 2.0%) in 5 of 5 A/A checks whose A/B change was within 0.4%.
Cases absent from the baseline or from the run are listed, not fatal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from gemmgate.accuracy import PASS
from gemmgate.baseline_noise import machine_of
from gemmgate.baselines import Baseline, BaselineCase
from gemmgate.compare import (
    INCONCLUSIVE,
    NOISE_FACTOR,
    REGRESSED,
    UNCHANGED,
    Judgement,
    band,
    drift_note,
    judge,
)
from gemmgate.context import RunContext
from gemmgate.execute import run_cases
from gemmgate.gate_levels import (
    ADVISORY,
    MACHINE,
    PROCESS,
    ab_tolerance,
    stored_level,
    stored_tolerance,
)
from gemmgate.precision import get_mode
from gemmgate.results import REFERENCE, UNSUPPORTED, CaseResult
from gemmgate.tuning import config_name

# An empty output (M or N is 0): accuracy is checked, speed is not judged (both sides time a
# call that computes nothing, and no ratio is kept: results.CaseResult.paired). Its own
# verdict, neither a change nor "inconclusive", keeps it out of a PR comment's changes.
EMPTY = "empty"
EMPTY_NOTE = "empty output (M or N is 0): nothing to time; accuracy checked"


@dataclass(frozen=True)
class CaseVerdict:
    key: str
    verdict: str       # improved | unchanged | regressed | inconclusive | failed | empty
    ratio: Judgement | None
    tflops: Judgement | None
    note: str = ""
    remeasured: bool = False
    ab: Judgement | None = None   # current vs the reference commit's kernel, same process
    level: str = ""               # the stored judgement's noise level: process|machine|advisory

    def to_json(self) -> dict:
        return {"id": self.key, "verdict": self.verdict, "note": self.note,
                "remeasured": self.remeasured, "level": self.level,
                "ratio": self.ratio.to_json() if self.ratio else None,
                "tflops": self.tflops.to_json() if self.tflops else None,
                "ab": self.ab.to_json() if self.ab else None}


@dataclass(frozen=True)
class GateResult:
    verdicts: tuple[CaseVerdict, ...]
    missing: tuple[str, ...]      # in the baseline, not run
    extra: tuple[str, ...]        # run, not in the baseline

    def count(self, verdict: str) -> int:
        return sum(v.verdict == verdict for v in self.verdicts)

    @property
    def failed(self) -> bool:
        return any(v.verdict in (REGRESSED, "failed") for v in self.verdicts)


def judge_case(result: CaseResult, base: BaselineCase, floor: float,
               machine: str = "") -> CaseVerdict:
    if not result.gate_passed:  # extra providers (--providers) never decide a verdict
        return CaseVerdict(result.key, "failed", None, None, "accuracy failure")
    if result.empty_output:
        return CaseVerdict(result.key, EMPTY, None, None, EMPTY_NOTE)
    level = stored_level(base, machine)
    base_ratio, base_tf = base.ratio, base.providers["triton"].tflops
    if level != MACHINE:   # process level: against this machine's own calibration runs
        base_ratio, base_tf = base.ratio_on(machine), base.tflops_on(machine)
    ratio_t = stored_tolerance(base, level, machine, floor)
    tf_t = stored_tolerance(base, level, machine, floor, "tflops")
    ratio_j = None
    if base_ratio and result.ratio_samples:
        ratio_j = judge(result.ratio_samples, base_ratio, ratio_t.tolerance)
    tf_j = None
    tf_samples = [result.case.flops / (ms * 1e-3) / 1e12 for ms in result.round_ms("triton")
                  if ms > 0]
    if base_tf and tf_samples and result.case.flops:
        tf_j = judge(tf_samples, base_tf, tf_t.tolerance)
    ref = result.providers.get(REFERENCE)   # a reference that failed accuracy is no
    # yardstick: a wrong, fast one made a fix "regressed" (exit 1; bisect calls the same
    # case failed; a review). Its note says so; the stored judgement decides.
    ab_j = judge(result.ab_samples, 1.0, ab_tolerance(base, floor)) \
        if result.ab_samples and ref is not None and ref.accuracy == PASS else None
    stored = ratio_j if ratio_j is not None else tf_j  # no vendor figure: TFLOP/s
    verdict = _policy(stored.verdict if stored else UNCHANGED, level,
                      ab_j.verdict if ab_j else None)
    if stored is None and ab_j is None:   # no figure on either side to compare
        verdict = INCONCLUSIVE
    used = ratio_t if ratio_j is not None else tf_t
    runs, factor, of = used.runs, used.factor, used.level
    notes = [f"stored: {level}-level {band(stored.tolerance)}" + (
                 f" ({runs} {'machines' if of == MACHINE else 'runs'}: x{factor:g} the "
                 "spread in log space)" if factor != NOISE_FACTOR else "")   # ("x5.55 the
             # spread" read as linear: 5.55 x 6.46% is 35.9%, the band +44.9%; a review)
             if stored else "not judged: no speed ratio or Triton TFLOP/s on both sides",
             "noise unmeasured: the floor (`baseline calibrate` measures it)"
             if stored and level == PROCESS
             and used.noise is None else "",
             "no ratio: judged on TFLOP/s" if ratio_j is None and tf_j else "",
             "stored judgement advisory: this GPU/machine is not in the calibration and "
             "machine noise is unmeasured (gemmgate baseline merge)" if level == ADVISORY and stored
             and stored.verdict != UNCHANGED else "",
             "stored judgement not gated: A/B decides on a GPU outside the calibration"
             if level == MACHINE and ab_j is not None and stored
             and stored.verdict != UNCHANGED else "",
             drift_note(ratio_j, tf_j) if ratio_j else "", _tile_note(result, base)]
    notes += [f"{n} (not gated): {p.accuracy}" for n in result.extras
              if (p := result.providers[n]).accuracy not in (PASS, UNSUPPORTED)]
    if ref is not None and ref.accuracy not in (PASS, UNSUPPORTED):
        notes.insert(0, f"A/B: the reference kernel failed ({ref.accuracy}: {ref.message})")
    ref_tile = result.telemetry.get("reference_config")
    if ab_j is not None and ref_tile and ref_tile != result.telemetry.get("triton_config"):
        notes.insert(0, f"A/B: the reference kernel ran tile {ref_tile}")
    if ab_j is not None and ab_j.verdict == REGRESSED:
        notes.insert(0, f"A/B: slower than the reference kernel by {-ab_j.change:.2%}")
    return CaseVerdict(result.key, verdict, ratio_j, tf_j, join_notes(*notes), ab=ab_j,
                       level=level)


def _policy(stored: str, level: str, ab: str | None) -> str:
    """The verdict policy (module docstring) from the stored and the A/B verdicts."""
    deciding = level == PROCESS or (level == MACHINE and ab is None)
    if ab == REGRESSED or (deciding and stored == REGRESSED):
        return REGRESSED
    if ab is not None:
        return ab
    if deciding:
        return stored
    return UNCHANGED if stored == UNCHANGED else INCONCLUSIVE


def join_notes(*notes: str) -> str:
    """Notes as one text, the empty ones left out."""
    return "; ".join(n for n in notes if n)


def _tile_note(result: CaseResult, base: BaselineCase) -> str:
    """Say when the Triton tile differs from the baseline's, or was pinned for an older
    kernel version: a change of tile explains a change of speed."""
    now, then = result.telemetry.get("tuning"), base.tuning
    if not now or not then:
        return ""
    if now["config"] != then["config"]:
        return (f"tile {config_name(now['config'])} "
                f"({now['source']}), baseline had {config_name(then['config'])}")
    return "tile pinned for an older kernel" if now.get("stale") else ""


def compare_run(results: Sequence[CaseResult], baseline: Baseline, floor: float,
                env: dict | None = None) -> GateResult:
    """Every case against the baseline; `env` (the run's environment record) tells on
    which machine each case ran (host, GPU UUID)."""
    cases = baseline.cases
    run_keys = {r.key for r in results}
    verdicts = tuple(judge_case(r, cases[r.key], floor, machine_of(r, env or {}))
                     if r.key in cases else _new_case(r, floor) for r in results)
    return GateResult(verdicts=tuple(v for v in verdicts if v.verdict != "new"),
                      missing=tuple(sorted(set(cases) - run_keys)),
                      extra=tuple(sorted(run_keys - set(cases))))


def _new_case(result: CaseResult, floor: float) -> CaseVerdict:
    """A case the baseline lacks: its accuracy fails the gate; its A/B figure (`--ab-ref`)
    needs no stored one and is judged at the floor, as bisect judges it (a PR that added a
    case to its set and slowed the kernel there 9x passed; a review); else it is "new",
    listed, not judged."""
    if not result.gate_passed:
        return CaseVerdict(result.key, "failed", None, None,
                           "accuracy failure (a case not in the baseline)")
    ref = result.providers.get(REFERENCE)
    if result.ab_samples and ref is not None and ref.accuracy == PASS:
        ab_j = judge(result.ab_samples, 1.0, ab_tolerance(None, floor))
        note = "not in the baseline: A/B alone decides"
        if ab_j.verdict == REGRESSED:
            note = join_notes(f"A/B: slower than the reference kernel by {-ab_j.change:.2%}",
                              note)
        return CaseVerdict(result.key, ab_j.verdict, None, None, note, ab=ab_j)
    return CaseVerdict(result.key, "new", None, None, "not in the baseline")


def remeasure(ctx: RunContext, results: Sequence[CaseResult], gate: GateResult,
              baseline: Baseline, floor: float, env: dict | None = None,
              last_words: Callable[[], None] | None = None):
    """Measure suspected regressions once more, with the run's own context (its devices,
    reference kernel and injected slowdown); the second measurement decides.
    `last_words`: as execute.run_cases'."""
    suspects = {v.key for v in gate.verdicts if v.verdict == REGRESSED}
    if not suspects:
        return list(results), gate
    again_of = [r for r in results if r.key in suspects]
    redone = run_cases(ctx, [(get_mode(r.mode), r.case) for r in again_of],
                       last_words=last_words)
    by_key = {r.key: r for r in redone}
    fresh = [by_key.get(r.key, r) for r in results]
    again = compare_run(fresh, baseline, floor, env)
    verdicts = tuple(replace(v, remeasured=v.key in suspects) for v in again.verdicts)
    return fresh, replace(again, verdicts=verdicts)
