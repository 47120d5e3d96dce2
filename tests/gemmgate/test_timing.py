"""gemmgate/timing.py: the CPU ("wall") measuring loop; the device methods in the tests
marked gpu (the policy and the rounds' order: test_timing_policy.py).
"""

import time
from collections import Counter

import pytest

from gemmgate import timing
from gemmgate.stats import median
from gemmgate.timing import measure
from gemmgate.timing_policy import TimingPolicy, cpu_policy

FLUSH = 4096  # bytes: a tiny flush buffer keeps these tests fast


def _policy(**kw):
    base = dict(method="wall", warmup=1, min_rounds=3, max_rounds=20, target_rel_ci=0.05,
                budget_s=5.0, batch=1)
    return TimingPolicy(**{**base, **kw})


def _bimodal(limit: int = 5000):
    """A callable whose duration alternates between ~0 and ~1000x more work, so its
    median's CI never gets narrow: the target cannot be met. It raises past `limit`
    calls, so a loop that ignores its budget fails instead of hanging."""
    state = {"n": 0}

    def fn():
        state["n"] += 1
        if state["n"] > limit:
            raise RuntimeError(f"called {limit} times: the loop did not stop")
        if state["n"] % 2:
            sum(range(20000))
    return fn


# --- measure(method="wall") ------------------------------------------------------------------

def test_measure_nothing():
    assert measure({}, cpu_policy(), flush_bytes=FLUSH, device="cpu") == {}


@pytest.mark.parametrize("policy", [cpu_policy(), _policy(min_rounds=5, max_rounds=12)],
                         ids=["cpu_policy", "custom"])
def test_measure_wall_shape_of_result(policy):
    fns = {"a": lambda: sum(range(100)), "b": lambda: sorted(range(100, 0, -1))}
    out = measure(fns, policy, flush_bytes=FLUSH, device="cpu")
    assert list(out) == ["a", "b"]
    assert len(out["a"]) == len(out["b"])
    assert policy.min_rounds <= len(out["a"]) <= policy.max_rounds
    assert all(isinstance(x, float) and x > 0 for v in out.values() for x in v)


def test_measure_interleaves_providers():
    calls = []
    fns = {"A": lambda: calls.append("A"), "B": lambda: calls.append("B")}
    policy = _policy(warmup=2, min_rounds=4, max_rounds=4)
    out = measure(fns, policy, flush_bytes=FLUSH)
    assert len(out["A"]) == len(out["B"]) == 4
    warm, timed = calls[:4], calls[4:]
    assert sorted(warm) == ["A", "A", "B", "B"]
    assert timed == ["A", "B", "B", "A", "A", "B", "B", "A"]


def test_measure_hands_back_what_the_timed_calls_ran():
    """`timed` is emptied (also where nothing is timed), then holds each provider's timed
    callable: on the CPU the call itself (under "graph", its replay: a test marked gpu)."""
    fns = {"A": lambda: 1, "B": lambda: 2}
    timed = {"stale": None}
    measure(fns, _policy(min_rounds=2, max_rounds=2), flush_bytes=FLUSH, timed=timed)
    assert timed == fns and all(timed[k] is fns[k] for k in fns)
    measure({}, _policy(), flush_bytes=FLUSH, timed=timed)
    assert timed == {}


def test_measure_wall_is_in_milliseconds():
    fns = {"sleepy": lambda: time.sleep(0.002), "fast": lambda: None}
    out = measure(fns, cpu_policy(), flush_bytes=FLUSH, device="cpu")
    # time.sleep(0.002) never returns early; milliseconds, so median >= 2.0.
    assert median(out["sleepy"]) >= 2.0
    assert median(out["fast"]) < 1.0


def test_measure_stops_at_max_rounds_when_target_unreachable():
    """At the last whole `round_order` cycle within max_rounds: 14 of 15 for two providers
    (the 15th put A first once more than B)."""
    fns = {"a": _bimodal(), "b": _bimodal()}
    policy = _policy(min_rounds=3, max_rounds=15, target_rel_ci=1e-9, budget_s=60.0)
    out = measure(fns, policy, flush_bytes=FLUSH)
    assert len(out["a"]) == len(out["b"]) == 14


