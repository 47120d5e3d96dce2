"""What a launch asks of Triton's JIT and runtime (kernels/launch.py, launch_bound.py,
launch_direct.py): how the JIT specializes a call's arguments (`specialization`, the key of
compiled kernels shared between Launches), a leading argument's part of it (`signature`),
a JIT function's defaults, the current device without torch's lazy-init check, and whether
a profiler's launch hooks are set (a hooked launch takes the JIT's own path)."""

from __future__ import annotations

import functools
import inspect

import torch
import triton
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as _GluonDescriptor
from triton.runtime import jit as _jit
from triton.tools.tensor_descriptor import TensorDescriptor

# host descriptors, Triton's and Gluon's (kernels/matmul_ws.py; triton >= 3.6 has both)
DESCRIPTORS = (TensorDescriptor, _GluonDescriptor)


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


def param_defaults(fn) -> dict:
    """A JIT function's parameters' defaults by name (its Python function's signature),
    read once per function: `inspect.signature` was ~58 us of a first call's host time on
    the CPU (each new copy Launch asks it; session 72). Do not change the dict returned."""
    py = getattr(fn, "fn", None)
    return {} if py is None else _defaults(py)


@functools.cache
def _defaults(py) -> dict:
    return {n: p.default for n, p in inspect.signature(py).parameters.items()
            if p.default is not inspect.Parameter.empty}


def grid3(grid: tuple[int, ...]) -> tuple[int, int, int]:
    """A 1-, 2- or 3-D grid as the launch's (x, y, z)."""
    return (*grid, 1, 1)[:3]


def signature(x) -> tuple | None:
    """A leading argument's part of the specialization: a tensor's dtype and alignment;
    nothing for a descriptor (its dtype and block shape are the Launch's)."""
    if isinstance(x, DESCRIPTORS):
        return None
    return (x.dtype, x.data_ptr() % 16 == 0)


def current_device(driver) -> int:
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


def is_hooked() -> bool:
    """Whether a launch hook, entry or exit, does anything: asked on every bound launch
    (a HookChain's `calls` read directly, ~100 ns less than `active` twice)."""
    hooks = triton.knobs.runtime
    enter, leave = hooks.launch_enter_hook, hooks.launch_exit_hook
    try:
        return bool(enter.calls or leave.calls)
    except AttributeError:   # a hook set as a function (or None), not a HookChain
        return active(enter) or active(leave)


def active(hook) -> bool:
    """Whether a launch hook does anything (triton >= 3.5: a HookChain, empty unless a
    profiler added to it; older: None or a function)."""
    return bool(getattr(hook, "calls", hook is not None))
