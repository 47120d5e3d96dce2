"""kernels/checks.py: the call contract's pure parts (the operand checks themselves run
through kernels.matmul in tests/kernels/test_matmul.py)."""

import pytest
import torch

from kernels.checks import rows_apart


def test_rows_apart_never_calls_views_that_share_a_byte_apart():
    """Random 2-D views of one buffer (pitches, offsets, widths, element sizes, both
    orientations): where `rows_apart` says apart, no byte is shared (brute force)."""
    import random

    rng = random.Random(58)
    buf = torch.zeros(4096, dtype=torch.uint8)

    def view(dtype, ld, rows, cols, off, col_major):
        t = buf.view(dtype)
        size = t.element_size()
        off //= size
        shape, stride = ((cols, rows), (1, ld)) if col_major else ((rows, cols), (ld, 1))
        v = t.as_strided(shape, stride, off)
        return v.t() if col_major else v

    def bytes_of(v):
        size, base = v.element_size(), v.data_ptr() - buf.data_ptr()
        return {base + (i * v.stride(0) + j * v.stride(1)) * size + b
                for i in range(v.shape[0]) for j in range(v.shape[1]) for b in range(size)}

    apart = 0
    for _ in range(600):
        dx, dy = rng.choice([torch.float32, torch.float16]), rng.choice([torch.float32,
                                                                          torch.float16])
        pitch = rng.choice([16, 24, 32, 40])                     # bytes a row, both views
        col_major = rng.random() < 0.3
        views = []
        for d in (dx, dy):
            size = torch.empty(0, dtype=d).element_size()
            ld = pitch // size
            rows, cols = rng.randint(1, 6), rng.randint(1, ld + (rng.random() < 0.1))
            off = rng.randrange(0, 1024, size)
            views.append(view(d, ld, rows, cols, off, col_major))
        x, y = views
        pair = (x.t(), y.t()) if col_major else (x, y)
        if rows_apart(*pair):
            apart += 1
            assert not (bytes_of(x) & bytes_of(y)), (x.shape, x.stride(), y.shape, y.stride())
    assert apart > 100                                           # the test reaches the case


@pytest.mark.parametrize("later, said, first", [
    ("1", "TRITON_INTERPRET=1 was set after `kernels` was imported", "kernels"),
    ("false", "CPU tensors need the Triton interpreter", "kernels"),
    ("1", "TRITON_INTERPRET=1 was set after `triton` was imported", "triton")])
def test_the_interpreter_is_asked_as_the_kernels_were_made(later, said, first):
    """TRITON_INTERPRET set after the import (Triton decides at each @triton.jit), or set
    to "false" (off, as Triton reads it): a CPU call ended in "0 active drivers" (a
    review)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    # first="triton": triton imported before the variable is set, kernels after it
    # (triton's own @jit helpers stayed GPU functions: an InterpreterError, a review)
    code = (f"import os, torch, {first}\n"
            f"os.environ['TRITON_INTERPRET'] = {later!r}\n"
            "import kernels\n"
            "try:\n"
            "    kernels.matmul(torch.ones(4, 4), torch.ones(4, 4))\n"
            "except ValueError as e:\n"
            "    print('said:', e)\n")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert f"said: {said}" in out.stdout, out.stdout + out.stderr