def test_measure_stops_early_when_target_met():
    # Any finite half-width meets a target of 1e6 (relative): it stops at min_rounds, or
    # the round after where that is odd (each provider first as often as another), and
    # not before the CI exists (6 samples)
    fns = {"a": lambda: sum(range(1000))}
    policy = _policy(min_rounds=6, max_rounds=1000, target_rel_ci=1e6)
    assert len(measure(fns, policy, flush_bytes=FLUSH)["a"]) == 6
    policy = _policy(min_rounds=7, max_rounds=1000, target_rel_ci=1e6)
    assert len(measure(fns, policy, flush_bytes=FLUSH)["a"]) == 8


def test_measure_budget_stops_it():
    fns = {"a": _bimodal(), "b": _bimodal()}
    policy = _policy(min_rounds=2, max_rounds=10**9, target_rel_ci=1e-9, budget_s=0.05)
    t0 = time.perf_counter()
    out = measure(fns, policy, flush_bytes=FLUSH)
    elapsed = time.perf_counter() - t0
    assert elapsed < 30.0   # (the budget is 0.05 s; a loaded machine stalls for seconds)
    assert len(out["a"]) == len(out["b"])
    assert 2 <= len(out["a"]) < 10**9


def test_budget_does_not_cut_below_min_rounds():
    fns = {"slow": lambda: sum(range(20000))}
    policy = _policy(min_rounds=5, max_rounds=100, target_rel_ci=1e-9, budget_s=1e-6)
    assert len(measure(fns, policy, flush_bytes=FLUSH)["slow"]) == 6   # (an even count)


def test_block_times_each_provider_several_calls_in_a_row():
    order = []
    fns = {"a": lambda: order.append("a"), "b": lambda: order.append("b")}
    got = measure(fns, _policy(warmup=0, min_rounds=4, max_rounds=4, block=2),
                  flush_bytes=FLUSH)
    assert order == list("aabb" "bbaa") * 2  # rounds, not samples: A A B B, B B A A, ...
    assert len(got["a"]) == len(got["b"]) == 8
    order.clear()   # a block the size of min_rounds: still both orders (it stopped at one)
    measure(fns, _policy(warmup=0, min_rounds=2, max_rounds=100, block=15,
                         target_rel_ci=1e6), flush_bytes=FLUSH)
    # both orders, and six rounds: a CI needs six samples, and a block's calls are one
    assert "".join(order) == "a" * 15 + ("b" * 30 + "a" * 30) * 2 + "b" * 30 + "a" * 15


def test_device_clock_ratio_rounds_take_turns_first(monkeypatch):
    """time_ratio sampled the vendor first every round: with a duty below 1 the vendor
    always ran right after the idle rest and Triton right after the vendor."""
    from gemmgate.timing import DeviceClock

    clock, seen = DeviceClock(), []
    monkeypatch.setattr(clock, "_sample", lambda fn, flush: seen.append(fn()) or 1.0)
    for _ in range(4):
        assert clock.time_ratio(lambda: "fn", lambda: "ref") == 1.0
    assert seen == ["ref", "fn", "fn", "ref"] * 2


@pytest.mark.gpu
def test_gpu_an_eager_sample_holds_the_host_path_and_a_graph_sample_does_not():
    """`eager` times each call from the host, synchronized: a call that spends 1 ms on
    the host before its launch measures about that at least (time.sleep never returns
    early);
    `graph` replays what the call enqueued, so the same call measures the kernel alone."""
    import torch

    x = torch.zeros(1024, device="cuda")

    def slow_host() -> None:
        time.sleep(0.001)   # the host's own path, before the launch
        x.add_(1.0)

    def plain() -> None:
        x.add_(1.0)

    fns = {"slow_host": slow_host, "plain": plain}
    kw = dict(min_rounds=6, max_rounds=6, warmup=2, warmup_s=0.0, budget_s=5.0)
    eager = measure(fns, TimingPolicy(method="eager", **kw), flush_bytes=1 << 20)
    graph = measure(fns, TimingPolicy(method="graph", **kw), flush_bytes=1 << 20)
    # (>= 0.9: the start event runs a launch latency after it is recorded)
    assert min(eager["slow_host"]) >= 0.9 and median(eager["plain"]) < 0.5
    assert median(graph["slow_host"]) < 0.5


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["graph", "eager"])
def test_gpu_what_the_timed_calls_ran_is_handed_back(method):
    """Under "graph" the timed callable handed back is the captured graph's replay: it
    returns the captured call's output and replays its work (an add, once a call);
    under "eager" it is the call itself."""
    import torch

    x = torch.zeros(4, device="cuda")

    def add():
        return x.add_(1.0)

    timed: dict = {}
    kw = dict(min_rounds=6, max_rounds=6, warmup=1, warmup_s=0.0, budget_s=5.0)
    measure({"a": add}, TimingPolicy(method=method, **kw), flush_bytes=1 << 20,
            timed=timed)
    assert (timed["a"] is add) == (method == "eager")
    before = float(x[0])
    got = timed["a"]()
    torch.cuda.synchronize()
    assert got.data_ptr() == x.data_ptr() and float(x[0]) == before + 1


