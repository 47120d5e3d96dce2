"""kernels.launch: a prepared launch takes the JIT once per tensor signature, then the
compiled kernel directly, with the arguments the JIT itself would pass."""

import pytest
import torch
import triton

from kernels import launch
from kernels.launch import Launch


class _Compiled:
    """Stands in for triton's CompiledKernel: records launches."""

    function, packed_metadata = "fn-handle", "packed"

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def run(self, *args) -> None:
        self.calls.append(args)

    def launch_metadata(self, grid, stream, *args):
        return ("meta", grid)


class _Jit:
    """Stands in for a JITFunction: fn[grid](*args, **kw) compiles (once per call here)."""

    arg_names = ["x_ptr", "y_ptr", "n", "BLOCK", "EVEN"]

    def __init__(self) -> None:
        self.jit_calls: list[tuple] = []
        self.made: list[_Compiled] = []

    def __getitem__(self, grid):
        def run(*args, **kw):
            self.jit_calls.append((grid, args, kw))
            self.made.append(_Compiled())
            return self.made[-1]
        return run


class _Driver:
    def get_current_device(self):
        return 0

    def get_current_stream(self, device):
        return 1234


@pytest.fixture
def fake_driver(monkeypatch):
    monkeypatch.setattr(triton.runtime.driver, "_active", _Driver())  # what .active returns


def test_second_call_launches_the_compiled_kernel_with_the_jits_arguments(fake_driver):
    fn = _Jit()
    run = Launch(fn, (3, 2), (100,), dict(EVEN=True, BLOCK=64, num_warps=4))
    x, y = torch.zeros(64), torch.zeros(64)
    run(x, y)
    run(x, y)
    assert len(fn.jit_calls) == 1
    (call,) = fn.made[0].calls
    g0, g1, g2, stream, function, packed, meta, enter, leave, *args = call
    assert (g0, g1, g2, stream, function, packed) == (3, 2, 1, 1234, "fn-handle", "packed")
    assert meta is None  # no profiler hook installed: no metadata built
    # positional, then the constexprs in the kernel's parameter order, not kw's order
    assert args[:3] == [x, y, 100] and args[3:] == [64, True]


def test_alignment_or_dtype_change_takes_the_jit_again(fake_driver):
    fn = _Jit()
    run = Launch(fn, (1,), (7,), dict(BLOCK=16, EVEN=False))
    base = torch.zeros(65)
    run(base[:64], base[:64])
    run(base[1:], base[:64])                 # x 4 bytes off a 16-byte boundary
    run(base[:64].double(), base[:64])       # another dtype
    run(base[1:], base[:64])                 # seen before: compiled kernel
    assert len(fn.jit_calls) == 3
    assert len(fn.made[1].calls) == 1


def test_a_profiler_hook_gets_the_launch_metadata(fake_driver, monkeypatch):
    hooks = triton.knobs.runtime
    chain = hooks.launch_enter_hook
    if not hasattr(chain, "add"):
        pytest.skip("this triton's launch hooks are not a HookChain")
    seen = []
    chain.add(seen.append)
    try:
        fn = _Jit()
        run = Launch(fn, (2,), (5,), dict(BLOCK=16, EVEN=True))
        x = torch.zeros(16)
        run(x, x)
        run(x, x)
        assert fn.made[0].calls[0][6] == ("meta", (2,))
    finally:
        chain.remove(seen.append)


def test_descriptor_arguments_do_not_enter_the_signature():
    from triton.tools.tensor_descriptor import TensorDescriptor

    d = TensorDescriptor.from_tensor(torch.zeros(16, 16), [16, 16])
    assert launch._signature(d) is None
    assert launch._signature(torch.zeros(4)) == (torch.float32, True)


def test_the_interpreter_always_takes_the_jit(device):
    """On the CPU (interpreter) the copy kernel's Launch runs and is correct."""
    if device != "cpu":
        pytest.skip("interpreter path")
    from kernels.relayout import aligned_copy

    x = torch.arange(12.0).reshape(3, 4).t()
    assert torch.equal(aligned_copy(x), x)


@pytest.mark.gpu
def test_gpu_repeated_calls_skip_the_jit_and_alignment_changes_recompile(monkeypatch):
    """Same shape, operands first aligned then 2 bytes off: both results right; the third
    call (aligned again) launches without the JIT's binder."""
    from triton.runtime.jit import JITFunction

    import kernels
    from kernels import dispatch

    torch.manual_seed(0)
    m, n, k = 96, 80, 64
    buf_a = torch.randn(m * k + 8, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)

    def check(offset: int) -> None:
        a = buf_a[offset:offset + m * k].view(m, k)
        got = kernels.matmul(a, b)
        want = (a.double() @ b.double())
        assert ((got.double() - want).norm() / want.norm()).item() < 1e-3

    check(0)
    check(1)   # another key: the plan, the tile, the compiled kernel differ
    check(0)
    assert any(key[4] == (m, k) for key in dispatch.CALLS)
    monkeypatch.setattr(JITFunction, "run", lambda *a, **k: pytest.fail("went through the JIT"))
    check(0)
    check(1)
