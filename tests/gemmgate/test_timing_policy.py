"""gemmgate/timing_policy.py: the policy's validation, the rounds' order and the stopping
rule (pure: no device, no timing of real work)."""

import time
from collections import Counter

import pytest

from gemmgate import timing_policy
from gemmgate.timing_policy import (
    TimingPolicy,
    cpu_policy,
    finished,
    order_cycle,
    round_cap,
    round_order,
)


def _policy(**kw):
    base = dict(method="wall", warmup=1, min_rounds=3, max_rounds=20, target_rel_ci=0.05,
                budget_s=5.0, batch=1)
    return TimingPolicy(**{**base, **kw})


def test_defaults_and_cpu_policy_are_valid():
    p = TimingPolicy()
    assert p.method == "graph" and p.min_rounds <= p.max_rounds
    c = cpu_policy()
    assert c.method == "wall" and 1 <= c.min_rounds <= c.max_rounds and c.budget_s > 0


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(method="cupti"), "unknown timing method 'cupti'"),
    (dict(min_rounds=11, max_rounds=10), "min_rounds <= max_rounds"),
    (dict(min_rounds=0), "min_rounds"),
    (dict(budget_s=0.0), "budget_s"),
    (dict(budget_s=-1.0), "budget_s"),
    (dict(target_rel_ci=0.0), "target_rel_ci"),
    (dict(batch=0), "batch"),
    (dict(warmup_s=-0.1), "warmup_s"),
    (dict(block=0), "block"),
])
def test_policy_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TimingPolicy(**kwargs)


def test_unknown_method_message_lists_every_method():
    with pytest.raises(ValueError) as e:
        TimingPolicy(method="cupti")
    for method in timing_policy.METHODS:
        assert method in str(e.value)


@pytest.mark.parametrize("providers, method, batch, max_rounds, min_rounds, want", [
    (3, "graph", 5, 200, 10, 180),   # a device asks every 5 rounds: cycles of 6 meet at 30
    (3, "wall", 1, 200, 10, 198),
    (4, "wall", 1, 30, 15, 24),      # the CPU policy's 30, four providers
    (2, "graph", 5, 200, 10, 200),
    (3, "graph", 5, 20, 10, 20),     # no whole cycle fits: max_rounds
    (3, "wall", 1, 200, 200, 200),   # none at or above min_rounds: max_rounds
])
def test_the_round_cap_ends_a_whole_order_cycle(providers, method, batch, max_rounds,
                                                min_rounds, want):
    """Each provider is first, middle and last alike at the cap too (three stopped at 200
    rounds 2 into a cycle, four at 30 6 into one; a review)."""

    policy = TimingPolicy(method=method, batch=batch, max_rounds=max_rounds,
                          min_rounds=min_rounds)
    cap = round_cap(policy, providers)
    assert cap == want
    if cap != max_rounds:
        names = [f"p{i}" for i in range(providers)]
        for place in range(providers):
            assert len(set(Counter(round_order(names, r)[place] for r in range(cap)).values())) == 1


def test_the_stopping_rule_counts_a_blocks_calls_as_one_sample():
    """Six rounds of two calls in a row, the two alike: over the 12 calls the median's CI
    is within 0.5 of it (2 to 5 about 3.5), over the 6 rounds it is not (1 to 6): the
    rounds are the independent samples, so the run goes on."""
    calls = [float(x) for x in (1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6)]
    samples = {"a": calls, "b": calls}
    kw = dict(min_rounds=2, max_rounds=100, target_rel_ci=0.5, budget_s=1e9)
    started = time.perf_counter()
    assert finished(samples, _policy(**kw), started)             # 12 lone calls: done
    assert not finished(samples, _policy(block=2, **kw), started)  # 6 rounds: not yet


