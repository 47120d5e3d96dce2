"""Buffers a call needs only while its own kernels run, kept for the next call.

An eager call whose operands or C are not 16-byte aligned allocates three buffers (A's
and B's copies, the staged C), a split-K call its fp32 partials: `torch.empty` took
6.5-12.5 us of host time each on the H200's host, of a 64-104 us call at 1111 x 777 x
555 bf16 (docs/PERF.md, session 30). `Scratch.empty` hands the same buffer to the next
call that asks for one of the same role, shape and dtype on the same device, stream and
thread. Calls of one thread on one stream run their kernels in the order they enqueued
them, so a buffer is never rewritten while a previous call's kernels still read it; two
threads, or two streams, get buffers of their own.

Not kept, a plain `torch.empty` instead: on the CPU, under CUDA-graph capture (a graph's
buffers are its own pool's), above `max_bytes` (there the device time dwarfs the
allocation), and past `entries` buffers (the least recently used is dropped; the caching
allocator frees it in its stream's order). Nothing a call returns is a kept buffer.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

import torch
import triton

ENTRIES = 16
MAX_BYTES = 8 << 20


class Scratch:
    """Kept buffers by (device, stream, thread, role, shape, dtype); see the module.
    `kept_on`: the device types whose buffers are kept; `_capturing` and `_stream` ask
    CUDA (a test's subclass answers for a meta device)."""

    kept_on: tuple[str, ...] = ("cuda",)

    def __init__(self, entries: int = ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        if entries < 1:
            raise ValueError(f"entries must be >= 1, got {entries}")
        self.entries, self.max_bytes = entries, max_bytes
        self._kept: OrderedDict[tuple, torch.Tensor] = OrderedDict()
        self._views: dict[tuple, tuple[int, torch.Tensor]] = {}   # key -> (cols, view)

    def __len__(self) -> int:
        return len(self._kept)

    def empty(self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device,
              role: str, cols: int | None = None) -> torch.Tensor:
        """An uninitialised buffer of `shape`, the one kept for this key if any; `cols`:
        its view of the first `cols` columns (a 2-D buffer's rows padded to a pitch), the
        last such view kept with the buffer: slicing is ~2 us of host time a call on a CI
        core. Any `cols` of one pitch share the buffer."""
        key = self._key(shape, dtype, device, role)
        if key is None:
            buf = torch.empty(shape, dtype=dtype, device=device)
            return buf if cols is None else buf[:, :cols]
        kept = self._kept
        buf = kept.get(key)
        if buf is None:
            # a normal tensor even inside inference mode: kept past it, an inference one
            # refused the torch copies into it outside (warmed up under inference_mode,
            # then run under no_grad: a review)
            with torch.inference_mode(False):
                buf = kept[key] = torch.empty(shape, dtype=dtype, device=device)
            while len(kept) > self.entries:
                self._views.pop(kept.popitem(last=False)[0], None)
        else:
            kept.move_to_end(key)
        if cols is None:
            return buf
        view = self._views.get(key)
        if view is None or view[0] != cols:
            view = self._views[key] = (cols, buf[:, :cols])
        return view[1]

    def zeros(self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device,
              role: str) -> torch.Tensor:
        """A zeroed buffer of `shape`: the one kept for this key, zeroed when it was made,
        which its user leaves zeroed (stream-K's locks, which the kernel sets back); a
        plain `torch.zeros` where `empty` would not keep it."""
        key = self._key(shape, dtype, device, role)
        if key is None:
            return torch.zeros(shape, dtype=dtype, device=device)
        made = key not in self._kept
        buf = self.empty(shape, dtype, device, role)
        return buf.zero_() if made else buf

    def _key(self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device,
             role: str) -> tuple | None:
        """The kept buffer's key, or None where none is kept (see the module)."""
        big = math.prod(shape) * dtype.itemsize > self.max_bytes
        if device.type not in self.kept_on or big or self._capturing():
            return None
        return (device, self._stream(device), threading.get_ident(), role, shape, dtype)

    def clear(self) -> None:
        self._kept.clear()
        self._views.clear()

    def _capturing(self) -> bool:
        return torch.cuda.is_current_stream_capturing()

    def _stream(self, device: torch.device) -> int:
        index = device.index if device.index is not None else torch.cuda.current_device()
        return triton.runtime.driver.active.get_current_stream(index)


SCRATCH = Scratch()   # the process's kept buffers (kernels.dispatch.reset clears them)
