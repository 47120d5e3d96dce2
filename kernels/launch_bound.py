"""One call shape's bound launches (kernels/launch.py's `Launch.bound`, `Launch.fast`).

Bound launches: a caller whose calls repeat the same tensors (the same addresses, shapes
and strides: a weight, a preallocated out) keeps each as a `Bound` entry, the C launch
with every argument fixed (pointers as integers, tensor maps encoded), keyed by device,
stream and addresses. A repeated eager call then costs reading the keys and one C call:
no descriptors, no signature, no expansion (~10 us of Python a call on a 2-core CI host,
a stand-in launch). The entry holds no tensor, so it keeps no memory alive. A call at
new addresses makes its entry and runs it (the arguments expanded once). `Launch.fast`
keeps such entries for a Launch of plain tensors: operand copies, a staged C's copy,
split-K workspaces and their reductions, whose buffers PyTorch's caching allocator hands
back at the same addresses call after call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import triton
from triton.runtime.interpreter import InterpretedFunction

from kernels.launch_jit import current_device, is_hooked

if TYPE_CHECKING:
    from kernels.launch import Launch

_MAX_BOUND = 16      # bound launches kept per recipe (~1 KB each); past this they restart


@dataclass(eq=False)
class Bound:
    """One call shape's bound launches (`Launch.bound`) by (device, stream, the tensors'
    addresses), for a caller whose shapes and strides are fixed (a resolved matmul call's
    recipe): `run` launches a repeated call through its entry, any other the usual way."""

    entries: dict = field(default_factory=dict)

    def run(self, addresses: tuple, launch: Launch, tensors: Callable[[], tuple]) -> None:
        """launch(*tensors()), where `addresses` are those tensors' data pointers."""
        if isinstance(launch.fn, InterpretedFunction):
            launch(*tensors())
            return
        if is_hooked():
            launch(*tensors())   # a profiler's hooks: the launch's hooked path
            return
        driver = triton.runtime.driver.active
        device = current_device(driver)
        key = (device, driver.get_current_stream(device), addresses)
        go = self.entries.get(key)
        if go is not None:
            go()
            return
        args = tensors()
        go = launch.bound(*args)   # None: not compiled yet, or not a direct launch
        if go is not None:
            self._keep(key, go)
            go()
            return
        compiled = len(launch.compiled)
        launch(*args)
        if len(launch.compiled) != compiled:   # compiled by that launch: the next call's
            go = launch.bound(*args)           # entry (not retried for another launcher)
            if go is not None:
                self._keep(key, go)

    def _keep(self, key: tuple, go: Callable[[], None]) -> None:
        if len(self.entries) >= _MAX_BOUND:
            self.entries.clear()
        self.entries[key] = go
