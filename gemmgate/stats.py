"""Pure statistics over lists of floats: no torch, no numpy, unit-tested on synthetic data.

Medians with distribution-free confidence intervals (order statistics of the binomial)
and geometric means. Timing samples are
skewed (a long right tail from interrupts and clock changes), so everything here is
rank-based rather than mean/variance-based.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _sorted(xs: Sequence[float]) -> list[float]:
    """The sample sorted; NaN last. `sorted` leaves NaN wherever the sort's comparisons
    put it, so a median of one NaN among four values was 1.5 or NaN by their order, and a
    CI of [NaN, 1 x 9] was (1, 1): converged (a review). A sample with a NaN has NaN for
    its quantiles and CI (numpy's answer): `_nan` says so."""
    if not xs:
        raise ValueError("empty sample")
    return sorted(xs, key=lambda x: (x != x, x))


def _nan(s: list[float]) -> bool:
    return s[-1] != s[-1]   # (NaN sorts last)


def quantile(xs: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default 'linear' method)."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} outside [0, 1]")
    s = _sorted(xs)
    if _nan(s):
        return math.nan
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    if pos == lo or s[lo] == s[hi]:  # no interpolation: keeps inf intact (inf*0 is nan)
        return s[lo]
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median(xs: Sequence[float]) -> float:
    return quantile(xs, 0.5)


def quantiles(xs: Sequence[float], qs: Sequence[float] = (0.1, 0.25, 0.5, 0.75, 0.9)
              ) -> dict[str, float]:
    """{'p10': ..., 'p50': ...}."""
    return {f"p{round(q * 100)}": quantile(xs, q) for q in qs}


def median_ci(xs: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free CI of the median: sorted samples (j, n-1-j), 0-indexed, whose
    coverage is 1 - 2 P(Bin(n, 1/2) <= j); j is the largest with P(...) <= (1-conf)/2.
    Below n = 6 even j = 0 falls short and the CI is the whole sample range."""
    s = _sorted(xs)
    if _nan(s):
        return math.nan, math.nan
    n = len(s)
    alpha = (1 - confidence) / 2
    # P(X = j) in logs, by the recurrence C(n, j+1) = C(n, j) (n - j) / (j + 1): exact big
    # integers (math.comb / 2**n) took 0.27 s at n = 4,000 and 3.5 s at 10,000, at every
    # stopping check of a long or blocked run (a review); the same ranks (a test)
    tail, j, log_p = 0.0, 0, -n * math.log(2.0)
    while j < n // 2:
        tail += math.exp(log_p)          # now P(X <= j)
        if tail > alpha:
            break
        log_p += math.log(n - j) - math.log(j + 1)
        j += 1
    j = max(j - 1, 0)                    # the last j whose tail stayed within alpha
    return s[j], s[n - 1 - j]


MAX_BLOCK = 1000   # `--block`'s largest: each round times every provider so many calls in a
# row, and a round is never cut short by the budget (a baseline's block of 10^30 ran on)


def block_medians(xs: Sequence[float], block: int) -> list[float]:
    """Each run of `block` consecutive samples as one, its median: calls of one provider
    timed in a row (`--block`) share one stretch of clock and heat, so it is rounds that
    are independent, not calls (counted one a call, 10 calls a block left a 95% CI of the
    median covering it 48% of the time in tests/gemmgate/test_stats.py's simulation). A
    short last run counts as one too. `block` 1: the samples themselves."""
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}")
    if block == 1:
        return list(xs)
    return [median(xs[i:i + block]) for i in range(0, len(xs), block)]


def relative_ci_halfwidth(xs: Sequence[float]) -> float:
    """Half the width of the median's CI over the median: the stopping rule's measure;
    infinite below 6 samples, where no pair of order statistics covers the median with 95%
    (median_ci's whole range would then let a short run stop)."""
    if len(xs) < 6:
        return math.inf
    lo, hi = median_ci(xs)
    m = median(xs)
    return (hi - lo) / 2 / m if m > 0 else math.inf


def geomean(xs: Sequence[float]) -> float:
    vals = [x for x in xs if x > 0 and math.isfinite(x)]
    if not vals:
        return math.nan
    return math.exp(sum(math.log(x) for x in vals) / len(vals))
