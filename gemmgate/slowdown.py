"""A known slowdown, for validating the regression gate only (`--inject-slowdown F`).

After each Triton call the GPU runs a kernel on every SM that does FMAs until the
`%globaltimer` register (nanoseconds of wall time) says F x Triton's own median time has
passed, inside the same stream and the same CUDA graph. Wall time, because
torch.cuda._sleep counts SM cycles and its length followed the clock; busy SMs, because
an idle wait on a power-capped GPU lets the clock rise for both providers (H200 with
_sleep: 3% asked, the vendor/Triton ratio moved 0.3-1.5% on power-capped cases, while
both providers got faster). _sleep stays the fallback where the spin cannot be built
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
    def spin(ns, sink_ptr, BLOCK: tl.constexpr):
        # Every program does dependent FMAs until `ns` of wall time have passed: busy
        # SMs draw power the way real extra work does (an idle wait would hand the power
        # cap's headroom to the kernels around it, so both providers speed up).
        start = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [],
                                          dtype=tl.int64, is_pure=False, pack=1)
        x = tl.arange(0, BLOCK).to(tl.float32)
        now = start
        while now - start < ns:
            for _ in tl.static_range(32):
                x = x * 0.9999 + 0.0001
            now = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [],
                                            dtype=tl.int64, is_pure=False, pack=1)
        tl.store(sink_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), x)
    return spin


BLOCK = 1024


@functools.cache
def _timer_spin(device: str) -> Callable[[int], None] | None:
    """A launcher of the wall-time spin on every SM, or None where it cannot run here.
    Built and test-launched once per device (the sizing loop wraps a call 3 times)."""
    import torch

    if torch.version.hip is not None:
        return None
    dev = torch.device(device)
    programs = 2 * torch.cuda.get_device_properties(dev).multi_processor_count
    sink = torch.empty(programs * BLOCK, dtype=torch.float32, device=dev)
    kernel = _spin_kernel()

    def launch(ns: int) -> None:
        kernel[(programs,)](ns, sink, BLOCK=BLOCK, num_warps=8)
    try:
        with torch.cuda.device(dev):
            launch(1000)
            torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - no inline PTX here: fall back to _sleep
        return None
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
