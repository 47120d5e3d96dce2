"""The only module that times device work.

Methods:
- "graph": each provider's call is captured once in a CUDA graph and replayed between
  two device events; the L2 flush before it keeps the GPU busy while the host enqueues,
  so the figure is device time only (host launch cost hidden).
- "eager": flush, synchronize, then events around a plain call: the GPU waits for the
  host, so the figure includes host launch cost (Python, autotuner lookup, driver).
- "wall": CPU path; perf_counter around the call after flushing the LLC.

In the device methods the host never sits inside a timed region: each batch of timed
calls starts behind a GPU-side spin (torch.cuda._sleep, nvbench's "blocking kernel"
idea) long enough for the host to enqueue the whole batch, so every start event is
reached with the flush and the call already queued behind it. Without it, a 10 us kernel
after a 30 us flush is timed with whatever launch gap the host left (H200: per-round
jitter of +-1 us and 2-3x outliers on bf16 1024^3).

Providers are interleaved (A B, B A, A B, ...; three or more take each rotation forward
and reversed, so none sits in the middle of every round, each round starting with the
provider the last one ended with, so each follows every other alike) so clock and
thermal drift hit all alike, and rounds run, in pairs, until every provider's median is
known to `target_rel_ci` (half-width of its 95% distribution-free CI over the median), or
`max_rounds`, or the time budget is spent.
The flush writes a buffer twice the chip's L2/LLC, so every timed call starts cold.

`block` > 1 times each provider that many calls in a row (A A A B B B, B B B A A A, ...).
Under a power cap, strict alternation couples the providers: extra power drawn by one
lowers the clock for the other too (H200: a 2.6% Triton slowdown made cuBLAS 0.8-2.1%
slower in the same rounds). Blocks of several milliseconds let each run at the clock its
own draw allows, at some cost in drift cancellation.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from gemmgate.stats import MAX_BLOCK, block_medians, relative_ci_halfwidth
from gemmgate.stop_signal import STOPS

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


# Spin per timed call in a batch, in GPU cycles (~100 us at 2 GHz): more than the host
# needs to enqueue one flush + two events + one graph launch from Python (~30-40 us).
SPIN_CYCLES_PER_CALL = 200_000


def order_cycle(providers: int) -> int:
    """Rounds after which `_order` has put every provider in every place equally often:
    2 for two (A B, B A), 2 x their count for more."""
    return 2 if providers <= 2 else 2 * providers


def round_cap(policy: TimingPolicy, providers: int) -> int:
    """The rounds a run stops at when nothing else stops it: max_rounds, lowered to the
    last whole `_order` cycle that a stop can land on (a device asks every `batch`
    rounds) and that is not below min_rounds; max_rounds itself where none fits. (At
    max_rounds 200 three providers stopped 2 rounds into a cycle, and four at the CPU's
    30 stopped 6 in: the middle place 14-16 times to the first's 7-8; a review.)"""
    step = math.lcm(order_cycle(providers), 1 if policy.method == "wall" else policy.batch)
    cap = policy.max_rounds // step * step
    return cap if cap >= policy.min_rounds else policy.max_rounds


def _done(samples: dict[str, list[float]], policy: TimingPolicy, started: float) -> bool:
    """Whether to stop, counted in rounds (a round: each provider's `block` calls): at
    `round_cap`; never below min_rounds or within `_order`'s cycle (each provider is first
    in as many rounds as another: with block 15 the CPU policy stopped after one round, A
    A ... B B, and an odd count gave Triton the extra first place; an A/B's three stopped
    at 10 rounds, the vendor in the middle 4 times to Triton's 2, a review. On a device,
    where the stop is asked every `batch` rounds, three providers stop at 30 rounds at
    the least: each also first after the batch's spin alike); else on the budget or when
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


def _order(names: list[str], rnd: int) -> list[str]:
    """Round `rnd`'s provider order: A B, B A for two; for more, each rotation once
    forward and once reversed (every provider in every place alike: with triton, vendor,
    reference the vendor once never came first, after the batch's spin, nor after itself),
    in the order that starts each round with the provider the last one ended with (for
    three, T R V, V T R, R V T, T V R, R T V, V R T). So every call follows every
    provider alike: for three, each ordered pair twice a cycle, and a round's turn is a
    provider run twice, as with two. Taken as rotation forward then reversed, the turns
    went T->V, V->R, R->T one way only: in an A/B (triton, vendor, reference) the
    reference came right after the vendor 14 times in 30 rounds, Triton 10, so whatever
    the vendor's call leaves behind (power, clock) fell on one side of an A/A comparison:
    +1.5% from a 3% carry-over (a review)."""
    n = len(names)
    if n <= 2:
        return list(names) if rnd % 2 == 0 else names[::-1]
    i = rnd % (2 * n)
    # rotation k (names[k:] + names[:k]) goes names[k] -> names[k-1]; reversed, back. The
    # reversed ones k = 1 .. n-1, 0 chain names[0] -> names[1] -> ... -> names[0], then the
    # forward ones k = 0, n-1, .. 1 the other way round (an Euler circuit of the turns)
    if i < n:
        k = (i + 1) % n
        return (names[k:] + names[:k])[::-1]
    k = (n - (i - n)) % n
    return names[k:] + names[:k]


class ProviderError(Exception):
    """A provider's call raised while it was timed (warm-up, capture or a timed round):
    `name` says whose, so the caller fails that provider alone. One that failed now and
    then was not found again by timing each alone, and the whole case failed (exit 3; a
    review). The try around each call costs nothing until it raises (Python >= 3.11)."""

    def __init__(self, name: str, error: BaseException) -> None:
        super().__init__(f"{name}: {type(error).__name__}: {error}")
        self.name, self.error = name, error


def _named(name: str, call: Callable[[], object]) -> object:
    try:
        return call()
    except STOPS:
        raise
    except BaseException as e:   # a provider's own BaseException too: it crashed the run
        raise ProviderError(name, e) from e   # (exit 1, no --json; a review)


def measure(fns: dict[str, Callable[[], object]], policy: TimingPolicy, *,
            flush_bytes: int, device: str = "cuda",
            timed: dict[str, Callable[[], object]] | None = None) -> dict[str, list[float]]:
    """Interleaved timing of zero-argument callables; returns milliseconds per provider,
    aligned by round (sample i of each provider comes from the same round).

    `timed`, where given, is emptied and gets the callable each provider's timed calls
    ran: under "graph" its captured graph's replay (which returns what the call returned
    while captured, its output, written again by each replay), else the call itself. So
    the caller can check the timed work itself: an eager call is not the graph that was
    timed."""
    if timed is not None:
        timed.clear()
    if not fns:
        return {}
    if policy.method == "wall":
        if timed is not None:
            timed.update(fns)
        return _measure_wall(fns, policy, flush_bytes)
    return _measure_device(fns, policy, flush_bytes, device, timed)


def flush_buffer(flush_bytes: int, device: str = "cpu"):
    """The buffer zeroed before each timed call to evict the cache (at least one float)."""
    import torch

    return torch.empty(max(flush_bytes // 4, 1), dtype=torch.float32, device=device)


def _measure_wall(fns, policy, flush_bytes) -> dict[str, list[float]]:
    buf = flush_buffer(flush_bytes)
    for name, fn in fns.items():
        for _ in range(policy.warmup):
            _named(name, fn)
    samples: dict[str, list[float]] = {k: [] for k in fns}
    names = list(fns)
    started = time.perf_counter()
    rnd = 0
    while not _done(samples, policy, started):
        for name in _order(names, rnd):
            for _ in range(policy.block):
                if policy.flush:
                    buf.zero_()
                t0 = time.perf_counter()
                try:   # (inline, not `_named`: no call added inside the timed span)
                    fns[name]()
                except STOPS:
                    raise
                except BaseException as e:
                    raise ProviderError(name, e) from e
                samples[name].append((time.perf_counter() - t0) * 1e3)
        rnd += 1
    return samples


def graphed(fn: Callable[[], object], warmup: int) -> Callable[[], object]:
    """Capture fn in a CUDA graph (after warm-up on a side stream, as torch requires);
    returns the graph's replay, which returns what fn returned while captured (its output,
    which each replay writes again)."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(max(warmup, 1)):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    torch.cuda.synchronize()

    def replay() -> object:
        graph.replay()
        return out
    return replay


