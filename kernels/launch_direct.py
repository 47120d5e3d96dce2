"""A compiled kernel's direct launch: the C launch of triton 3.6's CUDA launcher, called
without its Python wrapper (kernels/launch.py's `Launch` and `Launch.bound` use it).

Tensor descriptors: triton 3.6's CUDA launcher wraps the C launch in a Python loop over
every argument that encodes each descriptor's tensor map anew (`make_tensordesc_arg`,
cuTensorMapEncodeTiled), three per TMA launch. A map is a value of (address, shape,
strides, box, padding), so `Direct` keeps the wrapper's expansion per such value and calls
the C launch itself with the arguments the wrapper would pass (the non-tensor ones
expanded once). It is used where the launcher has exactly 3.6's form (checked on the
compiled kernel: the wrapper's closure, its globals, no scratch memory, no launch hooks);
anything else, triton 3.9's launcher included, takes `CompiledKernel.run`. A kernel
without descriptors takes the C launch the same way, past CudaLauncher's Python call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

_BASE_ARGS = 13      # triton 3.6's launch arguments before the kernel's ('iiiKKppOOOOOO')
_MAX_MAPS = 256      # tensor maps kept per compiled kernel; past this the cache restarts


@dataclass(eq=False)
class Direct:
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
    def of(cls, kernel, leading: int, tail: tuple) -> Direct | None:
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
