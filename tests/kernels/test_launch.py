"""kernels.launch (with launch_bound, launch_direct, launch_jit): a prepared launch takes
the JIT once per tensor signature, then the compiled kernel directly, with the arguments
the JIT itself would pass."""

import functools
import gc
import types
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

from kernels import launch, launch_direct, launch_jit
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


def test_a_constexpr_left_to_its_default_is_passed_its_default(fake_driver):
    """The copy kernel's `I64` is given only where set (kernels/relayout.py): the JIT
    takes its default, and the compiled kernel's launch must pass it too (every copying
    call on an H100 raised KeyError 'I64' from its second launch on, session 68)."""
    from kernels import relayout

    def jit(x_ptr, y_ptr, n, BLOCK, EVEN=False):   # (the parameters _Jit names)
        pass

    fn = _Jit()
    fn.fn = jit
    run = Launch(fn, (1,), (8,), dict(BLOCK=64, num_warps=4))
    x, y = torch.zeros(64), torch.zeros(64)
    run(x, y)
    run(x, y)
    assert fn.made[0].calls[0][9:] == (x, y, 8, 64, False)
    copy = relayout.copy_launch(4, 4, 4, 1, 4)
    assert "I64" not in copy.kw and copy._constexprs(9)[-1] is False
    assert len(copy._constexprs(10)) == 2 and len(copy._constexprs(9)) == 3   # (kept per count)
    bare = Launch(_Jit(), (1,), (8,), dict(BLOCK=64))    # no default to take: said
    with pytest.raises(TypeError, match="no value for EVEN"):
        bare._constexprs(3)


def test_a_functions_defaults_are_read_once(monkeypatch):
    """inspect.signature was ~58 us of a first call's host time (CPU, session 72): each new
    copy Launch asked it of the same copy kernel. It is read once per function."""
    from kernels import relayout

    asked = []
    real = launch_jit.inspect.signature
    monkeypatch.setattr(launch_jit.inspect, "signature", lambda f: asked.append(f) or real(f))

    def jit(x_ptr, n, BLOCK, EVEN=False, I64=True):
        pass

    fn = types.SimpleNamespace(fn=jit)
    assert launch_jit.param_defaults(fn) == {"EVEN": False, "I64": True}
    assert launch_jit.param_defaults(fn) == {"EVEN": False, "I64": True}
    assert asked == [jit]
    for shape in ((4, 4, 4, 1, 4), (8, 8, 8, 1, 8)):   # new copy Launches of one kernel
        relayout.copy_launch(*shape)._constexprs(9)
    assert asked.count(relayout.copy_launch(4, 4, 4, 1, 4).fn.fn) <= 1
    assert launch_jit.param_defaults(types.SimpleNamespace()) == {}


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
    assert launch_jit.signature(d) is None
    assert launch_jit.signature(torch.zeros(4)) == (torch.float32, True)


# triton 3.6's CUDA launcher (backends/nvidia/driver.py, wrap_handle_tensordesc), as
# scripts/launcher36.py holds its source; a stand-in made from it in a namespace of its own
_LAUNCHER_36_FILE = (Path(__file__).resolve().parents[2] / "scripts" / "launcher36.py")


def _launcher_36_source() -> str:
    """scripts/launcher36.py's LAUNCHER_36 (read, not imported: scripts/ is no package)."""
    namespace: dict = {}
    exec(_LAUNCHER_36_FILE.read_text(), namespace)
    return namespace["LAUNCHER_36"]


class _Runner36:
    """Stands in for triton 3.6's CudaLauncher around a recording C launch."""

    global_scratch_size = profile_scratch_size = 0
    launch_cooperative_grid, launch_pdl = False, True

    def __init__(self, indices, meta) -> None:
        self.c_calls: list[tuple] = []
        self.encoded: list[tuple] = []

        def make_tensordesc_arg(arg, metadata):
            self.encoded.append((arg.base.data_ptr(), metadata))
            return [("map", arg.base.data_ptr(), metadata), *arg.shape, *arg.strides]

        namespace = {"_BASE_ARGS_FORMAT_LEN": 13}
        exec(_launcher_36_source(), namespace)
        namespace["make_tensordesc_arg"] = make_tensordesc_arg   # (the wrapper reads it here)
        self.launch = namespace["wrap_handle_tensordesc"](
            lambda *a: self.c_calls.append(a), set(indices), meta)

    def __call__(self, g0, g1, g2, stream, function, *args) -> None:
        self.launch(g0, g1, g2, stream, function, self.launch_cooperative_grid,
                    self.launch_pdl, None, None, *args)


