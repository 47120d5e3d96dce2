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

Compiled kernels shared between Launches: a Launch is one call shape (its grid and int
arguments fixed), so a new shape is a new Launch, and its first call used to go through
the JIT's binder and launch path for a kernel the process had already compiled. `SHARED`
keeps each compiled kernel by what the JIT's cache key is made of: the function, the
device, every leading argument as Triton itself specializes it (`specialization`: its
`native_specialize_impl` with the JIT's backend for the device; a tensor's dtype and
alignment, a descriptor's dtype and block, an int's width, 16-divisibility and equality
to 1) and the keywords (constexprs, warps, stages). A new Launch whose key is there
launches that kernel directly from its first call. Where Triton
cannot be asked (another triton's internals, a stand-in JIT), a Launch keeps to its own
cache.


A launch past the JIT goes to the compiled kernel's C launch where the launcher allows
(kernels/launch_direct.py: `Direct`), and a caller repeating the same tensors keeps that
launch with every argument fixed (kernels/launch_bound.py: `Bound`); what they ask of
Triton's JIT and runtime is kernels/launch_jit.py's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import triton
from triton.runtime.interpreter import InterpretedFunction

from kernels.launch_bound import Bound
from kernels.launch_direct import Direct
from kernels.launch_jit import grid3, is_hooked, param_defaults, signature, specialization

__all__ = ["SHARED", "Bound", "Launch"]

_UNSET = object()
SHARED: dict = {}    # (fn, device, `specialization` of the arguments, keywords) -> kernel
_MAX_SHARED = 1024   # compiled kernels kept so; past this the cache restarts
# Triton's interpreter patches triton.language for the whole process while a kernel
# runs: two threads interpreting at once raised InterpreterError or returned wrong
# results silently (a review: 4 threads, 8-21 of 120 calls raised, one 4.4e13 off), so
# interpreted launches take turns; compiled ones need no lock
INTERPRETING = threading.Lock()


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
    direct: dict = field(default_factory=dict)    # the same key -> Direct | None
    repeats: Bound = field(default_factory=lambda: Bound())   # `fast`'s bound launches
    shared_keys: dict = field(default_factory=dict)   # the same key -> its SHARED key
    _values: tuple | None = field(default=None, init=False, repr=False)

    def __call__(self, *tensors) -> None:
        args = (*tensors, *self.ints)
        fn = self.fn
        if isinstance(fn, InterpretedFunction):
            with INTERPRETING:
                fn[self.grid](*args, **self.kw)
            return
        driver = triton.runtime.driver.active
        device = driver.get_current_device()
        key = (device, *map(signature, tensors))
        kernel, shared = self._kernel(key, args)
        if kernel is None:
            kernel = fn[self.grid](*args, **self.kw)
            if hasattr(kernel, "packed_metadata") and hasattr(kernel, "function"):
                self.compiled[key] = kernel
                if shared is not None:
                    if len(SHARED) >= _MAX_SHARED:
                        SHARED.clear()
                    SHARED[shared] = kernel
            return
        stream = driver.get_current_stream(device)
        grid = self.grid
        _, g1, g2 = grid3(grid)
        hooks = triton.knobs.runtime
        enter, leave = hooks.launch_enter_hook, hooks.launch_exit_hook
        hooked = is_hooked()   # an exit hook alone gets the launch's metadata too, as
        if not hooked:       # the JIT's own launch builds it whenever hooks are set
            direct = self._direct(key, kernel, len(tensors))
            if direct is not None:
                direct(grid[0], g1, g2, stream, kernel.function, kernel.packed_metadata,
                       enter, leave, tensors)
                return
        every = (*args, *self._constexprs(len(args)))
        meta = kernel.launch_metadata(grid, stream, *every) if hooked else None
        kernel.run(grid[0], g1, g2, stream, kernel.function, kernel.packed_metadata, meta,
                   enter, leave, *every)

    def fast(self, *tensors) -> None:
        """self(*tensors) for plain tensors (no descriptors), through a bound launch kept
        in `repeats` by the tensors' addresses and dtypes (this Launch fixes their shapes
        and strides; a Launch may serve several dtypes, e.g. a copy or a reduction into
        bf16 and fp16 outputs). Buffers a caller allocates per call (a staging C, a split-K
        workspace, an operand copy) come back at the same addresses from PyTorch's caching
        allocator, so their launches repeat too."""
        self.repeats.run(tuple([(t.data_ptr(), t.dtype) for t in tensors]), self,
                         lambda: tensors)   # (a list made, not a generator: ~0.14 us less)

    def bound(self, *tensors) -> Callable[[], None] | None:
        """This launch of `tensors` with every argument fixed, on the current device and
        stream, as long as the tensors keep their addresses (the caller keys it so, with
        shapes and strides fixed: `Bound`); None where the launch is not direct (the
        interpreter, a signature not yet compiled, a profiler's hooks, another launcher)."""
        if isinstance(self.fn, InterpretedFunction):
            return None
        driver = triton.runtime.driver.active
        device = driver.get_current_device()
        key = (device, *map(signature, tensors))
        kernel, _ = self._kernel(key, (*tensors, *self.ints))
        if kernel is None or is_hooked():
            return None
        hooks = triton.knobs.runtime
        enter, leave = hooks.launch_enter_hook, hooks.launch_exit_hook
        direct = self._direct(key, kernel, len(tensors))
        if direct is None:
            return None
        return direct.bound(*grid3(self.grid), driver.get_current_stream(device),
                            kernel.function, kernel.packed_metadata, enter, leave, tensors)

    def _kernel(self, key: tuple, args: tuple) -> tuple[object, tuple | None]:
        """(the compiled kernel for a (device, tensor signature) key, or None: the JIT
        must be asked; the SHARED key of `args`, where this Launch had none of its own).
        This Launch's kernel, or the one another Launch of the same function compiled
        for arguments the JIT specializes alike (`specialization`) and the same keywords."""
        kernel = self.compiled.get(key)
        if kernel is not None:
            return kernel, None
        shared = self.shared_keys.get(key)
        if shared is None:   # worked out once per key (a first call asks from `bound`,
            spec = specialization(self.fn, key[0], args)   # then from `__call__`)
            if spec is None:
                return None, None
            shared = self.shared_keys[key] = (self.fn, key[0], spec,
                                              tuple(sorted(self.kw.items())))
        kernel = SHARED.get(shared)
        if kernel is not None:
            self.compiled[key] = kernel
        return kernel, shared

    def _direct(self, key: tuple, kernel, leading: int) -> Direct | None:
        """The compiled kernel's direct launch (or None), worked out once per key."""
        direct = self.direct.get(key, _UNSET)
        if direct is _UNSET:
            tail = (*self.ints, *self._constexprs(leading + len(self.ints)))
            direct = self.direct[key] = Direct.of(kernel, leading, tail)
        return direct

    def _constexprs(self, positional: int) -> tuple:
        """The keyword arguments' values in the kernel's parameter order, as the JIT
        passes them after the positional ones: `kw`'s, else the parameter's default (a
        copy's `I64` given only where set: every copying call on a GPU raised KeyError
        'I64' from its second launch on, session 68)."""
        if self._values is None or self._values[0] != positional:
            names = self.fn.arg_names[positional:]
            defaults = param_defaults(self.fn) if any(n not in self.kw for n in names) else {}
            missing = [n for n in names if n not in self.kw and n not in defaults]
            if missing:
                raise TypeError(f"{getattr(self.fn, '__name__', self.fn)}: no value for "
                                f"{', '.join(missing)} (neither given nor defaulted)")
            self._values = positional, tuple(self.kw[n] if n in self.kw else defaults[n]
                                             for n in names)
        return self._values[1]