class DeviceClock:
    """A timer for pytest-benchmark that reads device time, not the host's.

    pytest-benchmark times a round as timer() after minus timer() before, and takes a
    timer through its public `@pytest.mark.benchmark(timer=...)` marker. This clock only
    moves when `time()` runs a call: L2 flushed first, then CUDA events around the call,
    exactly one gemmgate sample; so a round's figure is the GPU's time for the call, and
    neither host jitter nor the Python between rounds enters it.

    `duty` < 1 leaves the GPU idle after each call for (1/duty - 1) times the call's
    time, so a series of calls stays under the chip's power cap: back to back, a heavy
    GEMM on the H200 runs at whatever clock the cap allows at that moment, and its time
    moved 5-17% between unchanged runs (session 7); below the cap the clock is the
    boost clock and the time repeats. (A fixed idle gap of 8 ms after every call was
    worse: the H200 lowers its clock within milliseconds of idling, and small cases
    moved up to 139% between unchanged runs, session 7.)

    `gap_ms` > 0 keeps the GPU busy after each call with a
    spin kernel (`torch.cuda._sleep`: an active GPU at little power) for that long,
    untimed and without the host waiting for it: a test's rounds then span at least
    rounds x gap_ms at a steady clock, never idle, so a short clock dip moves some
    rounds, not the median (session 8, H200: with duty 0.25 and 10 ms, two unchanged
    pytest-benchmark compares moved no case more than 2.0%). `cycles_per_ms` converts
    (gemmgate.slowdown.cycles_per_ms).
    """

    __name__ = "DeviceClock"   # how pytest-benchmark names the timer in its JSON

    def __init__(self, duty: float = 1.0, gap_ms: float = 0.0,
                 cycles_per_ms: float | None = None) -> None:
        if not 0 < duty <= 1:
            raise ValueError(f"duty must be in (0, 1], got {duty}")
        if not 0 <= gap_ms <= 1000:
            raise ValueError(f"gap_ms must be in [0, 1000], got {gap_ms}")
        if gap_ms > 0 and not (cycles_per_ms or 0) > 0:
            raise ValueError("gap_ms needs the GPU's cycles_per_ms")
        self.seconds = 0.0
        self.duty, self.gap_ms, self.cycles_per_ms = duty, gap_ms, cycles_per_ms
        self._flip = False   # time_ratio: which call goes first this round

    def __call__(self) -> float:
        return self.seconds

    def advance(self, ms: float) -> None:
        if not ms >= 0:  # also rejects NaN
            raise ValueError(f"a device time must be >= 0 ms, got {ms}")
        self.seconds += ms / 1e3

    def time(self, fn: Callable[[], object], flush=None) -> float:
        """Run fn once (behind a GPU-side spin and the zeroing of `flush`, a buffer
        larger than L2, as `measure` does) between two device events; advance the clock
        by the elapsed ms and return them."""
        ms = self._sample(fn, flush)
        self.advance(ms)
        self._rest(ms)
        return ms

    def time_ratio(self, fn: Callable[[], object], ref: Callable[[], object],
                   flush=None) -> float:
        """A vendor-relative round: ref (the vendor's call) and fn, each first in every
        other round, each sampled as `time` does; the clock advances by fn's time / ref's
        time, read as milliseconds (1 ms: parity). Both run at the clock of the moment,
        as gemmgate's interleaved ratio does, so a power-cap swing cancels."""
        self._flip = not self._flip   # each first in every other round
        if self._flip:
            ref_ms = self._sample(ref, flush)
            ms = self._sample(fn, flush)
        else:
            ms = self._sample(fn, flush)
            ref_ms = self._sample(ref, flush)
        ratio = ms / ref_ms if ref_ms > 0 else float("nan")
        self.advance(ratio)
        self._rest(ms + ref_ms)
        return ratio

    def _rest(self, ms: float) -> None:
        if self.duty < 1:
            time.sleep(ms * 1e-3 * (1 / self.duty - 1))

    def _sample(self, fn: Callable[[], object], flush) -> float:
        import torch

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        stream = torch.cuda.current_stream()   # before the window (`_measure_device`)
        torch.cuda._sleep(SPIN_CYCLES_PER_CALL)  # the host enqueues all while the GPU spins
        if flush is not None:
            flush.zero_()
        start.record(stream)
        fn()
        end.record(stream)
        if self.gap_ms > 0:  # queued behind the call: runs while the host goes on
            torch.cuda._sleep(int(self.gap_ms * self.cycles_per_ms))
        end.synchronize()
        return start.elapsed_time(end)