@pytest.mark.gpu
def test_gpu_eager_samples_ask_for_the_stream_once_not_in_each_window(monkeypatch):
    """The events are recorded on the stream asked once per measurement: `record()`
    without one asks `torch.cuda.current_stream()` (a Python Stream made) inside each
    eager sample's window, after the call."""
    import torch

    x = torch.zeros(1024, device="cuda")
    asked = []
    real = torch.cuda.current_stream
    monkeypatch.setattr(torch.cuda, "current_stream",
                        lambda *a, **k: asked.append(1) or real(*a, **k))
    kw = dict(min_rounds=6, max_rounds=6, warmup=1, warmup_s=0.0, budget_s=5.0)
    out = measure({"a": lambda: x.add_(1.0), "b": lambda: x.add_(2.0)},
                  TimingPolicy(method="eager", **kw), flush_bytes=1 << 20)
    assert len(out["a"]) >= 6 and len(asked) <= 2   # (was two a sample: 24 and more)


def test_an_a_a_comparison_holds_no_carry_over_of_the_vendor_s_call(monkeypatch):
    """Triton and the reference the same kernel, and every call right after the vendor's
    3% slower (power or clock carried over): the reference/Triton median is 1. With each
    rotation taken forward then reversed, the reference followed the vendor in 14 of 30
    rounds, Triton in 10, and the A/A median was 1.015 (a review)."""
    now, prev = [0.0], [None]
    monkeypatch.setattr(timing.time, "perf_counter", lambda: now[0])

    def provider(name):
        def call():
            now[0] += 1e-3 * (1.03 if prev[0] == "vendor" else 1.0)
            prev[0] = name
        return call

    fns = {n: provider(n) for n in ("triton", "vendor", "reference")}
    got = measure(fns, _policy(min_rounds=30, max_rounds=30, budget_s=1e9), flush_bytes=FLUSH)
    assert median([r / t for t, r in zip(got["triton"], got["reference"])]) == 1.0


@pytest.mark.parametrize("providers", [2, 3, 4, 5, 6, 7])
def test_each_provider_is_first_after_a_batch_s_spin_alike(monkeypatch, providers):
    """The device loop's order of work with torch.cuda stood in for (no device, nothing
    timed for real): which provider's call comes right after each batch's spin. Five
    providers (a cycle of 10 rounds) at 5 rounds a batch started every batch at round 0
    or 5: triton and one extra were first after the spin in half the batches each, the
    vendor never (a review). Stopped by the budget and at the round cap alike."""
    import torch

    seen = []

    class Event:
        def __init__(self, enable_timing=False):
            self.t = 0.0

        def record(self, stream=None):
            self.t = len(seen)

        def elapsed_time(self, other):
            return 1.0

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: seen.append("spin"))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: None)
    monkeypatch.setattr(timing, "graphed", lambda fn, warmup: fn)
    names = ["triton", "vendor", "reference", "inductor", "vendor_fast", "mine:f", "x:g"]
    fns = {n: (lambda n=n: seen.append(n)) for n in names[:providers]}
    for kw in (dict(budget_s=1e-9), dict(budget_s=1e9, target_rel_ci=1e-12)):
        seen.clear()
        policy = TimingPolicy(method="graph", warmup=0, warmup_s=0.0, **kw)
        out = measure(fns, policy, flush_bytes=FLUSH, device="cpu")
        rounds = len(out["triton"])
        after = Counter(seen[i + 1] for i, x in enumerate(seen) if x == "spin")
        assert set(after) == set(fns) and len(set(after.values())) == 1, (rounds, after)
