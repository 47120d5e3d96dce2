"""How a case is timed, apart from the device: the policy (method, rounds, budget, the
target interval) and the rounds it runs: their order and when they stop. Pure: no torch
(gemmgate/timing.py measures under it).

Providers are interleaved (A B, B A, A B, ...; three or more take each rotation forward
and reversed, so none sits in the middle of every round, each round starting with the
provider the last one ended with, so each follows every other alike) so clock and
thermal drift hit all alike, and rounds run, in pairs, until every provider's median is
known to `target_rel_ci` (half-width of its 95% distribution-free CI over the median), or
`max_rounds`, or the time budget is spent.

`block` > 1 times each provider that many calls in a row (A A A B B B, B B B A A A, ...).
Under a power cap, strict alternation couples the providers: extra power drawn by one
lowers the clock for the other too (H200: a 2.6% Triton slowdown made cuBLAS 0.8-2.1%
slower in the same rounds). Blocks of several milliseconds let each run at the clock its
own draw allows, at some cost in drift cancellation.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from gemmgate.stats import MAX_BLOCK, block_medians, relative_ci_halfwidth

METHODS = ("graph", "eager", "wall")


@dataclass(frozen=True)
class TimingPolicy:
    method: str = "graph"
    warmup: int = 3
    min_rounds: int = 10
    max_rounds: int = 200
    target_rel_ci: float = 0.005
    budget_s: float = 2.0
    batch: int = 5            # rounds between host syncs (device methods)
    flush: bool = True
    warmup_s: float = 0.1     # device methods: run the calls this long before timing
    block: int = 1            # timed calls of one provider in a row before the next

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown timing method {self.method!r}; use one of "
                             f"{', '.join(METHODS)}")
        if not 1 <= self.min_rounds <= self.max_rounds:
            raise ValueError("need 1 <= min_rounds <= max_rounds")
        if self.budget_s <= 0 or self.target_rel_ci <= 0 or self.batch < 1:
            raise ValueError("budget_s, target_rel_ci and batch must be positive")
        if self.warmup_s < 0:
            raise ValueError("warmup_s must be >= 0")
        if not 1 <= self.block <= MAX_BLOCK:
            raise ValueError(f"block must be 1 to {MAX_BLOCK}")


def cpu_policy() -> TimingPolicy:
    """The interpreter is slow: few rounds, a short budget. At least 15 rounds: the
    median's 95% CI then ignores the 3 most extreme samples on each side, and the CPU
    BLAS side (tens of microseconds) is at the mercy of thread-pool wake-ups and OS
    interrupts (seen here: 2 of 9 rounds 5-10x slow)."""
    return TimingPolicy(method="wall", warmup=1, min_rounds=15, max_rounds=30,
                        target_rel_ci=0.05, budget_s=1.0, batch=1)


def order_cycle(providers: int) -> int:
    """Rounds after which `round_order` has put every provider in every place equally often:
    2 for two (A B, B A), 2 x their count for more."""
    return 2 if providers <= 2 else 2 * providers


def batch_rounds(policy: TimingPolicy, providers: int) -> int:
    """Rounds a device enqueues behind one spin (gemmgate/timing.py), the stop asked after
    each batch: `batch`, lowered until it shares no factor with `order_cycle`, so the
    batches start at every round of the cycle in turn and each provider is first after
    the spin alike (1 for "wall": no spin, asked every round). Five providers (a cycle of
    10) at batch 5 started every batch at round 0 or 5: triton and one extra came first
    after the spin, the vendor never (a review)."""
    if policy.method == "wall":
        return 1
    cycle, batch = order_cycle(providers), policy.batch
    while math.gcd(batch, cycle) > 1:
        batch -= 1
    return batch


def round_cap(policy: TimingPolicy, providers: int) -> int:
    """The rounds a run stops at when nothing else stops it: max_rounds, lowered to the
    last whole `round_order` cycle that a stop can land on (a device asks every `batch`
    rounds) and that is not below min_rounds; max_rounds itself where none fits. (At
    max_rounds 200 three providers stopped 2 rounds into a cycle, and four at the CPU's
    30 stopped 6 in: the middle place 14-16 times to the first's 7-8; a review.)"""
    step = math.lcm(order_cycle(providers), batch_rounds(policy, providers))
    cap = policy.max_rounds // step * step
    return cap if cap >= policy.min_rounds else policy.max_rounds


def finished(samples: dict[str, list[float]], policy: TimingPolicy, started: float) -> bool:
    """Whether to stop, counted in rounds (a round: each provider's `block` calls): at
    `round_cap`; never below min_rounds or within `round_order`'s cycle (each provider is first
    in as many rounds as another: with block 15 the CPU policy stopped after one round, A
    A ... B B, and an odd count gave Triton the extra first place; an A/B's three stopped
    at 10 rounds, the vendor in the middle 4 times to Triton's 2, a review. On a device,
    where the stop is asked every `batch_rounds` rounds, three providers stop at 30 rounds
    at the least: each also first after the batch's spin alike); else on the budget or when
    every median is known to the target."""
    n = min(len(v) for v in samples.values()) // policy.block
    if n >= round_cap(policy, len(samples)):
        return True
    if n < policy.min_rounds or n % order_cycle(len(samples)):
        return False
    if time.perf_counter() - started > policy.budget_s:
        return True
    return all(relative_ci_halfwidth(block_medians(v, policy.block)) <= policy.target_rel_ci
               for v in samples.values())   # a round's calls in a row are one sample


# Four to six providers: a cycle of 2n rounds (indexes into `names`) in which each provider
# holds each place twice, each ordered pair of providers is next to each other twice, and
# each round starts with the provider the last one ended with; found by a backtracking
# search (each property checked in tests/gemmgate/test_timing_policy.py). Rotations (as
# for three) put only neighbours in `names` next to each other: with triton, vendor,
# reference and an extra, triton never followed the reference nor the vendor the extra,
# so the extra's carry-over fell on triton's side of the gated ratio (a review, session 80).
_CYCLES = {
    4: ("0123", "3012", "2031", "1302", "2103", "3210", "0231", "1320"),
    5: ("01234", "40213", "30142", "23104", "41302", "24031", "12043", "32410", "03421",
        "14320"),
    6: ("012345", "501234", "402135", "531420", "024513", "315042", "240351", "153204",
        "430521", "143052", "254103", "325410"),
}


def round_order(names: list[str], rnd: int) -> list[str]:
    """Round `rnd`'s provider order: A B, B A for two; for three, each rotation once
    forward and once reversed (every provider in every place alike: with triton, vendor,
    reference the vendor once never came first, after the batch's spin, nor after itself),
    in the order that starts each round with the provider the last one ended with (T R V,
    V T R, R V T, T V R, R T V, V R T); for four to six, `_CYCLES`. So every call follows
    every provider alike: each ordered pair twice a cycle, and a round's turn is a provider
    run twice, as with two. Taken as rotation forward then reversed, the turns went T->V,
    V->R, R->T one way only: in an A/B (triton, vendor, reference) the reference came right
    after the vendor 14 times in 30 rounds, Triton 10, so whatever the vendor's call leaves
    behind (power, clock) fell on one side of an A/A comparison: +1.5% from a 3% carry-over
    (a review). From seven, rotations as for three: every place alike, but only neighbours
    in `names` (and the last and first) follow each other."""
    n = len(names)
    if n <= 2:
        return list(names) if rnd % 2 == 0 else names[::-1]
    if n in _CYCLES:
        return [names[int(i)] for i in _CYCLES[n][rnd % (2 * n)]]
    i = rnd % (2 * n)
    # rotation k (names[k:] + names[:k]) goes names[k] -> names[k-1]; reversed, back. The
    # reversed ones k = 1 .. n-1, 0 chain names[0] -> names[1] -> ... -> names[0], then the
    # forward ones k = 0, n-1, .. 1 the other way round (an Euler circuit of the turns)
    if i < n:
        k = (i + 1) % n
        return (names[k:] + names[:k])[::-1]
    k = (n - (i - n)) % n
    return names[k:] + names[:k]