def _warm(run: dict, buf, seconds: float) -> None:
    """Run the calls (flush, call, ...) for `seconds` of wall time before timing: a GPU
    that sat idle while kernels compiled or tuned runs its first milliseconds at idle
    clocks and temperature (seen on the H200: +16% on bf16 1024^3 at 37 C). Also
    replays each fresh graph once (its first replay is slow)."""
    import torch

    until = time.perf_counter() + seconds
    while True:
        for name, call in run.items():
            if buf is not None:
                buf.zero_()
            _named(name, call)
        torch.cuda.synchronize()
        if time.perf_counter() >= until:
            return


def _measure_device(fns, policy, flush_bytes, device, timed: dict | None = None
                    ) -> dict[str, list[float]]:
    import torch

    buf = flush_buffer(flush_bytes, device)
    for name, fn in fns.items():
        for _ in range(policy.warmup):  # first call compiles and autotunes
            _named(name, fn)
    torch.cuda.synchronize()
    eager = policy.method == "eager"
    run = dict(fns) if eager else {k: _named(k, lambda f=f: graphed(f, policy.warmup))
                                   for k, f in fns.items()}
    if timed is not None:
        timed.update(run)
    _warm(run, buf if policy.flush else None, policy.warmup_s)
    samples: dict[str, list[float]] = {k: [] for k in fns}
    names = list(fns)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(policy.batch * len(names) * policy.block)]
    spin = SPIN_CYCLES_PER_CALL * len(events)
    # the events' stream, asked once: `record()` without one makes a Python Stream per
    # call, which in an eager sample ran inside the window (after the call, before the
    # end event was enqueued: counted wherever the call's kernels finish first)
    stream = torch.cuda.current_stream()
    torch.cuda.synchronize()
    started = time.perf_counter()
    rnd = 0
    while not _done(samples, policy, started):
        pending = []
        if not eager:
            torch.cuda._sleep(spin)  # the host enqueues the batch while the GPU spins
        for _ in range(policy.batch):
            for name in _order(names, rnd):
                for _ in range(policy.block):
                    start, end = events[len(pending)]
                    if policy.flush:
                        buf.zero_()
                    if eager:
                        torch.cuda.synchronize()
                    start.record(stream)
                    try:   # (inline, not `_named`: no call added inside the timed span)
                        run[name]()
                    except STOPS:
                        raise
                    except BaseException as e:
                        raise ProviderError(name, e) from e
                    end.record(stream)
                    pending.append((name, start, end))
            rnd += 1
        torch.cuda.synchronize()
        for name, start, end in pending:
            samples[name].append(start.elapsed_time(end))
    return samples