def test_direct_launch_passes_what_the_36_wrapper_passes_and_encodes_a_map_once():
    """The direct launch hands the C launch the 3.6 wrapper's exact arguments, encoding a
    descriptor's tensor map once per (address, shape, strides, padding): a new address is
    a new map, the same one again is not."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    x, y, w = torch.zeros(16, 32), torch.zeros(32, 16), torch.zeros(16, 16)
    dx = TensorDescriptor.from_tensor(x, [16, 16])
    dy = TensorDescriptor.from_tensor(y, [16, 16])
    tail = (7, 8, 64, True)
    runner = _Runner36([0, 1], ["mx", "my"])
    kernel = types.SimpleNamespace(run=runner, function="fn", packed_metadata="pk")
    direct = launch_direct.Direct.of(kernel, 3, tail)
    assert direct is not None
    runner(2, 1, 1, 99, "fn", "pk", None, "enter", "leave", dx, dy, w, *tail)
    want = runner.c_calls.pop()
    for _ in range(2):
        direct(2, 1, 1, 99, "fn", "pk", "enter", "leave", (dx, dy, w))
        assert runner.c_calls.pop() == want
    assert len(runner.encoded) == 2 + 2              # the wrapper's two, then ours once
    dz = TensorDescriptor.from_tensor(torch.zeros(16, 32), [16, 16])
    direct(2, 1, 1, 99, "fn", "pk", "enter", "leave", (dz, dy, w))
    assert runner.c_calls.pop()[13][1] == dz.base.data_ptr() and len(runner.encoded) == 5


def test_direct_launch_is_not_used_on_another_launcher_form():
    """Scratch memory, a descriptor past the leading arguments, or a wrapper of another
    form (a triton other than 3.6): the compiled kernel's own run."""
    runner = _Runner36([0], ["m"])
    kernel = types.SimpleNamespace(run=runner, function="fn", packed_metadata="pk")
    assert launch_direct.Direct.of(kernel, 1, ()) is not None
    assert launch_direct.Direct.of(kernel, 0, ()) is None          # descriptor not leading
    runner.global_scratch_size = 64
    assert launch_direct.Direct.of(kernel, 1, ()) is None
    assert launch_direct.Direct.of(types.SimpleNamespace(run=lambda *a: None), 1, ()) is None
    other = _Runner36([0], ["m"])
    other.launch = lambda *args: None                      # no closure of 3.6's names
    assert launch_direct.Direct.of(types.SimpleNamespace(run=other), 1, ()) is None


# triton 3.6's CudaLauncher for a kernel without descriptors: `launch` is the C launch
# itself; a stand-in class made in a namespace with the driver module's names.
_PLAIN_36 = """
class Runner:
    global_scratch_size = profile_scratch_size = 0
    launch_cooperative_grid, launch_pdl = False, False

    def __init__(self, c_launch):
        self.launch = c_launch

    def __call__(self, gridX, gridY, gridZ, stream, function, *args):
        self.launch(gridX, gridY, gridZ, stream, function, self.launch_cooperative_grid,
                    self.launch_pdl, None, None, *args)
"""


def _plain_runner(calls: list):
    namespace = {"_BASE_ARGS_FORMAT_LEN": 13, "wrap_handle_tensordesc": None}
    exec(_PLAIN_36, namespace)
    # functools.partial: like the C launch, it has no __code__
    return namespace["Runner"](functools.partial(lambda *a: calls.append(a)))


class _Driver2(_Driver):
    stream = 1234

    def get_current_stream(self, device):
        return self.stream


class _PlainJit(_Jit):
    """A JIT whose compiled kernels have 3.6's descriptor-free launcher."""

    arg_names = ["x_ptr", "y_ptr", "n", "BLOCK"]

    def __init__(self) -> None:
        super().__init__()
        self.c_calls: list[tuple] = []

    def __getitem__(self, grid):
        def run(*args, **kw):
            self.jit_calls.append((grid, args, kw))
            self.made.append(types.SimpleNamespace(run=_plain_runner(self.c_calls),
                                                   function="fn", packed_metadata="pk"))
            return self.made[-1]
        return run