def test_three_providers_take_every_place_alike():
    """With triton, vendor, reference the vendor sat in the middle of every round (never
    first after the batch's spin, never after itself); each rotation, forward and
    reversed, gives each provider each place equally over 2 x 3 rounds."""

    names = ["triton", "vendor", "reference"]
    rounds = [round_order(names, r) for r in range(6)]
    for place in range(3):
        assert Counter(r[place] for r in rounds) == Counter({n: 2 for n in names})
    assert [round_order(["a", "b"], r) for r in range(4)] == [["a", "b"], ["b", "a"]] * 2


@pytest.mark.parametrize("k", [2, 3, 4])
def test_a_run_stops_only_where_every_provider_held_every_place_alike(k):
    """An A/B's three providers stopped at 10 rounds (the minimum, an even count), the
    vendor in the middle 4 times to Triton's 2: the stop waits for `round_order`'s cycle.
    Constant samples (CI 0): done at the first whole cycle past min_rounds, not before."""

    names = [f"p{i}" for i in range(k)]
    cycle = order_cycle(k)
    for place in range(k):   # over one cycle, each provider holds each place alike
        held = Counter(round_order(names, r)[place] for r in range(cycle))
        assert set(held.values()) == {cycle // k} and set(held) == set(names)
    policy = _policy(min_rounds=10, max_rounds=100, budget_s=1e9)
    started = time.perf_counter()
    first = next(n for n in range(10, 100) if n % cycle == 0)
    for n in range(10, first + 1):
        assert finished({p: [1.0] * n for p in names}, policy, started) == (n == first)


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_each_round_starts_with_the_provider_the_last_one_ended_with(k):
    """So no provider follows another more often than the reverse: the turns between
    rounds are a provider run twice (as with two), and within rounds each rotation runs
    both ways. For three, each ordered pair (itself too) twice a cycle."""

    names = [f"p{i}" for i in range(k)]
    cycle = [round_order(names, r) for r in range(order_cycle(k))]
    for r, rnd in enumerate(cycle):
        assert rnd[-1] == cycle[(r + 1) % len(cycle)][0], (r, cycle)
    if k == 3:
        calls = [n for rnd in cycle for n in rnd]
        pairs = Counter(zip(calls, calls[1:] + calls[:1]))
        assert set(pairs.values()) == {2} and len(pairs) == 9


@pytest.mark.parametrize("k", [3, 4, 5, 6, 7])
def test_each_provider_follows_each_other_alike_up_to_six(k):
    """Within a cycle's rounds, each ordered pair of providers is next to each other
    equally often (twice), each provider holds each place equally often, and each round
    starts with the provider the last one ended with. With four by rotations, triton never
    followed the reference nor the vendor an extra (a review); from seven, rotations still
    (only neighbours in `names` follow each other), as documented."""
    names = [f"p{i}" for i in range(k)]
    cycle = [round_order(names, r) for r in range(order_cycle(k))]
    assert all(sorted(rnd) == names for rnd in cycle)
    for place in range(k):
        assert Counter(rnd[place] for rnd in cycle) == Counter({n: 2 for n in names})
    assert all(rnd[-1] == cycle[(r + 1) % len(cycle)][0] for r, rnd in enumerate(cycle))
    pairs = Counter((rnd[i], rnd[i + 1]) for rnd in cycle for i in range(k - 1))
    if k <= 6:
        assert len(pairs) == k * (k - 1) and set(pairs.values()) == {2}
    else:
        assert len(pairs) == 2 * k   # neighbours both ways only


@pytest.mark.parametrize("policy, providers, floor", [
    (TimingPolicy(), 2, 10), (TimingPolicy(), 3, 30),
    (cpu_policy(), 2, 16), (cpu_policy(), 3, 18),
])
def test_the_rounds_every_case_times_whatever_the_budget(policy, providers, floor):
    """The floors `--budget`'s help and the README state: with the budget spent, a run
    stops first at these rounds (a device asks every `batch` rounds)."""
    from dataclasses import replace

    spent = replace(policy, budget_s=1e-9)
    step = 1 if policy.method == "wall" else policy.batch
    n = step
    while not finished({f"p{i}": [float(r % 7 + 1) for r in range(n)]
                        for i in range(providers)}, spent, time.perf_counter() - 1.0):
        n += step
    assert n == floor
