"""pytest-benchmark set-up for tests/perf (docs/PERF_TESTS.md).

- Cases: the asv suite's (benchmarks/bench_gemm.py): on a GPU the `pr` cases in every
  mode the chip has, on the CPU the `smoke` set in fp32 (interpreter).
- Benchmarking off unless asked for, and storage per chip: set in tests/conftest.py,
  which pytest loads before pytest-benchmark reads its options (this file is loaded
  later, during collection, when pytest runs from the root).
- On a GPU every test carries the plugin's public `benchmark(timer=...)` marker with a
  `gemmgate.timing.DeviceClock`: one timed round is one gemmgate sample of the Triton
  call (GPU spin, L2 flush, CUDA events around a graph replay of one call), and the
  stored figure is that device time. Rounds of back-to-back calls timed on the host
  moved 6-15% between unchanged runs on the H200 (session 7: the GPU ran some rounds at
  full clock and the rest at its power cap), and so did back-to-back device-timed calls
  (5-17%): the clock rests 3x each call's time after it (DUTY), and a spin kernel
  keeps the GPU busy `--perf-gap-ms` (default 10) from the call's end, untimed, during
  that rest (the GPU idles only where the rest outlasts the gap: calls over 3.3 ms): two
  unchanged 5% compares then failed 0 of 78 (session 8; 3 and 2 without the gap,
  session 7).
- `--perf-figure ratio`: a round is the vendor's call then Triton's, each one gemmgate
  sample, and the stored figure is Triton's time / the vendor's (ms per vendor-ms: 1 ms
  is parity), the ratio gemmgate gates on (session 8: also 0 of 78 twice).
- `--inject-slowdown F` (tests/conftest.py) adds F x gemmgate's device-timed median of
  extra device work after each Triton call, inside the timed region: proof that
  --benchmark-compare-fail catches a slowdown (validation only, like `gemmgate check
  --inject-slowdown`).
- machine_info carries the chip, GPU, driver and versions (pytest-benchmark warns on a
  compare when they differ).
"""

from __future__ import annotations

import functools
from dataclasses import replace

import pytest

GPU_ROUNDS, GPU_WARMUP = 50, 5   # pytest-benchmark rounds: one device-timed call each
CPU_ROUNDS, CPU_WARMUP = 3, 1
BUDGET_S = 0.2                   # gemmgate's own (device-timed) measurement per case
CLOCK = pytest.StashKey()        # the session's DeviceClock (GPU only)
# The GPU idles 3x each timed call's time after it, to stay under the power cap
# (docs/PERF.md, session 7: back-to-back device-timed calls moved 5-17% between unchanged
# runs; with this duty 2-3 of 78 still moved > 5%; a fixed 8 ms gap was far worse).
DUTY = 0.25


def suite():
    """The asv suite module, for its case list."""
    from benchmarks import bench_gemm

    return bench_gemm


@functools.cache
def chip():
    from gemmgate.chips import select_chip

    return select_chip().chip


@functools.cache
def stack() -> dict:
    """What identifies the measurement: chip, device, driver, versions (no dates)."""
    from gemmgate.env import environment

    c = chip()
    env = environment(c.id, "wall" if c.device_type == "cpu" else "graph")
    keep = ("device_name", "driver", "cuda", "hip", "torch", "triton", "interpreter")
    return {"gemmgate_chip": c.id, **{k: env.get(k) for k in keep}}


def pytest_configure(config):
    config.addinivalue_line("markers", "perf: GEMM performance test (pytest-benchmark)")


def pytest_collection_modifyitems(config, items):
    """Without pytest-benchmark (`-p no:benchmark`, or not installed) the perf tests skip
    with the reason: they errored, "fixture 'benchmark' not found" (a review)."""
    if config.pluginmanager.hasplugin("benchmark"):
        return
    skip = pytest.mark.skip(reason="needs pytest-benchmark (its plugin is not loaded)")
    for item in items:
        if item.get_closest_marker("perf") is not None:
            item.add_marker(skip)


@pytest.hookimpl(optionalhook=True)   # without pytest-benchmark (`-p no:benchmark`) an
def pytest_benchmark_update_machine_info(config, machine_info):   # unknown hook aborted
    machine_info.update(stack())


def pytest_generate_tests(metafunc):
    if {"mode", "case_id"} <= set(metafunc.fixturenames):
        bench = suite()
        c = chip()
        cases, modes = ((bench.GPU_CASES, bench.GPU_MODES) if c.device_type != "cpu"
                        else (bench.CPU_CASES, bench.CPU_MODES))
        clock = device_clock(metafunc.config) if c.device_type != "cpu" else None
        metafunc.parametrize("mode,case_id",
                             case_params([m for m in modes if m in c.modes], cases, clock))


def case_params(modes, cases, clock=None) -> list:
    """One param per (mode, case); with a clock, each carries pytest-benchmark's public
    timer marker, so the plugin times its rounds on that clock."""
    marks = (pytest.mark.benchmark(timer=clock),) if clock is not None else ()
    return [pytest.param(m, k, id=f"{m}-{k}", marks=marks) for m in modes for k in cases]


