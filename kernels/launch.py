"""A Triton kernel launch prepared once and run without the JIT's per-call binder.

`fn[grid](*args, **kw)` binds every argument, computes its specialization (each
pointer's dtype and 16-byte alignment, each int's divisibility by 16 and equality to 1,
the constexprs), hashes that into a cache key and finds the compiled kernel: session 8
measured ~27 us of host time a call for it on the H200's host, half of kernels.matmul's
eager path. A `Launch` fixes everything but the tensors (grid, int arguments, keywords),
so the only specialization left to a call is its tensors' dtype and alignment: it keeps
the compiled kernel the JIT returned per (device, that signature) and later launches it
with the call JITFunction.run itself ends in (`CompiledKernel.run`; launch hooks and
their metadata passed when a profiler installed hooks). The first call of a signature,
the interpreter, and a triton whose JIT does not return the compiled kernel take the JIT.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import triton
from triton.runtime.interpreter import InterpretedFunction
from triton.tools.tensor_descriptor import TensorDescriptor


@dataclass(eq=False)
class Launch:
    """fn[grid](*tensors, *ints, **kw), for whatever tensors a call passes.

    `tensors` are the leading arguments: torch tensors (their dtype and 16-byte alignment
    pick the compiled kernel) or tensor descriptors, whose dtype and block shape the
    Launch's maker fixes (one Launch per operand dtype and tile); `ints` the scalar
    arguments after them."""

    fn: object
    grid: tuple[int, ...]
    ints: tuple[int, ...]
    kw: dict
    compiled: dict = field(default_factory=dict)  # (device, tensor signature) -> kernel
    _values: tuple | None = field(default=None, init=False, repr=False)

    def __call__(self, *tensors) -> None:
        args = (*tensors, *self.ints)
        fn = self.fn
        if isinstance(fn, InterpretedFunction):
            fn[self.grid](*args, **self.kw)
            return
        driver = triton.runtime.driver.active
        device = driver.get_current_device()
        key = (device, *map(_signature, tensors))
        kernel = self.compiled.get(key)
        if kernel is None:
            kernel = fn[self.grid](*args, **self.kw)
            if hasattr(kernel, "packed_metadata") and hasattr(kernel, "function"):
                self.compiled[key] = kernel
            return
        every = (*args, *self._constexprs(len(args)))
        stream = driver.get_current_stream(device)
        grid = self.grid
        g1 = grid[1] if len(grid) > 1 else 1
        g2 = grid[2] if len(grid) > 2 else 1
        hooks = triton.knobs.runtime
        enter, leave = hooks.launch_enter_hook, hooks.launch_exit_hook
        meta = kernel.launch_metadata(grid, stream, *every) if _active(enter) else None
        kernel.run(grid[0], g1, g2, stream, kernel.function, kernel.packed_metadata, meta,
                   enter, leave, *every)

    def _constexprs(self, positional: int) -> tuple:
        """The keyword arguments' values in the kernel's parameter order, as the JIT
        passes them after the positional ones (every later parameter is in `kw`)."""
        if self._values is None:
            self._values = tuple(self.kw[n] for n in self.fn.arg_names[positional:])
        return self._values


def _signature(x) -> tuple | None:
    """A leading argument's part of the specialization: a tensor's dtype and alignment;
    nothing for a descriptor (its dtype and block shape are the Launch's)."""
    if isinstance(x, TensorDescriptor):
        return None
    return (x.dtype, x.data_ptr() % 16 == 0)


def _active(hook) -> bool:
    """Whether a launch hook does anything (triton >= 3.5: a HookChain, empty unless a
    profiler added to it; older: None or a function)."""
    return bool(getattr(hook, "calls", hook is not None))
