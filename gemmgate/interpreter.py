"""The CPU path's Triton interpreter (TRITON_INTERPRET=1), made to run on triton 3.6 too.

triton 3.6's interpreter turns a scalar into an index with `int(handle.data)`, where a
scalar's data is a one-element array; NumPy 2.4 refuses that ("only 0-dimensional arrays
can be converted to Python scalars"), so every kernel whose loop bound is computed (the
tiled kernel's `range(k_len // BLOCK_K)`) fails on the CPU. Later triton squeezes the
array first (3.9: `int(self.handle.data.squeeze())`). The H200 machine's triton 3.6 with
NumPy 2.4 failed every CPU-path test so (session 16).

`enable()` sets TRITON_INTERPRET (read when a kernel is decorated, triton's own
`tl.cdiv` and the like at `import triton`: call it before triton and `kernels` are
imported; `kernels.matmul` says which came first otherwise) and, where the installed
interpreter has the old form, has it install the squeezing `__index__` in the same
scope it patches `tl.tensor` in while a kernel runs (restored after, as its own patches are).
"""

from __future__ import annotations

import inspect
import os

_OLD_FORM = "int(self.handle.data))"


def enable() -> None:
    os.environ["TRITON_INTERPRET"] = "1"
    from triton.runtime import interpreter

    fix_index(interpreter)


def fix_index(interpreter) -> bool:
    """Wrap `interpreter._patch_lang_tensor` where its `__index__` has the old form;
    whether it did (False: already fixed here, or this triton squeezes)."""
    orig = getattr(interpreter, "_patch_lang_tensor", None)
    if orig is None or getattr(orig, "squeezes_index", False):
        return False
    try:
        old = _OLD_FORM in inspect.getsource(orig)
    except (OSError, TypeError):
        return False
    if not old:
        return False

    def patch_lang_tensor(tensor, scope) -> None:
        orig(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    patch_lang_tensor.squeezes_index = True
    interpreter._patch_lang_tensor = patch_lang_tensor
    return True
