"""pytest-benchmark set-up for tests/perf (docs/PERF_TESTS.md).

- Cases: the asv suite's (benchmarks/bench_gemm.py): on a GPU a few representative `pr`
  cases in every mode the chip has, on the CPU the `smoke` set in fp32 (interpreter).
- Benchmarking off unless asked for, and storage per chip: set in tests/conftest.py,
  which pytest loads before pytest-benchmark reads its options (this file is loaded
  later, during collection, when pytest runs from the root).
- One timed round on a GPU replays a CUDA graph of `launches(case)` kernel calls (a
  count fixed per case) and synchronizes: wall time is device time, and the stored figure
  is the round's (extra_info: launches_per_round, and per-call figures beside gemmgate's).
- `--inject-slowdown F` (tests/conftest.py) adds F x gemmgate's device-timed median of
  extra device work after each Triton call: proof that --benchmark-compare-fail catches
  a slowdown (validation only, like `gemmgate check --inject-slowdown`).
- machine_info carries the chip, GPU, driver and versions (pytest-benchmark warns on a
  compare when they differ).
"""

from __future__ import annotations

import functools
from dataclasses import replace

import pytest

GPU_ROUNDS, GPU_WARMUP = 20, 3   # pytest-benchmark rounds of the synchronized call
CPU_ROUNDS, CPU_WARMUP = 3, 1
BUDGET_S = 0.2                   # gemmgate's own (device-timed) measurement per case
# On a GPU one timed round replays a CUDA graph of `launches(case)` back-to-back kernel
# calls, then synchronizes: the host's share (one graph launch, one synchronize, ~10-20
# us of jitter) stays small against the round (H200, session 6: with 0.2 TFLOP rounds,
# 0.2-0.8 ms, 4 of 78 cases moved 5.0-6.6% between two unchanged runs). The count
# depends on the case only, so every run of a case times the same work and
# --benchmark-compare compares like with like: enough calls for about ROUND_FLOP of
# work, at most MAX_LAUNCHES.
ROUND_FLOP, MAX_LAUNCHES = 2e12, 500


def launches(flops: int | None) -> int:
    """Kernel calls per timed round of a case (GPU)."""
    if not flops:
        return 1
    return max(1, min(MAX_LAUNCHES, -(-int(ROUND_FLOP) // int(flops))))


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


def pytest_benchmark_update_machine_info(config, machine_info):
    machine_info.update(stack())


def pytest_generate_tests(metafunc):
    if {"mode", "case_id"} <= set(metafunc.fixturenames):
        bench = suite()
        c = chip()
        cases, modes = ((bench.GPU_CASES, bench.GPU_MODES) if c.device_type != "cpu"
                        else (bench.CPU_CASES, bench.CPU_MODES))
        pairs = [(m, k) for m in modes if m in c.modes for k in cases]
        metafunc.parametrize("mode,case_id", pairs, ids=[f"{m}-{k}" for m, k in pairs])


class PerfRunner:
    """gemmgate's measurement of one case, and the Triton call for pytest-benchmark: both
    through the run's context and Runner (the one place a case runs)."""

    def __init__(self, disabled: bool, slowdown: float = 0.0):
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
        self.cases = {c.id: c for s in SETS.values() for c in s}

    def measure(self, mode_name: str, case_id: str):
        from gemmgate.precision import get_mode

        return self.runner.run_case(get_mode(mode_name), self.cases[case_id])

    def launches(self, case_id: str) -> int:
        return launches(self.cases[case_id].flops) if self.gpu else 1

    def triton_call(self, mode_name: str, case_id: str, median_ms: float):
        """The kernel's zero-argument call with the run's chooser (the tile measure()
        ran), with --inject-slowdown's extra work (that fraction of `median_ms`, gemmgate's
        device-timed median) after each call. On a GPU: `launches(case)` calls captured in
        one CUDA graph, replayed and synchronized, so wall time is device time."""
        from gemmgate.inputs import make_inputs
        from gemmgate.precision import get_mode, vendor_flags
        from gemmgate.providers import kernel_call
        from gemmgate.run import case_seed
        from gemmgate.slowdown import slowed
        from gemmgate.timing import graphed

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
        import torch

        replay = graphed(fn, self.policy.warmup, self.launches(case_id))

        def call():
            replay()
            torch.cuda.synchronize()

        return call

    def extra_info(self, res) -> dict:
        t, v = res.providers["triton"], res.providers["vendor"]
        return {**stack(), "mode": res.mode, "case": res.case.id, "timing": self.policy.method,
                "launches_per_round": self.launches(res.case.id),
                "injected_slowdown": self.slowdown,
                "triton_median_ms": t.median_ms, "vendor_median_ms": v.median_ms,
                "triton_tflops": t.tflops, "vendor_tflops": v.tflops, "ratio": res.ratio,
                "pct_peak": res.pct_peak, "triton_error": t.error,
                "vendor_accuracy": v.accuracy}


@pytest.fixture(scope="session")
def perf(request) -> PerfRunner:
    bs = getattr(request.config, "_benchmarksession", None)
    return PerfRunner(disabled=bool(bs is None or bs.disabled),
                      slowdown=request.config.getoption("inject_slowdown"))
