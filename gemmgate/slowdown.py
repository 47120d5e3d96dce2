"""A known slowdown, for validating the regression gate only (`--inject-slowdown F`).

After each Triton call, the GPU spins for F x (Triton's own median time) with
torch.cuda._sleep, inside the same stream and the same CUDA graph, so the added device
work is a calibrated fraction of the kernel's time. _sleep counts GPU clock cycles, so
the fraction survives clock changes (the kernel slows with the clock too). On the CPU
the host busy-waits for the same fraction.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def cycles_per_ms(device: str) -> float:
    """GPU clock cycles per millisecond of torch.cuda._sleep, measured now."""
    import torch

    n = 2_000_000
    torch.cuda._sleep(n)  # warm-up
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(n)
    end.record()
    end.synchronize()
    return n / start.elapsed_time(end)


def slowed(call: Callable, extra_ms: float, device: str) -> Callable:
    """`call` followed by `extra_ms` of extra work on the same device."""
    if extra_ms <= 0:
        return call
    if device == "cpu":
        def spin():
            out = call()
            until = time.perf_counter() + extra_ms * 1e-3
            while time.perf_counter() < until:
                pass
            return out
        return spin
    import torch

    cycles = max(int(extra_ms * cycles_per_ms(device)), 1)

    def sleepy():
        out = call()
        torch.cuda._sleep(cycles)
        return out
    return sleepy
