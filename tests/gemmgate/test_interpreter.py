"""gemmgate/interpreter.py: the CPU path's interpreter runs kernels whose loop bounds are
computed, on the installed triton (3.6's interpreter needed the fix, 3.9's has it)."""

import types

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from gemmgate import interpreter


@triton.jit
def _sum_kernel(x_ptr, out_ptr, N, M, BLOCK: tl.constexpr):
    n = min(N, M)                     # a computed scalar as the loop bound
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    offs = tl.arange(0, BLOCK)
    for i in range(0, n // BLOCK):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    tl.store(out_ptr + offs, acc)


def test_a_kernel_with_a_computed_loop_bound_runs_on_the_interpreter():
    if torch.cuda.is_available():
        pytest.skip("a GPU host compiles this module's kernel; the interpreter runs on CPU hosts")
    x = torch.arange(64, dtype=torch.float32)
    out = torch.empty(16)
    _sum_kernel[(1,)](x, out, 64, 48, BLOCK=16)
    assert torch.equal(out, x[:48].view(3, 16).sum(0))


class _Scope:
    def __init__(self):
        self.changes = []

    def set_attr(self, obj, name, value):
        self.changes.append((name, getattr(obj, name, None)))
        setattr(obj, name, value)


def _old_patch(tensor, scope):
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data))


def test_the_fix_wraps_only_the_old_form_once():
    mod = types.SimpleNamespace(_patch_lang_tensor=_old_patch)
    assert interpreter.fix_index(mod) is True
    assert interpreter.fix_index(mod) is False           # already wrapped
    tensor = type("T", (), {})
    scope = _Scope()
    mod._patch_lang_tensor(tensor, scope)
    one = types.SimpleNamespace(handle=types.SimpleNamespace(data=np.array([7])))
    assert tensor.__index__(one) == 7                       # a one-element array: an index
    assert [n for n, _ in scope.changes] == ["__index__", "__index__"]   # restorable

    def squeezed(tensor, scope):
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    assert interpreter.fix_index(types.SimpleNamespace(_patch_lang_tensor=squeezed)) is False
    assert interpreter.fix_index(types.SimpleNamespace()) is False
