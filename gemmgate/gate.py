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
- Triton TFLOP/s: reported at the same level, explains drift, never decides alone.
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
from gemmgate.baseline_noise import behind, machine_of
from gemmgate.baselines import Baseline, BaselineCase
from gemmgate.compare import (
    IMPROVED,
    INCONCLUSIVE,
    MIN_JUDGED,
    NOISE_FACTOR,
    REGRESSED,
    UNCHANGED,
    Judgement,
    drift_note,
    judge,
    noise_factor,
    slower_bound,
    tolerance,
    within,
)
from gemmgate.context import RunContext
from gemmgate.execute import run_cases
from gemmgate.markdown import md_cell, md_row
from gemmgate.precision import get_mode
from gemmgate.results import REFERENCE, UNSUPPORTED, CaseResult
from gemmgate.tuning import config_name

PROCESS, MACHINE, ADVISORY = "process", "machine", "advisory"


@dataclass(frozen=True)
class CaseVerdict:
    key: str
    verdict: str                  # improved | unchanged | regressed | inconclusive | failed
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


def stored_level(base: BaselineCase, machine: str) -> str:
    """Which noise level judges this case against the stored baseline."""
    if machine in base.noise.machines:
        return PROCESS
    return MACHINE if base.noise.machine is not None else ADVISORY


def ab_tolerance(base: BaselineCase | None, floor: float) -> float:
    """The tolerance of a case's A/B figure (this kernel against the reference commit's,
    vs 1): its stored A/B noise scaled for the runs behind it, at least `floor`; the floor
    alone without a baseline case or A/B noise. `check --ab-ref` and `bisect` both."""
    if base is None:
        return tolerance(None, floor)
    noise = base.noise
    factor = noise_factor(behind(noise, "ab"), about_one=True)
    return tolerance(noise.ab, floor, factor)


