"""Regression verdicts: current measurement against a baseline, noise-aware. Pure.

Each case is judged on two figures:
- the speed ratio vendor_time / triton_time, from per-round paired samples (both
  providers timed in the same round, interleaved): clock and thermal drift hit both, so
  it cancels. This figure gates.
- Triton's absolute TFLOP/s: reported with its own interval and tolerance, so drift that
  slows both providers shows up as "drift", not as a regression.

change = current median / baseline median - 1, with the distribution-free 95% CI of the
current median (order statistics). The tolerance comes from the baseline's measured A/A
noise (spread of the median across independent runs), never below a floor. The band it
makes is multiplicative, from 1/(1+tol) to 1+tol of the baseline: a slowdown by a factor
is as far out as a speedup by it (a linear band of ±tol let nothing regress once tol
reached 100%, which a 2-run calibration's x48.2 gives from a 1.43% spread, 2.1% before
the spread was scaled in log space; a review):
- regressed:    change < 1/(1+tol) - 1 and the whole CI is below the baseline (CI high < 0)
- improved:     change > +tol and the whole CI is above it
- unchanged:    within the band, with the CI not reaching below it
- inconclusive: beyond the band but the CI still reaches the baseline, or within it but
  the CI reaches below it (a slowdown past tol not ruled out: `bisect` had this rule and
  `check` not, so one set of samples was "inconclusive" there and "unchanged" here)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gemmgate import stats

IMPROVED, UNCHANGED, REGRESSED, INCONCLUSIVE = "improved", "unchanged", "regressed", \
    "inconclusive"
DEFAULT_FLOOR = 0.015   # 1.5%: below this, medians of the same case differ by noise alone
# tolerance = max(floor, scaled(A/A spread, factor)), about factor x spread for small
# spreads (the factors were derived for that linear threshold). The spread is the largest
# deviation of the fresh-process runs' medians from their median (5 runs of normal noise:
# 1.56 sigma on average), and 2.5 x that spread is passed, one-sided, by 1.15% of new runs.
# Measured on the H200 (docs/PERF.md): 1.5 gave 4 false alarms in 195 A/A case checks,
# 2.5 gives 1 in 189 on the same data.
NOISE_FACTOR = 2.5
# Fewer runs make the spread a poorer estimate of the noise (3 runs: 1.24 sigma on average,
# and often far less), so the same factor passes more A/A runs: 2 runs 19%, 3 runs 5.0%, 4
# runs 2.6%. RUNS_FACTOR[n] is the factor that holds the false-alarm rate NOISE_FACTOR
# gives at 5 runs, for a spread of n runs about their median (process, machine level) and
# for one about 1 (the A/B level: `ab_noise`); never below NOISE_FACTOR (more runs keep
# it, as measured). Monte Carlo of normal noise, 10^6 draws a cell (session 57; re-derived
# in tests/gemmgate/test_compare.py).
RUNS_FACTOR = {2: 48.2, 3: 5.55, 4: 3.43}
RUNS_FACTOR_AB = {2: 7.46, 3: 4.02, 4: 2.99}
# The same rate where the figure compared with is one run of its own, not the median of
# the runs behind the spread: after `baseline update` (its one run, the calibration's
# spread kept) or on a machine that gave one run to a merged calibration. The 5-run
# factor passed 2.4% of A/A runs so, twice the rate (a review, session 77). Monte Carlo
# of normal noise, 2*10^6 draws a cell; from 7 runs NOISE_FACTOR holds it.
ONE_RUN_FACTOR = {2: 55.1, 3: 6.78, 4: 4.33, 5: 3.21, 6: 2.82}


@dataclass(frozen=True)
class Judgement:
    verdict: str
    change: float          # current / baseline - 1 (higher-is-better figure)
    ci_low: float          # CI of change
    ci_high: float
    tolerance: float

    def to_json(self) -> dict:
        return {"verdict": self.verdict, "change": self.change, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "tolerance": self.tolerance}


TOL_MAX = 1e6   # a spread of 100% or more: a slowdown no smaller than a million-fold


def scaled(noise: float, factor: float) -> float:
    """A spread scaled by `factor` in log space, as a relative change: (1 - noise)^-factor
    - 1. The factors were derived for a threshold of factor x spread below the centre,
    and the band's slow side is a slowdown by the factor 1 + tol (`slower_bound`), which
    lies closer to zero than -tol: with tol = factor x spread, A/A checks regressed more
    the wider the spread (a Monte Carlo of `judge`, 5 runs of lognormal noise: 1.0% at
    sigma 1%, 1.35% at 5%, 1.5-1.7% at 10%, against 1.15%; a review, session 80). The
    spread is the largest |x/m - 1| of either sign; taken as a slow run's (ln 1/(1-d), the
    larger log deviation of the two), its log scaled by the factor holds the rate at any
    sigma: 0.9-1.1% (lognormal), 1.0-1.4% (normal), 40,000-400,000 checks a cell. About factor x
    noise for small spreads (2% x 2.5: 5.18%, not 5%)."""
    if noise >= 1:   # (a run at 2x the median or more: the slow side is not bounded)
        return TOL_MAX
    x = -factor * math.log1p(-noise)
    return TOL_MAX if x >= math.log1p(TOL_MAX) else math.expm1(x)


def tolerance(noise: float | None, floor: float = DEFAULT_FLOOR,
              factor: float = NOISE_FACTOR) -> float:
    """Threshold for a relative change: the measured A/A noise, scaled (`scaled`), with a
    floor."""
    if noise is None or not math.isfinite(noise):
        return floor
    return max(floor, scaled(noise, factor))


def noise_factor(runs: int, about_one: bool = False, one_run: bool = False) -> float:
    """The factor a spread of `runs` runs is scaled by (RUNS_FACTOR; `about_one`: an A/B
    spread, RUNS_FACTOR_AB; `one_run`: the figure compared with is a single run's,
    ONE_RUN_FACTOR); NOISE_FACTOR where the runs are enough or not known (0: a figure
    stored without the runs it came from)."""
    if one_run and runs >= 2:
        return ONE_RUN_FACTOR.get(runs, NOISE_FACTOR)
    return (RUNS_FACTOR_AB if about_one else RUNS_FACTOR).get(runs, NOISE_FACTOR)


def aa_noise(run_medians: Sequence[float]) -> float:
    """A/A noise of a figure from its medians over independent runs: the largest
    relative deviation from their median (0 for a single run)."""
    if not run_medians:
        raise ValueError("no runs")
    m = stats.median(run_medians)
    return max(abs(x / m - 1) for x in run_medians) if m > 0 else math.inf


def ab_noise(run_medians: Sequence[float]) -> float:
    """A/A noise of the A/B figure (reference time / current time, the same kernel on
    both sides) from its medians over independent runs: the largest relative deviation
    from 1, the value an A/A comparison should give."""
    if not run_medians:
        raise ValueError("no runs")
    return max(abs(x - 1) for x in run_medians)


def is_floor(x) -> bool:
    """Whether `x` can be a tolerance's floor: a fraction between 0 and 1 (--floor, and
    the floor a check file records)."""
    return type(x) in (int, float) and 0 < x < 1


def slower_bound(tol: float) -> float:
    """The change below which a figure is slower than a tolerance `tol` allows: a
    slowdown by the factor 1+tol (-1.48% for 1.5%, -50% for 100%)."""
    return 1 / (1 + tol) - 1


def band(tol: float) -> str:
    """A tolerance as the band the verdict applies (`judge`: a slowdown by the factor 1+tol
    to a speedup by it), to the digits a change is shown with (`:+.2%`): "-1.48%/+1.50%"
    ("±1.5%" showed a -1.48% regression as inside it, and "-9.1%/+10.0%" before that a
    -9.4% one under "±10.0%"; reviews); "±x" only where the sides agree to those digits."""
    lower = abs(slower_bound(tol))   # (-0.0 at 0 printed "--0.00%")
    return f"±{tol:.2%}" if f"{lower:.2%}" == f"{tol:.2%}" else f"-{lower:.2%}/+{tol:.2%}"


def within(change: float, tol: float) -> bool:
    """Whether a change lies in the band a tolerance makes: `slower_bound` to +tol."""
    return slower_bound(tol) <= change <= tol


MIN_JUDGED = 6   # samples a verdict needs (stats.median_ci: below, its CI is no 95% one)


def judge(current: Sequence[float], baseline: float, tol: float) -> Judgement:
    """Verdict on a higher-is-better figure (speed ratio or TFLOP/s samples)."""
    if baseline <= 0 or not math.isfinite(baseline):
        raise ValueError(f"baseline figure must be positive, got {baseline}")
    if not current:
        raise ValueError("no current samples")
    med = stats.median(current)
    lo, hi = stats.median_ci(current)
    change, ci_low, ci_high = med / baseline - 1, lo / baseline - 1, hi / baseline - 1
    if len(current) < MIN_JUDGED:   # no pair of order statistics covers the median with
        # 95% (the whole range of 3 covers it 75% of the time; of 1, never): `judge([0.97],
        # 1.0, 0.015)` was "regressed" on one sample (a review)
        return Judgement(INCONCLUSIVE, change, ci_low, ci_high, tol)
    if within(change, tol):
        verdict = UNCHANGED if ci_low >= slower_bound(tol) else INCONCLUSIVE
    elif change < 0:
        verdict = REGRESSED if ci_high < 0 else INCONCLUSIVE
    else:
        verdict = IMPROVED if ci_low > 0 else INCONCLUSIVE
    return Judgement(verdict, change, ci_low, ci_high, tol)


def _own_share(ratio_change: float, tflops_change: float) -> bool:
    """Whether Triton's own TFLOP/s moved with the ratio, by half its change or more: its
    TFLOP/s is judged at twice the floor, so a 2% slowdown of Triton's own is "unchanged"
    there, and the note said the vendor had run faster (the vendor had not moved; a
    review)."""
    return ratio_change * tflops_change > 0 and abs(tflops_change) * 2 >= abs(ratio_change)


def drift_note(ratio: Judgement, tflops: Judgement | None) -> str:
    """The ratio gates; absolute TFLOP/s explains: both providers moving is drift."""
    if tflops is None:
        return ""
    if tflops.verdict in (REGRESSED, IMPROVED) and ratio.verdict == UNCHANGED:
        # the vendor moved too only where the ratio moved under half of Triton's own: a
        # Triton-only slowdown whose ratio tolerance is wide was "both providers slower
        # (drift?): not a regression" (a review)
        if abs(ratio.change) * 2 <= abs(tflops.change):
            return ("both providers slower (clock/thermal drift?): not a regression"
                    if tflops.verdict == REGRESSED else "both providers faster (drift)")
        moved = "regressed" if tflops.verdict == REGRESSED else "improved"
        return (f"Triton's own TFLOP/s {moved} ({tflops.change:+.1%}) and the ratio moved "
                f"with it ({ratio.change:+.1%}), within its tolerance here: not judged")
    if tflops.verdict == UNCHANGED and ratio.verdict in (REGRESSED, IMPROVED) and \
            not _own_share(ratio.change, tflops.change):
        # the verdict stands (a kernel slower on a faster machine looks the same), but
        # the reader sees which side moved: H200, 2026-12-02, tf32x3 8192^3 on a new host,
        # ratio -1.9% with Triton's TFLOP/s -0.1%, cuBLAS's IEEE fp32 ~1.8% faster
        side = "faster" if ratio.verdict == REGRESSED else "slower"
        return (f"Triton's own TFLOP/s unchanged ({tflops.change:+.1%}): the vendor ran "
                f"{side} here")
    return ""
