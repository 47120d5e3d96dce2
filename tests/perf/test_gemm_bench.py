"""Triton GEMM through pytest-benchmark, per chip (docs/PERF_TESTS.md).

Each test measures its case with gemmgate (device-timed on a GPU, interleaved with the
vendor; the figures go to extra_info), checks the Triton result, then lets
pytest-benchmark time the Triton call (on a GPU one device-timed sample per round, on the
session's DeviceClock): the figure that --benchmark-compare-fail gates on.
"""

import pytest

pytestmark = pytest.mark.perf


def test_triton_gemm(benchmark, perf, mode, case_id):
    res = perf.measure(mode, case_id)
    triton = res.providers["triton"]
    assert triton.accuracy == "pass", f"{res.key}: {triton.accuracy} {triton.message}"
    assert triton.median_ms and triton.median_ms > 0
    benchmark.group = mode
    benchmark.extra_info.update(perf.extra_info(res))
    call = perf.triton_call(mode, case_id, triton.median_ms)
    benchmark.pedantic(call, rounds=perf.rounds, warmup_rounds=perf.warmup, iterations=1)
    if benchmark.stats is not None:  # None when benchmarking is off (a smoke run)
        # a round's figure on the session's clock, in extra_info in its own unit
        benchmark.extra_info.update(perf.round_info(benchmark.stats.stats.median))
