"""gemmgate/slowdown.py: the validation-only slowdown knob. CPU: the busy-wait; GPU: the
wall-time spin adds what it is asked for, whatever the SM clock does."""

import time

import pytest
import torch

from gemmgate.slowdown import slowed


def test_no_extra_returns_the_call_itself():
    def f():
        return 1
    assert slowed(f, 0.0, "cpu") is f and slowed(f, -1.0, "cuda") is f


def test_cpu_busy_wait_adds_the_time_asked():
    calls = []
    fn = slowed(lambda: calls.append(1) or "out", 20.0, "cpu")
    t0 = time.perf_counter()
    assert fn() == "out"
    elapsed_ms = (time.perf_counter() - t0) * 1e3
    assert calls == [1] and elapsed_ms >= 20.0


@pytest.mark.gpu
@pytest.mark.parametrize("extra_ms", [0.05, 0.5])
def test_gpu_spin_adds_the_time_asked(extra_ms):
    x = torch.ones(1, device="cuda")
    plain = x.add_  # ~2 us of device work

    def timed(fn) -> float:
        ms = []
        for _ in range(20):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(1_000_000)  # host enqueues ahead of the GPU
            start.record()
            fn(1)
            end.record()
            end.synchronize()
            ms.append(start.elapsed_time(end))
        return sorted(ms)[len(ms) // 2]

    wrapped = slowed(lambda: plain(1), extra_ms, "cuda")
    added = timed(lambda _: wrapped()) - timed(plain)
    # launch of the spin kernel adds a few microseconds beyond the asked time
    assert extra_ms * 0.95 <= added <= extra_ms + 0.010
