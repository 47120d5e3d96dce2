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

Tensor descriptors: triton 3.6's CUDA launcher wraps the C launch in a Python loop over
every argument that encodes each descriptor's tensor map anew (`make_tensordesc_arg`,
cuTensorMapEncodeTiled), three per TMA launch. A map is a value of (address, shape,
strides, box, padding), so `_Direct` keeps the wrapper's expansion per such value and calls
the C launch itself with the arguments the wrapper would pass (the non-tensor ones
expanded once). It is used where the launcher has exactly 3.6's form (checked on the
compiled kernel: the wrapper's closure, its globals, no scratch memory, no launch hooks);
anything else, triton 3.9's launcher included, takes `CompiledKernel.run`. A kernel
without descriptors takes the C launch the same way, past CudaLauncher's Python call.

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
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import triton
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as _GluonDescriptor
from triton.runtime import jit as _jit
from triton.runtime.interpreter import InterpretedFunction
from triton.tools.tensor_descriptor import TensorDescriptor

# host descriptors, Triton's and Gluon's (kernels/matmul_ws.py; triton >= 3.6 has both)
_DESCRIPTORS = (TensorDescriptor, _GluonDescriptor)


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
    direct: dict = field(default_factory=dict)    # the same key -> _Direct | None
    repeats: Bound = field(default_factory=lambda: Bound())   # `fast`'s bound launches
    shared_keys: dict = field(default_factory=dict)   # the same key -> its SHARED key
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
        _, g1, g2 = _grid3(grid)
        hooks = triton.knobs.runtime
        enter, leave = hooks.launch_enter_hook, hooks.launch_exit_hook
        hooked = _hooked()   # an exit hook alone gets the launch's metadata too, as
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
        key = (device, *map(_signature, tensors))
        kernel, _ = self._kernel(key, (*tensors, *self.ints))
        if kernel is None or _hooked():
            return None
        hooks = triton.knobs.runtime
        enter, leave = hooks.launch_enter_hook, hooks.launch_exit_hook
        direct = self._direct(key, kernel, len(tensors))
        if direct is None:
            return None
        return direct.bound(*_grid3(self.grid), driver.get_current_stream(device),
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

    def _direct(self, key: tuple, kernel, leading: int) -> _Direct | None:
        """The compiled kernel's direct launch (or None), worked out once per key."""
        direct = self.direct.get(key, _UNSET)
        if direct is _UNSET:
            tail = (*self.ints, *self._constexprs(leading + len(self.ints)))
            direct = self.direct[key] = _Direct.of(kernel, leading, tail)
        return direct

    def _constexprs(self, positional: int) -> tuple:
        """The keyword arguments' values in the kernel's parameter order, as the JIT
        passes them after the positional ones: `kw`'s, else the parameter's default (a
        copy's `I64` given only where set: every copying call on a GPU raised KeyError
        'I64' from its second launch on, session 68)."""
        if self._values is None or self._values[0] != positional:
            names = self.fn.arg_names[positional:]
            defaults = _defaults(self.fn) if any(n not in self.kw for n in names) else {}
            missing = [n for n in names if n not in self.kw and n not in defaults]
            if missing:
                raise TypeError(f"{getattr(self.fn, '__name__', self.fn)}: no value for "
                                f"{', '.join(missing)} (neither given nor defaulted)")
            self._values = positional, tuple(self.kw[n] if n in self.kw else defaults[n]
                                             for n in names)
        return self._values[1]


_UNSET = object()
SHARED: dict = {}    # (fn, device, `specialization` of the arguments, keywords) -> kernel
_MAX_SHARED = 1024   # compiled kernels kept so; past this the cache restarts
_BASE_ARGS = 13      # triton 3.6's launch arguments before the kernel's ('iiiKKppOOOOOO')
_MAX_MAPS = 256      # tensor maps kept per compiled kernel; past this the cache restarts
_MAX_BOUND = 16      # bound launches kept per recipe (~1 KB each); past this they restart


@dataclass(eq=False)
class _Direct:
    """A compiled kernel's launch past triton 3.6's tensor-map wrapper (module docstring):
    `launcher` is the C launch, `descs` the leading arguments that are descriptors (their
    position -> the compiled kernel's tensor-map metadata), `tail` the arguments after
    the leading ones, `maps` the wrapper's expansion of each descriptor value seen."""

    launcher: Callable
    make: Callable | None             # triton's make_tensordesc_arg(descriptor, metadata)
    descs: dict[int, object]
    coop: bool
    pdl: bool
    tail: tuple
    maps: dict = field(default_factory=dict)

    @classmethod
    def of(cls, kernel, leading: int, tail: tuple) -> _Direct | None:
        """The direct launch of `kernel` when its launcher has triton 3.6's form (its
        descriptors, if any, all among the `leading` arguments), else None."""
        run = getattr(kernel, "run", None)
        inner = getattr(run, "launch", None)
        call = vars(type(run)).get("__call__")  # its own, not inherited
        if inner is None or getattr(run, "global_scratch_size", 1) \
                or getattr(run, "profile_scratch_size", 1) \
                or getattr(getattr(call, "__code__", None), "co_argcount", 0) != 6:
            return None  # 3.6: CudaLauncher.__call__(self, gridX, gridY, gridZ, stream,
            #                                          function, *args)
        code, cells = getattr(inner, "__code__", None), getattr(inner, "__closure__", None)
        if code is None:  # no descriptors: launch is the C launch itself
            glob = getattr(call, "__globals__", {})
            if glob.get("_BASE_ARGS_FORMAT_LEN") != _BASE_ARGS \
                    or "wrap_handle_tensordesc" not in glob:
                return None
            return cls(inner, None, {}, run.launch_cooperative_grid, run.launch_pdl, tail)
        if not cells:
            return None
        env = dict(zip(code.co_freevars, (c.cell_contents for c in cells)))
        glob = getattr(inner, "__globals__", {})
        make = glob.get("make_tensordesc_arg")
        if set(env) != {"launcher", "tensordesc_indices", "tensordesc_meta"} \
                or glob.get("_BASE_ARGS_FORMAT_LEN") != _BASE_ARGS or make is None \
                or make.__code__.co_argcount != 2:
            return None
        indices = sorted(env["tensordesc_indices"])
        meta = env["tensordesc_meta"] or [None] * len(indices)
        if not indices or indices[-1] >= leading or len(meta) != len(indices):
            return None
        return cls(env["launcher"], make, dict(zip(indices, meta)),
                   run.launch_cooperative_grid, run.launch_pdl, tail)

    def __call__(self, g0, g1, g2, stream, function, packed, enter, leave, tensors) -> None:
        self.launcher(*self._head(g0, g1, g2, stream, function, packed, enter, leave),
                      *self._expand(tensors, lambda t: t), *self.tail)

    def bound(self, g0, g1, g2, stream, function, packed, enter, leave, tensors
              ) -> Callable[[], None]:
        """The C launch with all its arguments fixed: tensors as their addresses (what the
        C launch reads of them), descriptors as their encoded maps."""
        return functools.partial(
            self.launcher, *self._head(g0, g1, g2, stream, function, packed, enter, leave),
            *self._expand(tensors, lambda t: t.data_ptr()), *self.tail)

    def _head(self, g0, g1, g2, stream, function, packed, enter, leave) -> tuple:
        return (g0, g1, g2, stream, function, self.coop, self.pdl, None, None, packed, None,
                enter, leave)

    def _expand(self, tensors, pointer: Callable) -> list:
        args: list = []
        for i, t in enumerate(tensors):
            if i not in self.descs:
                args.append(pointer(t))
                continue
            key = (i, t.base.data_ptr(), *t.shape, *t.strides, t.padding)
            expanded = self.maps.get(key)
            if expanded is None:
                if len(self.maps) >= _MAX_MAPS:
                    self.maps.clear()
                expanded = self.maps[key] = self.make(t, self.descs[i])
            args.extend(expanded)
        return args


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
        if _hooked():
            launch(*tensors())   # a profiler's hooks: the launch's hooked path
            return
        driver = triton.runtime.driver.active
        device = _current_device(driver)
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


def specialization(fn, device, args: tuple) -> tuple | None:
    """How the JIT of `fn` specializes `args` (its leading, non-constexpr arguments:
    tensors, descriptors, ints) on `device`: Triton's own `native_specialize_impl` with
    the JIT's backend and each parameter's flags, as its binder calls it (triton 3.6 and
    3.9): a tensor's dtype and 16-byte alignment, a descriptor's dtype and block, an int's
    width, 16-divisibility and equality to 1. None where that cannot be asked: no binder
    made for the device yet, a triton without these internals, a stand-in."""
    spec = getattr(_jit, "native_specialize_impl", None)
    caches, params = getattr(fn, "device_caches", None), getattr(fn, "params", None)
    if spec is None or not isinstance(caches, dict) or device not in caches \
            or not isinstance(params, list) or len(params) < len(args):
        return None
    try:
        backend = caches[device][3]
        out = []
        for p, v in zip(params, args):
            if p.is_constexpr or p.annotation_type:
                return None   # the binder treats these otherwise
            out.append(spec(backend, v, p.is_const, not p.do_not_specialize,
                            not p.do_not_specialize_on_alignment))
        return tuple(out)
    except (AttributeError, IndexError, TypeError, ValueError):
        return None


def _defaults(fn) -> dict:
    """A JIT function's parameters' defaults by name (its Python function's signature)."""
    py = getattr(fn, "fn", None)
    if py is None:
        return {}
    return {n: p.default for n, p in inspect.signature(py).parameters.items()
            if p.default is not inspect.Parameter.empty}


def _grid3(grid: tuple[int, ...]) -> tuple[int, int, int]:
    """A 1-, 2- or 3-D grid as the launch's (x, y, z)."""
    return (*grid, 1, 1)[:3]


def _signature(x) -> tuple | None:
    """A leading argument's part of the specialization: a tensor's dtype and alignment;
    nothing for a descriptor (its dtype and block shape are the Launch's)."""
    if isinstance(x, _DESCRIPTORS):
        return None
    return (x.dtype, x.data_ptr() % 16 == 0)


def _current_device(driver) -> int:
    """driver.get_current_device(). Where that is torch.cuda.current_device (triton's
    CUDA and HIP drivers), its C call alone: torch's function first runs its lazy-init
    check, three Python frames (~65 ns on a CI core, its frames simulated) that a repeated
    launch need not pay (a bound entry exists only after a launch: CUDA is initialized)."""
    get = driver.get_current_device
    return current_index() if get is torch.cuda.current_device else get()


def current_index() -> int:
    """The current CUDA device's index (torch's C call, without its lazy-init check where
    the build has it: a matmul call on a GPU asks it each time; its tensors made CUDA
    ready)."""
    fast = getattr(torch._C, "_cuda_getDevice", None)
    return fast() if fast is not None else torch.cuda.current_device()


def _hooked() -> bool:
    """Whether a launch hook, entry or exit, does anything: asked on every bound launch
    (a HookChain's `calls` read directly, ~100 ns less than `_active` twice)."""
    hooks = triton.knobs.runtime
    enter, leave = hooks.launch_enter_hook, hooks.launch_exit_hook
    try:
        return bool(enter.calls or leave.calls)
    except AttributeError:   # a hook set as a function (or None), not a HookChain
        return _active(enter) or _active(leave)


def _active(hook) -> bool:
    """Whether a launch hook does anything (triton >= 3.5: a HookChain, empty unless a
    profiler added to it; older: None or a function)."""
    return bool(getattr(hook, "calls", hook is not None))