def judge_case(result: CaseResult, base: BaselineCase, floor: float,
               machine: str = "") -> CaseVerdict:
    if not result.gate_passed:  # extra providers (--providers) never decide a verdict
        return CaseVerdict(result.key, "failed", None, None, "accuracy failure")
    noise = base.noise
    level = stored_level(base, machine)
    base_ratio, base_tf = base.ratio, base.providers["triton"].tflops
    if level == MACHINE:
        ratio_noise, tf_noise = noise.machine, noise.tflops_machine
        ratio_level = tf_level = MACHINE
    else:  # process level: against this machine's own calibration runs
        base_ratio, base_tf = base.ratio_on(machine), base.tflops_on(machine)
        # with one run per machine, only the pooled spread is known
        ratio_level = PROCESS if noise.ratio is not None else MACHINE
        tf_level = PROCESS if noise.tflops is not None else MACHINE
        ratio_noise = noise.ratio if noise.ratio is not None else noise.machine
        tf_noise = noise.tflops if noise.tflops is not None else noise.tflops_machine
    # each tolerance scaled for the runs its noise figure came from (`noise_factor`)
    ratio_runs = behind(noise, "ratio" if ratio_level == PROCESS else "machine")
    tf_runs = behind(noise, "tflops" if tf_level == PROCESS else "tflops_machine")
    ratio_factor, tf_factor = noise_factor(ratio_runs), noise_factor(tf_runs)
    ratio_j = None
    if base_ratio and result.ratio_samples:
        ratio_j = judge(result.ratio_samples, base_ratio,
                        tolerance(ratio_noise, floor, ratio_factor))
    tf_j = None
    tf_samples = [result.case.flops / (ms * 1e-3) / 1e12 for ms in result.round_ms("triton")
                  if ms > 0]
    if base_tf and tf_samples and result.case.flops:
        tf_j = judge(tf_samples, base_tf, tolerance(tf_noise, 2 * floor, tf_factor))
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
    runs, factor, of = (ratio_runs, ratio_factor, ratio_level) if ratio_j is not None \
        else (tf_runs, tf_factor, tf_level)
    notes = [f"stored: {level}-level ±{stored.tolerance:.1%}" + (
                 f" ({runs} {'machines' if of == MACHINE else 'runs'}: x{factor:g} the "
                 "spread)" if factor != NOISE_FACTOR else "")
             if stored else "not judged: no speed ratio or Triton TFLOP/s on both sides",
             "noise unmeasured: the floor (`baseline calibrate` measures it)"
             if stored and level == PROCESS
             and (ratio_noise if ratio_j is not None else tf_noise) is None else "",
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
    return CaseVerdict(result.key, verdict, ratio_j, tf_j, _join(*notes), ab=ab_j,
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


def _join(*notes: str) -> str:
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
    # a case new to the baseline has no speed to judge, but its accuracy fails the gate
    verdicts = tuple(judge_case(r, cases[r.key], floor, machine_of(r, env or {}))
                     if r.key in cases
                     else CaseVerdict(r.key, "failed", None, None,
                                      "accuracy failure (a case not in the baseline)")
                     if not r.gate_passed
                     else CaseVerdict(r.key, "new", None, None, "not in the baseline")
                     for r in results)
    return GateResult(verdicts=tuple(v for v in verdicts if v.verdict != "new"),
                      missing=tuple(sorted(set(cases) - run_keys)),
                      extra=tuple(sorted(run_keys - set(cases))))


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


def band(tol: float) -> str:
    """A tolerance as the band the verdict applies (compare.judge: a slowdown by the factor
    1+tol to a speedup by it): "±1.5%" where its sides agree to the digit shown, else
    "-9.1%/+10.0%" (a -9.4% change under "±10.0%" read as inside it; a review)."""
    lower = -slower_bound(tol)
    return f"±{tol:.1%}" if f"{lower:.1%}" == f"{tol:.1%}" else f"-{lower:.1%}/+{tol:.1%}"


GATE_HEAD = ("case", "verdict", "ratio change", "95% CI", "tolerance", "level",
             "TFLOP/s change", "A/B change", "note")


def verdict_row(v: CaseVerdict) -> tuple[str, ...]:
    """One case's cells under GATE_HEAD: the terminal table and Markdown share them."""
    r, t = v.ratio, v.tflops
    return (v.key, v.verdict + (" (re-measured)" if v.remeasured else ""),
            f"{r.change:+.2%}" if r else "—",
            f"[{r.ci_low:+.2%}, {r.ci_high:+.2%}]" if r else "—",
            band(r.tolerance) if r else "—", v.level or "—",
            f"{t.change:+.2%}" if t else "—",
            f"{v.ab.change:+.2%}" if v.ab else "—", v.note)


HELD_DOWN = ("sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake")


def clock_note(results: Sequence[CaseResult]) -> str:
    """One line when NVML said clocks were held down (power cap, thermal) after cases:
    their speed ratios then move between runs (docs/RUNNERS.md: lock clocks)."""
    counts: dict[str, int] = {}
    held = 0
    for r in results:
        reasons = [x for x in r.telemetry.get("clock_reasons", []) if x in HELD_DOWN]
        held += bool(reasons)
        for x in reasons:
            counts[x] = counts.get(x, 0) + 1
    if not held:
        return ""
    why = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    return (f"Clocks were held down after {held} of {len(results)} cases ({why}): speed "
            "ratios of power-heavy cases move between runs, so their tolerances are wide. "
            "Lock the runner's clocks (docs/RUNNERS.md) and recalibrate.")


SOFTWARE = ("triton", "torch", "cuda", "hip", "driver")   # what compiles and runs the kernels


def software_note(provenance: dict, env: dict) -> str:
    """One line where the baseline was measured on other software than this run
    (`SOFTWARE`, where both record it): a stored ratio then also moves with the compiler
    or the library (session 53: IEEE fp32's TMA tiles compiled to other code on triton
    3.9 than on 3.6), which an A/B against a reference kernel, timed in this process on
    this software, does not."""
    moved = [f"{k} {provenance[k]} -> {env[k]}" for k in SOFTWARE
             if provenance.get(k) and env.get(k) and str(provenance[k]) != str(env[k])]
    if not moved:
        return ""
    return (f"The baseline was measured on other software ({'; '.join(moved)}): a stored "
            "ratio's change can be the software's, not this commit's. An A/B (--ab-ref) "
            "separates them; a baseline calibrated on this software removes it.")


def _head(gate: GateResult, chip: str) -> str:
    return (f"### gemmgate check on {chip}: "
            + ("**FAILED**" if gate.failed else "passed")
            + f" — {gate.count('regressed')} regressed, {gate.count('failed')} failed "
              f"accuracy, {gate.count('improved')} improved, {gate.count('unchanged')} "
              f"unchanged, {gate.count('inconclusive')} inconclusive")


def markdown(gate: GateResult, chip: str, ab_ref: str | None = None,
             note: str = "") -> str:
    lines = [_head(gate, chip), ""]
    if ab_ref:
        lines += [f"A/B: each case also timed against the kernel at `{ab_ref[:12]}` in the "
                  "same process.", ""]
    if note:
        lines += [note, ""]
    lines += [md_row(GATE_HEAD), "|" + "---|" * len(GATE_HEAD)]
    lines += [md_row(verdict_row(v)) for v in gate.verdicts]
    if gate.missing:
        lines += ["", f"Not run (in the baseline): {', '.join(gate.missing)}"]
    if gate.extra:
        lines += ["", f"Not in the baseline (new cases): {', '.join(gate.extra)}"]
    return "\n".join(lines) + "\n"


CHANGED = ("failed", REGRESSED, INCONCLUSIVE, IMPROVED)   # in the order a comment lists them


def _arrow(v: CaseVerdict) -> str:
    j = v.ab or v.ratio or v.tflops  # an inconclusive case: which way it moved
    way = "↓?" if j and j.change < 0 else "↑?" if j and j.change > 0 else "?"
    return {"failed": "✗", REGRESSED: "↓", IMPROVED: "↑"}.get(v.verdict, way)


def _moved(j: Judgement | None) -> str:
    if j is None:
        return "—"
    arrow = "↑" if j.change > 0 else "↓" if j.change < 0 else "→"
    return f"{arrow} {j.change:+.2%} ({band(j.tolerance)})"


def _why(v: CaseVerdict) -> str:
    """The verdict policy's reason (docs/GATE.md), then the case's note."""
    by_ab = v.ab is not None and v.ab.verdict == v.verdict
    stored = "stored ratio" if v.ratio is not None else "Triton's stored TFLOP/s"
    why = {REGRESSED: "A/B: slower than the reference kernel" if by_ab else
           f"{stored} below the baseline at {v.level} level",
           IMPROVED: "A/B: faster than the reference kernel" if by_ab else
           f"{stored} above the baseline at {v.level} level",
           INCONCLUSIVE: _unsure(v),
           }.get(v.verdict, "")
    return md_cell(_join(why if why not in v.note else "", v.note))


def _unsure(v: CaseVerdict) -> str:
    """Why a case is inconclusive, of its causes (one reason said for all of them named
    causes that were not there; a review)."""
    stored = v.ratio or v.tflops
    if v.ab is not None and v.ab.verdict == INCONCLUSIVE:
        j = v.ab
    elif v.level == ADVISORY and stored is not None and stored.verdict in (REGRESSED,
                                                                         IMPROVED):
        return "beyond the tolerance at the advisory level (this GPU is not calibrated)"
    else:
        j = stored
    if j is None:
        return "no figure on both sides to compare"
    if j.verdict != INCONCLUSIVE:
        return ""
    lower, inside = slower_bound(j.tolerance), within(j.change, j.tolerance)
    if inside and j.ci_low < lower:
        return f"within the tolerance, but its CI reaches {j.ci_low:+.2%}, below {lower:+.1%}"
    if not inside and j.ci_low <= 0 <= j.ci_high:
        return "beyond the tolerance, but the CI reaches the baseline"
    return f"too few rounds for a 95% CI (a verdict needs {MIN_JUDGED})"


COMMENT_MAX = 60_000   # characters: GitHub refuses a comment of more than 65,536


def comment(gate: GateResult, chip: str, ab_ref: str | None = None, note: str = "") -> str:
    """A PR comment: the cases that changed (failed, regressed, inconclusive, improved)
    with arrows, A/B and stored ratio changes and the reason; then, folded, the rest."""
    changed = sorted((v for v in gate.verdicts if v.verdict in CHANGED),
                     key=lambda v: CHANGED.index(v.verdict))
    rest = [v for v in gate.verdicts if v.verdict not in CHANGED]
    lines = [_head(gate, chip), ""]
    if ab_ref:
        lines += [f"A/B against the kernel at `{ab_ref[:12]}`, in the same process.", ""]
    lines += ["| | case | verdict | A/B change | stored ratio change | level | reason |",
              "|---|---|---|---|---|---|---|"] if changed else ["No case changed."]
    lines += [f"| {_arrow(v)} | `{v.key}` | **{v.verdict}**"
              f"{' (re-measured)' if v.remeasured else ''} | {_moved(v.ab)} | "
              f"{_moved(v.ratio) if v.ratio or not v.tflops else 'TFLOP/s ' + _moved(v.tflops)}"
              f" | {v.level or '—'} | {_why(v)} |" for v in changed]
    if note:
        lines += ["", note]
    if rest:
        lines += ["", f"<details><summary>{len(rest)} other case(s)</summary>", "",
                  md_row(GATE_HEAD), "|" + "---|" * len(GATE_HEAD),
                  *(md_row(verdict_row(v)) for v in rest), "", "</details>"]
    for what, keys in (("Not run (in the baseline)", gate.missing),
                       ("Not in the baseline (new cases)", gate.extra)):
        lines += ["", f"{what}: {', '.join(keys)}"] if keys else []
    return _capped(lines)


def _capped(lines: list[str]) -> str:
    """The comment's lines, cut to COMMENT_MAX characters at a line, saying how many were
    left out (420 verdicts made 91,594 characters, which GitHub refuses; a review)."""
    text = "\n".join(lines) + "\n"
    if len(text) <= COMMENT_MAX:
        return text
    kept, size = [], 0
    for line in lines:
        if size + len(line) + 1 > COMMENT_MAX - 200:
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept) + (f"\n\n… {len(lines) - len(kept)} more line(s) left out "
                              "(GitHub's comment limit): the whole gate is in the check's "
                              "--json and the job's summary.\n")


def annotations(gate: GateResult) -> list[str]:
    """GitHub workflow commands: one ::error per regression or accuracy failure."""
    out = []
    for v in gate.verdicts:
        if v.verdict == REGRESSED and v.ab and v.ab.verdict == REGRESSED:
            out.append(f"::error title=gemmgate regression::{v.key}: " + _gh(
                f"{v.ab.change:+.2%} against the reference kernel in the same process"
                f"{_span(v.ab)}"))
        elif v.verdict == REGRESSED and (v.ratio or v.tflops):
            what = "Triton/vendor speed ratio" if v.ratio else "Triton's TFLOP/s"
            j = v.ratio or v.tflops
            out.append(f"::error title=gemmgate regression::{v.key}: " + _gh(
                f"{what} {j.change:+.2%}{_span(j)}" + ("" if v.ratio else f"; {v.note}")))
        elif v.verdict == REGRESSED:
            out.append(f"::error title=gemmgate regression::{v.key}: {_gh(v.note)}")
        elif v.verdict == "failed":
            out.append(f"::error title=gemmgate accuracy::{v.key}: {_gh(v.note)}")
    return out


def _span(j: Judgement) -> str:
    return f" (CI {j.ci_low:+.2%}..{j.ci_high:+.2%}, tolerance {band(j.tolerance)})"


def _gh(text: str) -> str:
    """A workflow command's message: %, CR and LF escaped as GitHub reads them (a
    reference kernel's multi-line failure cut the ::error, and its next line was read
    as a command of its own; a review)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