def device_clock(config):
    """The session's device clock: the timer of every GPU test's rounds, and what
    PerfRunner's calls advance."""
    from gemmgate.timing import DeviceClock

    if CLOCK not in config.stash:
        gap = config.getoption("perf_gap_ms")
        cpm = None
        if gap > 0:
            from gemmgate.slowdown import cycles_per_ms

            cpm = cycles_per_ms("cuda")
        config.stash[CLOCK] = DeviceClock(duty=DUTY, gap_ms=gap, cycles_per_ms=cpm)
    return config.stash[CLOCK]


class PerfRunner:
    """gemmgate's measurement of one case, and the Triton call for pytest-benchmark: both
    through the run's context and Runner (the one place a case runs)."""

    def __init__(self, disabled: bool, slowdown: float = 0.0, clock=None,
                 figure: str = "time"):
        from gemmgate.context import make_context
        from gemmgate.run import Runner
        from gemmgate.shapes import SETS

        self.chip = chip()
        self.gpu = self.chip.device_type != "cpu"
        modes = ",".join(m for m in suite().GPU_MODES if m in self.chip.modes) \
            if self.gpu else "fp32"
        ctx = make_context(modes=modes, budget_s=BUDGET_S)  # this chip's tuning cache
        if disabled:  # figures are not kept: the fewest rounds that exercise the path
            ctx = replace(ctx, policy=replace(ctx.policy, warmup=1, min_rounds=2,
                                              max_rounds=2))
        self.ctx, self.policy = ctx, ctx.policy
        self.runner = Runner(ctx)
        self.rounds, self.warmup = (GPU_ROUNDS, GPU_WARMUP) if self.gpu else \
            (CPU_ROUNDS, CPU_WARMUP)
        self.slowdown = slowdown
        self.clock = clock
        self.figure = figure   # "time" or "ratio" (--perf-figure; GPU only)
        self.cases = {c.id: c for s in SETS.values() for c in s}

    def measure(self, mode_name: str, case_id: str):
        from gemmgate.precision import get_mode

        return self.runner.run_case(get_mode(mode_name), self.cases[case_id])

    def triton_call(self, mode_name: str, case_id: str, median_ms: float):
        """The kernel's zero-argument call with the run's chooser (the tile measure()
        ran), with --inject-slowdown's extra work (that fraction of `median_ms`, gemmgate's
        device-timed median) after each call. On a GPU the call is captured in a CUDA
        graph, and each round is one sample on the session's DeviceClock: spin, L2
        flush, events around the replay."""
        from gemmgate.inputs import make_inputs
        from gemmgate.precision import get_mode, vendor_flags
        from gemmgate.providers import kernel_call, vendor_provider
        from gemmgate.run import case_seed
        from gemmgate.slowdown import slowed
        from gemmgate.timing import flush_buffer, graphed

        mode, case = get_mode(mode_name), self.cases[case_id]
        with vendor_flags(mode):
            inp = make_inputs(case, mode, self.ctx.device, case_seed(mode.name, case),
                              self.chip.fp8_dtype)
        kernels = self.runner.kernels["triton"]
        chooser = self.runner.tuner.chooser(kernels.kernel_hash())
        fn = slowed(kernel_call(kernels.matmul, chooser, inp, mode),
                    self.slowdown * median_ms, self.ctx.device)
        if not self.gpu:
            return fn
        replay = graphed(fn, self.policy.warmup)
        flush = flush_buffer(self.chip.flush_bytes, self.ctx.device)
        clock = self.clock
        if self.figure == "ratio":  # the vendor's call beside it, captured under its flags
            with vendor_flags(mode):
                vendor = graphed(vendor_provider(inp, mode), self.policy.warmup)
            return lambda: clock.time_ratio(replay, vendor, flush)
        return lambda: clock.time(replay, flush)

    def round_info(self, median_s: float) -> dict:
        """The rounds' median (pytest-benchmark's, in the timer's seconds) in extra_info,
        in the unit its name says: a time round advanced the clock by its ms / 1e3, a
        ratio round by the ratio / 1e3 (`DeviceClock.time_ratio`), so both are x 1e3 (the
        ratio was stored as the seconds figure: 0.001 at parity; a review)."""
        if self.figure == "ratio" and self.gpu:   # Triton time / vendor time
            return {"per_round_time_ratio": median_s * 1e3}
        return {"per_call_median_ms": median_s * 1e3}

    def extra_info(self, res) -> dict:
        t, v = res.providers["triton"], res.providers["vendor"]
        return {**stack(), "mode": res.mode, "case": res.case.id, "timing": self.policy.method,
                "injected_slowdown": self.slowdown,
                "figure": self.figure if self.gpu else "time",
                "triton_median_ms": t.median_ms, "vendor_median_ms": v.median_ms,
                "triton_tflops": t.tflops, "vendor_tflops": v.tflops, "ratio": res.ratio,
                "pct_peak": res.pct_peak, "triton_error": t.error,
                "vendor_accuracy": v.accuracy}


@pytest.fixture(scope="session")
def perf(request) -> PerfRunner:
    return PerfRunner(disabled=bool(request.config.getoption("benchmark_disable", True)),
                      slowdown=request.config.getoption("inject_slowdown"),
                      clock=request.config.stash.get(CLOCK, None),
                      figure=request.config.getoption("perf_figure"))
