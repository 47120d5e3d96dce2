"""The only module that times device work.

Methods:
- "graph": each provider's call is captured once in a CUDA graph and replayed between
  two device events; the L2 flush before it keeps the GPU busy while the host enqueues,
  so the figure is device time only (host launch cost hidden).
- "eager": flush, synchronize, then events around a plain call: the GPU waits for the
  host, so the figure includes host launch cost (Python, autotuner lookup, driver).
- "wall": CPU path; perf_counter around the call after flushing the LLC.

Under "graph" the host never sits inside a timed region ("eager" times it on purpose):
each batch of timed calls starts behind a GPU-side spin (torch.cuda._sleep, nvbench's
"blocking kernel" idea) long enough for the host to enqueue the whole batch, so every start event is
reached with the flush and the call already queued behind it. Without it, a 10 us kernel
after a 30 us flush is timed with whatever launch gap the host left (H200: per-round
jitter of +-1 us and 2-3x outliers on bf16 1024^3).

The flush writes a buffer twice the chip's L2/LLC, so every timed call starts cold. The
rounds, their order and when they stop: gemmgate/timing_policy.py (pure).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gemmgate.stop_signal import STOPS
from gemmgate.timing_policy import TimingPolicy, batch_rounds, finished, round_order

# Spin per timed call in a batch, in GPU cycles (~100 us at 2 GHz): more than the host
# needs to enqueue one flush + two events + one graph launch from Python (~30-40 us).
SPIN_CYCLES_PER_CALL = 200_000


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
    while not finished(samples, policy, started):
        for name in round_order(names, rnd):
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
    rounds x gap_ms at a steady clock, so a short clock dip moves some rounds, not the
    median (session 8, H200: with duty 0.25 and 10 ms, two unchanged pytest-benchmark
    compares moved no case more than 2.0%). `cycles_per_ms` converts
    (gemmgate.slowdown.cycles_per_ms). The spin is queued right behind the call, and the
    duty's rest is the host's sleep from the call's end, so the two overlap: the GPU
    idles only where the rest outlasts the gap, max(0, (1/duty - 1) x call - gap_ms)
    after each call (at duty 0.25 and 10 ms: never for calls up to 3.3 ms, 5 ms after
    a 5 ms call), not the rest and then the gap.
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
    batch = batch_rounds(policy, len(names))   # (each provider first after the spin alike)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(batch * len(names) * policy.block)]
    spin = SPIN_CYCLES_PER_CALL * len(events)
    # the events' stream, asked once: `record()` without one makes a Python Stream per
    # call, which in an eager sample ran inside the window (after the call, before the
    # end event was enqueued: counted wherever the call's kernels finish first)
    stream = torch.cuda.current_stream()
    torch.cuda.synchronize()
    started = time.perf_counter()
    rnd = 0
    while not finished(samples, policy, started):
        pending = []
        if not eager:
            torch.cuda._sleep(spin)  # the host enqueues the batch while the GPU spins
        for _ in range(batch):
            for name in round_order(names, rnd):
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
