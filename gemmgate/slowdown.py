"""A known slowdown, for validating the regression gate only (`--inject-slowdown F`).

After each Triton call the GPU runs a one-thread kernel that spins on the `%globaltimer`
register (nanoseconds of wall time) for F x Triton's own median time, inside the same
stream and the same CUDA graph. A wall-time spin keeps the injected time fixed while SM
clocks move; the older torch.cuda._sleep counts SM cycles, so its length followed the
clock: sized at one clock and measured at another, it injected 0.3-1% where 3% was asked
(H200, power-capped cases). _sleep stays the fallback where the spin cannot be built
(no %globaltimer: AMD). On the CPU the host busy-waits for the same fraction.
"""

from __future__ import annotations

import functools
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


@functools.cache
def _spin_kernel():
    """Built on first use (never at import): triton.jit needs the source on a GPU host."""
    import triton
    import triton.language as tl

    @triton.jit
    def spin(ns):
        start = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [],
                                          dtype=tl.int64, is_pure=False, pack=1)
        now = start
        while now - start < ns:
            now = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [],
                                            dtype=tl.int64, is_pure=False, pack=1)
    return spin


def _timer_spin(device: str) -> Callable[[int], None] | None:
    """A launcher of the wall-time spin, or None where it cannot run here."""
    import torch

    if torch.version.hip is not None:
        return None
    try:
        kernel = _spin_kernel()
        with torch.cuda.device(torch.device(device)):
            kernel[(1,)](1000, num_warps=1)
            torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - no inline PTX here: fall back to _sleep
        return None

    def launch(ns: int) -> None:
        kernel[(1,)](ns, num_warps=1)
    return launch


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
    timer = _timer_spin(device)
    if timer is not None:
        ns = max(int(extra_ms * 1e6), 1)

        def timed():
            out = call()
            timer(ns)
            return out
        return timed
    import torch

    cycles = max(int(extra_ms * cycles_per_ms(device)), 1)

    def sleepy():
        out = call()
        torch.cuda._sleep(cycles)
        return out
    return sleepy