def test_direct_launch_of_a_kernel_without_descriptors_is_the_c_launch():
    """No descriptors: the direct launch calls 3.6's C launch with what CudaLauncher
    passes it; a bound launch passes the tensors' addresses in their place."""
    calls: list = []
    runner = _plain_runner(calls)
    kernel = types.SimpleNamespace(run=runner, function="fn", packed_metadata="pk")
    direct = launch_direct.Direct.of(kernel, 2, (5, 64))
    assert direct is not None and direct.descs == {}
    x, y = torch.zeros(4), torch.zeros(4)
    runner(2, 1, 1, 99, "fn", "pk", None, "enter", "leave", x, y, 5, 64)
    want = calls.pop()
    direct(2, 1, 1, 99, "fn", "pk", "enter", "leave", (x, y))
    assert calls.pop() == want
    direct.bound(2, 1, 1, 99, "fn", "pk", "enter", "leave", (x, y))()
    got = calls.pop()
    assert got[13:15] == (x.data_ptr(), y.data_ptr()) and got[:13] + got[15:] == \
        want[:13] + want[15:]
    namespace = {"_BASE_ARGS_FORMAT_LEN": 14, "wrap_handle_tensordesc": None}
    exec(_PLAIN_36, namespace)                 # another base-argument count: not 3.6's
    other = types.SimpleNamespace(run=namespace["Runner"](functools.partial(print)))
    assert launch_direct.Direct.of(other, 2, ()) is None


def test_bound_launch_repeats_a_call_on_the_same_addresses_only(monkeypatch):
    """Bound.run: the first call compiles, a repeat on the same tensors is one C call with
    every argument fixed; another address, another stream or a profiler's hook take the
    launch's usual path."""
    driver = _Driver2()
    monkeypatch.setattr(triton.runtime.driver, "_active", driver)
    fn = _PlainJit()
    run = Launch(fn, (3,), (64,), dict(BLOCK=16))
    bound = launch.Bound()
    x, y, z = torch.zeros(64), torch.zeros(64), torch.zeros(64)
    made: list = []

    def call(*tensors):
        bound.run(tuple(t.data_ptr() for t in tensors), run,
                  lambda: made.append(tensors) or tensors)

    call(x, y)                      # JIT
    call(x, y)                      # bound entry
    assert len(fn.jit_calls) == 1 and len(made) == 1 and len(fn.c_calls) == 1
    assert fn.c_calls[-1][13:] == (x.data_ptr(), y.data_ptr(), 64, 16)
    call(z, y)                      # a new address: its entry, made and run
    assert len(made) == 2 and fn.c_calls[-1][13] == z.data_ptr()
    call(z, y)
    assert len(made) == 2 and fn.c_calls[-1][13] == z.data_ptr()
    driver.stream = 77              # another stream: its own entry
    call(z, y)
    assert len(made) == 3 and fn.c_calls[-1][3] == 77
    assert len(bound.entries) == 3
    monkeypatch.setattr(triton.knobs.runtime, "launch_enter_hook", lambda *a: None)
    fn.made[0].launch_metadata = lambda grid, stream, *args: "meta"
    fn.made[0].run = lambda *args: fn.c_calls.append(("hooked", *args))
    call(z, y)                      # a hook: the launch's hooked path
    assert len(made) == 4 and fn.c_calls[-1][0] == "hooked"


@pytest.mark.parametrize("which", ["launch_enter_hook", "launch_exit_hook"])
def test_a_bound_launch_gives_way_to_a_hook_added_to_either_chain(monkeypatch, which):
    """A profiler adds its hook to triton's HookChain (entry or exit): a repeat whose
    bound entry exists takes the launch's hooked path while the hook is there, and its
    bound entry again once it is removed."""
    chain = getattr(triton.knobs.runtime, which)
    if not hasattr(chain, "add"):
        pytest.skip("this triton's launch hooks are not a HookChain")
    driver = _Driver2()
    monkeypatch.setattr(triton.runtime.driver, "_active", driver)
    fn = _PlainJit()
    run = Launch(fn, (3,), (64,), dict(BLOCK=16))
    bound = launch.Bound()
    x, y = torch.zeros(64), torch.zeros(64)
    for _ in range(2):
        bound.run((x.data_ptr(), y.data_ptr()), run, lambda: (x, y))
    direct = len(fn.c_calls)
    hook = lambda *a: None   # noqa: E731
    chain.add(hook)
    try:
        fn.made[0].launch_metadata = lambda grid, stream, *args: "meta"
        fn.made[0].run = lambda *args: fn.c_calls.append(("hooked", *args))
        bound.run((x.data_ptr(), y.data_ptr()), run, lambda: (x, y))
        assert fn.c_calls[-1][0] == "hooked"
    finally:
        chain.remove(hook)
    bound.run((x.data_ptr(), y.data_ptr()), run, lambda: (x, y))
    assert len(fn.c_calls) == direct + 2 and fn.c_calls[-1][0] != "hooked"


def test_fast_launches_keep_an_entry_per_address_and_dtype(monkeypatch):
    """Launch.fast: a plain-tensor launch repeated at the same addresses runs its bound
    entry; the same addresses with another dtype (a copy or a reduction serving bf16 and
    fp16) are another entry, on the kernel compiled for that dtype."""
    monkeypatch.setattr(triton.runtime.driver, "_active", _Driver2())
    fn = _PlainJit()
    run = Launch(fn, (3,), (64,), dict(BLOCK=16))
    x, y = torch.zeros(64), torch.zeros(64)
    for _ in range(3):
        run.fast(x, y)
    assert len(fn.jit_calls) == 1 and len(fn.c_calls) == 2 and len(run.repeats.entries) == 1
    assert fn.c_calls[-1][13:] == (x.data_ptr(), y.data_ptr(), 64, 16)
    xi, yi = x.view(torch.int32), y.view(torch.int32)
    run.fast(xi, yi)
    run.fast(xi, yi)
    assert len(fn.jit_calls) == 2 and len(run.repeats.entries) == 2
    assert fn.c_calls[-1][13:15] == (x.data_ptr(), y.data_ptr())


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


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["tiled", "tma"])
def test_gpu_a_new_shape_specialized_alike_takes_no_jit(monkeypatch, variant):
    """A first call on a new shape whose arguments the JIT specializes as an earlier
    shape's (every dimension and stride a multiple of 16) launches the kernel compiled for
    that shape, right, without the JIT (triton 3.6 and 3.9: `specialization`). The tiled
    kernel takes each stride as a multiple of its power-of-two factor up to 16: the shapes
    keep those multiples divisible by 16 too."""
    from triton.runtime.jit import JITFunction

    import kernels
    from kernels.tile import TileConfig

    if variant == "tma" and torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("the TMA variant is a Hopper (sm_90) path")
    cfg = TileConfig(64, 64, 32, 8, 3, 4, variant)

    def check(m: int, n: int, k: int) -> None:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        got = kernels.matmul(a, b, config=cfg)
        want = a.double() @ b.double()
        assert ((got.double() - want).norm() / want.norm()).item() < 5e-3, (m, n, k)

    check(256, 256, 256)
    monkeypatch.setattr(JITFunction, "run", lambda *a, **k: pytest.fail("went through the JIT"))
    check(384, 512, 512)
    check(512, 256, 768)


@pytest.mark.gpu
def test_gpu_tma_launches_go_direct_and_follow_new_tensors():
    """On triton 3.6 the TMA kernel's repeated launches take the direct launch, and a call
    on other tensors of the same shape (new addresses: new tensor maps) is right too."""
    from kernels import matmul_tma
    from kernels.tile import TileConfig

    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("the TMA variant is a Hopper (sm_90) path")
    cfg = TileConfig(128, 128, 64, 8, 3, 8, "tma")
    flags = dict(input_precision="ieee", is_fp32=False, has_scale=False)
    for _ in range(3):
        a = torch.randn(384, 256, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(256, 320, device="cuda", dtype=torch.bfloat16)
        out = torch.empty(384, 320, device="cuda", dtype=torch.bfloat16)
        r = matmul_tma.recipe(cfg, a, b, out, **flags)
        r.bind(a, b, out, a, a)()
        want = a.double() @ b.double()
        assert ((out.double() - want).norm() / want.norm()).item() < 5e-3
    if triton.__version__.startswith("3.6."):
        assert any(d is not None for d in r.run.direct.values())


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["tiled", "tma"])
def test_gpu_repeats_on_the_same_tensors_take_the_bound_launch_and_see_new_values(variant):
    """kernels.matmul on the same a, b and out again and again (a weight, a preallocated
    out): right after the inputs change in place, right into another out; on triton
    3.6 the repeats run their bound launch."""
    import kernels
    from kernels.tile import TileConfig

    if variant == "tma" and torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("the TMA variant is a Hopper (sm_90) path")
    cfg = TileConfig(64, 64, 32, 8, 3, 4, variant)
    a = torch.empty(320, 192, device="cuda", dtype=torch.float16)
    b = torch.empty(192, 256, device="cuda", dtype=torch.float16)
    outs = [torch.empty(320, 256, device="cuda", dtype=torch.float16) for _ in range(2)]
    for i in range(6):
        a.normal_()
        b.normal_()
        out = outs[i // 4]
        kernels.matmul(a, b, out=out, config=cfg)
        want = a.double() @ b.double()
        assert ((out.double() - want).norm() / want.norm()).item() < 1e-3, i
    if triton.__version__.startswith("3.6."):
        from kernels import dispatch

        recipes = [r for res in dispatch.CALLS.values() for r in res.recipes.values()
                   if getattr(r, "repeats", None) is not None and r.repeats.entries]
        assert recipes, "no bound launch was kept"


@pytest.mark.gpu
@pytest.mark.parametrize("variant, split", [("tma", 1), ("tiled", 2), ("tma_split", 2)])
def test_gpu_repeats_with_buffers_made_per_call_stay_right(variant, split):
    """Calls whose launches use buffers made per call (operand copies for rows off 16
    bytes, a staged C, a split-K workspace) repeat through bound launches at the caching
    allocator's addresses: right after the inputs change in place, and into fresh outs."""
    import kernels
    from kernels.tile import TileConfig

    if variant != "tiled" and torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("the TMA variants are a Hopper (sm_90) path")
    cfg = TileConfig(64, 64, 32, 8, 3, 4, variant, split)
    a = torch.empty(320, 196, device="cuda", dtype=torch.bfloat16)   # 392-byte rows
    b = torch.empty(196, 250, device="cuda", dtype=torch.bfloat16)   # 500-byte rows
    for i in range(6):
        a.normal_()
        b.normal_()
        out = kernels.matmul(a, b, config=cfg) if i % 2 else \
            kernels.matmul(a, b, config=cfg, out=torch.empty(320, 250, device="cuda",
                                                             dtype=torch.bfloat16))
        want = a.double() @ b.double()
        assert ((out.double() - want).norm() / want.norm()).item() < 1e-2, i


@pytest.mark.gpu
def test_gpu_a_k_major_copy_made_per_call_repeats_through_a_bound_launch():
    """tf32 copies a row-major B K-major on every call (no kept copies) with the copy
    kernel (rows-to-rows copies are torch's): its launch repeats bound at the caching
    allocator's address, and stays right after B changes in place."""
    import kernels
    from kernels import relayout

    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("the K-major copy is the Hopper (sm_90) wgmma's")
    a = torch.empty(320, 192, device="cuda")
    b = torch.empty(192, 250, device="cuda")
    for i in range(4):
        a.normal_()
        b.normal_()
        out = kernels.matmul(a, b, precision="tf32")
        want = a.double() @ b.double()
        assert ((out.double() - want).norm() / want.norm()).item() < 5e-3, i
    if triton.__version__.startswith("3.6."):
        assert relayout.copy_launch.cache_info().currsize and any(
            launch.repeats.entries for launch in _copy_launches()), "no bound copy kept"


def _copy_launches():
    from kernels import relayout

    return [v for v in gc.get_objects() if isinstance(v, Launch)
            and v.fn is relayout._copy_kernel]


def _spec_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    pass


def _params(fn) -> list:
    """A JIT's parameters for `fn`, as triton.jit makes them (without a JIT: the tests
    run under the interpreter)."""
    import inspect

    from triton.runtime.jit import KernelParam

    return [KernelParam(i, p, False, False)
            for i, p in enumerate(inspect.signature(fn).parameters.values())]


class _SpecJit(_Jit):
    """A stand-in JIT with a real one's parameters and a binder made for device 0, so
    that Triton's own specialization can be asked of its arguments."""

    def __init__(self) -> None:
        super().__init__()
        from triton.backends.compiler import BaseBackend

        self.params = _params(_spec_kernel)
        self.device_caches = {0: (None, None, None, BaseBackend, None)}


def test_a_new_launch_takes_a_kernel_compiled_for_the_same_specialization(
        fake_driver, monkeypatch):
    """Another call shape (a new Launch) whose arguments Triton specializes as an earlier
    Launch's (ints alike in width, 16-divisibility and equality to 1; tensors in dtype
    and alignment; the same keywords) launches that Launch's compiled kernel, with its own
    grid and ints, without the JIT; any difference takes the JIT."""
    if launch.specialization(_SpecJit(), 0, (torch.zeros(4), 16)) is None:
        pytest.skip("this triton's specialization cannot be asked")
    monkeypatch.setattr(launch, "SHARED", {})
    fn = _SpecJit()
    x, y = torch.zeros(64), torch.zeros(64)
    kw = dict(BLOCK=16, EVEN=True)
    Launch(fn, (1,), (64,), kw)(x, y)
    Launch(fn, (2,), (4096,), dict(kw))(x, y)          # 4096: 'D' like 64
    assert len(fn.jit_calls) == 1
    g0, _, _, _, _, _, _, _, _, *args = fn.made[0].calls[-1]
    assert g0 == 2 and args[:3] == [x, y, 4096]
    for ints, k, tensors in (((65,), kw, (x, y)),       # not a multiple of 16
                             ((1,), kw, (x, y)),        # equal to 1
                             ((2**31 + 16,), kw, (x, y)),   # 64-bit
                             ((64,), dict(BLOCK=32, EVEN=True), (x, y)),
                             ((64,), kw, (x.double(), y)),
                             ((64,), kw, (x[1:], y))):  # off 16 bytes
        before = len(fn.jit_calls)
        Launch(fn, (1,), ints, k)(*tensors)
        assert len(fn.jit_calls) == before + 1, (ints, k)
    Launch(fn, (3,), (33,), dict(kw))(x, y)            # like 65: 65's kernel
    assert len(fn.jit_calls) == 7 and fn.made[1].calls[-1][0] == 3


def test_a_first_call_works_out_its_specialization_once(fake_driver, monkeypatch):
    """A bound first call (`Bound.run`: `Launch.bound`, then the launch itself where no
    kernel is found) asks Triton for the arguments' specialization once, not once each."""
    if launch.specialization(_SpecJit(), 0, (torch.zeros(4), 16)) is None:
        pytest.skip("this triton's specialization cannot be asked")
    monkeypatch.setattr(launch, "SHARED", {})
    asked = []
    real = launch.specialization
    monkeypatch.setattr(launch, "specialization",
                        lambda *a: asked.append(a[2]) or real(*a))
    fn = _SpecJit()
    x, y = torch.zeros(64), torch.zeros(64)
    Launch(fn, (1,), (64,), dict(BLOCK=16, EVEN=True)).fast(x, y)
    assert len(fn.jit_calls) == 1 and len(asked) == 1


def test_specialization_is_none_without_the_jits_binder():
    assert launch.specialization(_Jit(), 0, (torch.zeros(4), 16)) is None
    fn = _SpecJit()
    assert launch.specialization(fn, 1, (torch.zeros(4), 16)) is None   # no binder there


def test_the_current_device_skips_torchs_lazy_init_only_for_torchs_own_function(monkeypatch):
    """A driver whose get_current_device is torch.cuda.current_device (triton's CUDA and
    HIP drivers) is answered by its C call (torch's function, which would first run its
    lazy-init check, is not called: here, without CUDA, it would raise); another
    driver's function is called as it is."""
    import types

    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: 3, raising=False)
    cuda = types.SimpleNamespace(get_current_device=torch.cuda.current_device)
    assert launch_jit.current_device(cuda) == 3
    assert launch_jit.current_device(types.SimpleNamespace(get_current_device=lambda: 5)) == 5
    monkeypatch.delattr(torch._C, "_cuda_getDevice")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 7)
    cuda = types.SimpleNamespace(get_current_device=torch.cuda.current_device)
    assert launch_jit.current_device(cuda) == 7   # (a torch without the C call)
