"""gemmgate/providers.py: the kernel call with its chooser, and the vendor's fp8 path with
its zero padding (torch._scaled_mm is replaced by a float emulation: the CPU has no cuBLASLt)."""

import pytest
import torch

from gemmgate import providers
from gemmgate.inputs import GemmInputs, make_inputs
from gemmgate.precision import MODES
from gemmgate.shapes import Case


def test_kernel_call_passes_the_mode_and_the_chooser_explicitly():
    seen = {}

    def matmul(a, b, **kw):
        seen.update(kw)
        return kw["out"]

    inp = make_inputs(Case(8, 8, 8), MODES["fp32"], "cpu", seed=0)
    hook = object()
    out = providers.kernel_call(matmul, hook, inp, MODES["fp32"])()
    assert seen["precision"] == "fp32" and seen["choose"] is hook and out.shape == (8, 8)


@pytest.mark.parametrize("mode,n,pitch", [("fp8", 40, 48), ("fp8", 48, 48), ("fp32", 40, 40),
                                          ("fp16", 37, 37)])
def test_kernel_call_writes_the_vendors_output_layout(mode, n, pitch):
    """fp8: the vendor writes rows padded to 16 (cuBLASLt) and returns the (M, N) view,
    so the kernel is handed the same layout; other modes: a row-major (M, N) out, as
    torch.matmul(out=) writes."""
    seen = {}

    def matmul(a, b, **kw):
        seen.update(kw)
        return kw["out"]

    inp = _fp8_inputs(8, n, 32) if mode == "fp8" else \
        make_inputs(Case(8, n, 32), MODES[mode], "cpu", seed=0)
    providers.kernel_call(matmul, None, inp, MODES[mode])()
    out = seen["out"]
    assert out.shape == (8, n) and out.stride() == (pitch, 1)


def test_vendor_fp32_matches_the_reference():
    inp = make_inputs(Case(40, 24, 56), MODES["fp32"], "cpu", seed=1)
    out = providers.vendor_provider(inp, MODES["fp32"])()
    assert torch.allclose(out.double(), inp.reference(), rtol=1e-5, atol=1e-5)


def _fp8_inputs(m: int, n: int, k: int) -> GemmInputs:
    g = torch.Generator().manual_seed(m * n + k)
    a = torch.randn(m, k, generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(k, n, generator=g).to(torch.float8_e4m3fn)
    one = torch.ones((), dtype=torch.float32)
    return GemmInputs(a, b, one * 0.5, one * 2.0)


class _Calls(list):
    """The (A shape, B shape) of each torch._scaled_mm call; `fast`: each use_fast_accum;
    `outs`: each `out=`'s address."""

    def __init__(self):
        super().__init__()
        self.fast: list[bool] = []
        self.outs: list[int] = []   # the address of each call's `out=`


@pytest.fixture
def fake_scaled_mm(monkeypatch):
    """A float emulation that enforces cuBLASLt's rules: K and N multiples of 16, A
    row-major, B column-major."""
    shapes = _Calls()

    def fake(a, b, scale_a, scale_b, out_dtype, use_fast_accum, out=None):
        assert a.shape[1] % 16 == 0 and b.shape[1] % 16 == 0, "cuBLASLt alignment"
        assert a.stride(1) == 1 and b.stride(0) == 1, "A row-major, B column-major"
        shapes.append((tuple(a.shape), tuple(b.shape)))
        shapes.fast.append(use_fast_accum)
        got = ((a.float() @ b.float()) * scale_a * scale_b).to(out_dtype)
        if out is None:
            return got
        assert out.shape == got.shape and out.dtype == out_dtype and out.is_contiguous()
        shapes.outs.append(out.data_ptr())
        return out.copy_(got)

    monkeypatch.setattr(torch, "_scaled_mm", fake)
    return shapes


@pytest.mark.parametrize("keep", [True, False])
def test_vendor_fast_is_the_vendors_fp8_call_with_fast_accumulation(fake_scaled_mm, keep):
    inp = _fp8_inputs(24, 40, 253)
    fast = providers.vendor_fast_provider(inp, MODES["fp8"], keep_copies=keep)()
    precise = providers.vendor_provider(inp, MODES["fp8"], keep_copies=keep)()
    assert torch.equal(fast, precise)                       # the emulation sums alike
    n = len(fake_scaled_mm.fast) // 2
    assert fake_scaled_mm.fast == [True] * n + [False] * n


def test_vendor_fast_is_unsupported_outside_fp8():
    inp = make_inputs(Case(8, 8, 8), MODES["fp32"], "cpu", seed=0)
    with pytest.raises(providers.Unsupported, match="fast accumulation"):
        providers.vendor_fast_provider(inp, MODES["fp32"])


def test_vendor_fast_is_unsupported_on_rocm(fake_scaled_mm, monkeypatch):
    """PyTorch applies use_fast_accum on CUDA only: on ROCm vendor_fast was the vendor's
    own call timed twice, shown as a fast accumulation."""
    monkeypatch.setattr(torch.version, "hip", "6.2.41133")
    with pytest.raises(providers.Unsupported, match="ROCm"):
        providers.vendor_fast_provider(_fp8_inputs(24, 40, 64), MODES["fp8"])
    assert fake_scaled_mm.fast == []


@pytest.mark.parametrize("m,n,k", [(32, 48, 64), (24, 40, 253), (20, 40, 40)])
def test_fp8_vendor_pads_k_and_n_to_16_and_slices_back(fake_scaled_mm, m, n, k):
    inp = _fp8_inputs(m, n, k)
    out = providers.vendor_provider(inp, MODES["fp8"])()
    assert out.shape == (m, n) and out.dtype == torch.bfloat16
    want = (inp.a.double() @ inp.b.double()) * 1.0  # scales 0.5 x 2.0
    assert torch.allclose(out.double(), want, rtol=1e-2, atol=1e-2)
    (a_shape, b_shape) = fake_scaled_mm[-1]
    assert a_shape == (m, -(-k // 16) * 16) and b_shape == (-(-k // 16) * 16, -(-n // 16) * 16)


@pytest.mark.parametrize("keep,layouts", [(True, 1), (False, 4)])
def test_fp8_vendor_lays_out_its_operands_once_or_in_every_call(monkeypatch, fake_scaled_mm,
                                                                keep, layouts):
    made = []
    real = providers._k_major_padded
    monkeypatch.setattr(providers, "_k_major_padded", lambda inp: made.append(1) or real(inp))
    inp = _fp8_inputs(24, 40, 253)
    call = providers.vendor_provider(inp, MODES["fp8"], keep_copies=keep)
    outs = [call().clone() for _ in range(3)]   # (each call writes the same C)
    assert len(made) == layouts      # the builder's once (and its support check's call)
    assert all(torch.equal(o, outs[0]) for o in outs)
    fp32 = make_inputs(Case(8, 8, 8), MODES["fp32"], "cpu", seed=0)
    assert torch.equal(providers.vendor_provider(fp32, MODES["fp32"], keep_copies=False)(),
                       providers.vendor_provider(fp32, MODES["fp32"])())


def test_fp8_vendor_unsupported_on_zero_dims_or_when_torch_rejects(monkeypatch):
    with pytest.raises(providers.Unsupported, match="non-zero dims"):
        providers.vendor_provider(_fp8_inputs(0, 16, 16), MODES["fp8"])

    def reject(*a, **k):
        raise RuntimeError("mat1 must be divisible by 16\nmore detail")

    monkeypatch.setattr(torch, "_scaled_mm", reject)
    with pytest.raises(providers.Unsupported, match="rejects M=8, N=16, K=16: mat1 must"):
        providers.vendor_provider(_fp8_inputs(8, 16, 16), MODES["fp8"])


# --- --providers: custom module:function GEMMs and inductor ------------------------------

def test_kernel_call_without_a_hook_passes_no_choose():
    # a custom GEMM may not take `choose=`: None means the keyword is left out
    def matmul(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
        return out.copy_(a @ b)

    inp = make_inputs(Case(8, 8, 8), MODES["fp32"], "cpu", seed=0)
    out = providers.kernel_call(matmul, None, inp, MODES["fp32"])()
    assert torch.allclose(out.double(), inp.reference(), rtol=1e-5, atol=1e-5)


def test_takes_choose_reads_the_signature():
    assert providers.takes_choose(lambda a, b, *, choose=None: None)
    assert not providers.takes_choose(lambda a, b, *, precision=None, out=None: None)
    assert not providers.takes_choose(lambda a, b, **kw: None)  # only a named parameter
    assert not providers.takes_choose(max)  # no signature: no hook


def test_inductor_needs_a_cuda_gpu():
    inp = make_inputs(Case(8, 8, 8), MODES["fp32"], "cpu", seed=0)
    with pytest.raises(providers.Unsupported, match="inductor provider needs a CUDA GPU"):
        providers.inductor_provider(inp, MODES["fp32"])


@pytest.fixture
def fake_compile(monkeypatch):
    """torch.compile replaced by the identity, recording how it was asked to compile."""
    seen = []

    def compile_(fn, **kw):
        seen.append(kw)
        return fn

    monkeypatch.setattr(torch, "compile", compile_)
    return seen


def test_inductor_compiles_once_with_triton_templates_only(fake_compile):
    inp = make_inputs(Case(24, 40, 56), MODES["fp32"], "cpu", seed=2)
    call = providers._compiled(inp, MODES["fp32"])
    assert torch.allclose(call().double(), inp.reference(), rtol=1e-5, atol=1e-5)
    (kw,) = fake_compile  # one compiled function for the case, built in the builder
    assert kw["dynamic"] is False and kw["fullgraph"] is True
    opts = kw["options"]  # max-autotune-no-cudagraphs, Triton GEMM templates only
    assert opts["max_autotune"] and opts["max_autotune_gemm_backends"] == "TRITON"
    assert opts["triton.cudagraphs"] is False and "mode" not in kw
    assert opts["fx_graph_cache"] is False   # a hit would skip the autotuning that names
    # its pick (test_autotune_pick's gpu test)


def test_inductor_fp8_uses_the_vendors_padded_scaled_mm(fake_compile, fake_scaled_mm):
    inp = _fp8_inputs(24, 40, 253)
    out = providers._compiled(inp, MODES["fp8"])()
    assert out.shape == (24, 40) and out.dtype == torch.bfloat16
    assert fake_scaled_mm[-1] == ((24, 256), (256, 48))
    want = inp.a.double() @ inp.b.double()  # scales 0.5 x 2.0
    assert torch.allclose(out.double(), want, rtol=1e-2, atol=1e-2)
    with pytest.raises(providers.Unsupported, match="non-zero dims"):
        providers._compiled(_fp8_inputs(0, 16, 16), MODES["fp8"])


def test_inductor_without_a_triton_template_is_unsupported(monkeypatch):
    def no_choice(fn, **kw):
        def compiled(*a):
            raise RuntimeError("BackendCompilerFailed: NoValidChoicesError: no choices\n...")
        return compiled

    monkeypatch.setattr(torch, "compile", no_choice)
    inp = make_inputs(Case(8, 8, 8), MODES["fp32"], "cpu", seed=0)
    with pytest.raises(providers.Unsupported, match="no Triton GEMM template"):
        providers._compiled(inp, MODES["fp32"])


@pytest.mark.parametrize("mode, legacy", [("tf32", "high"), ("fp32", "highest")])
def test_inductor_compiles_under_the_modes_flags_readable_the_legacy_way(mode, legacy):
    # vendor_flags sets tf32 through the new API, and then the legacy reader inductor
    # uses while autotuning raises; the compile sees the same choice, and the state after
    # is exactly what vendor_flags set
    from gemmgate.precision import vendor_flags

    m = torch.backends.cuda.matmul
    with vendor_flags(MODES[mode]):
        before = (m.fp32_precision, torch.backends.mkldnn.matmul.fp32_precision)
        with providers._legacy_precision_readable():
            assert torch.get_float32_matmul_precision() == legacy
            assert m.allow_tf32 == (mode == "tf32")
        assert (m.fp32_precision, torch.backends.mkldnn.matmul.fp32_precision) == before


@pytest.mark.parametrize("mode, legacy", [("fp32", "highest"), ("tf32", "high")])
def test_a_callers_legacy_tf32_setting_is_not_what_inductor_reads(mode, legacy):
    """After the caller's set_float32_matmul_precision('high') (a --providers module, a
    sitecustomize), the legacy reader said "high" inside vendor_flags(fp32), and inductor
    compiled fp32 as tf32 (a review). The caller's setting is back afterwards."""
    from gemmgate.precision import vendor_flags

    m, mkl = torch.backends.cuda.matmul, torch.backends.mkldnn.matmul
    old = m.fp32_precision, mkl.fp32_precision
    torch.set_float32_matmul_precision("high")
    try:
        with vendor_flags(MODES[mode]):
            inside = m.fp32_precision, mkl.fp32_precision
            with providers._legacy_precision_readable():
                assert torch.get_float32_matmul_precision() == legacy
            assert (m.fp32_precision, mkl.fp32_precision) == inside
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision("highest")
        m.fp32_precision, mkl.fp32_precision = old


def test_the_hook_is_asked_once_then_the_tile_is_passed():
    """Timed calls (eager: the host path counts) must not rebuild the candidate list:
    after the chooser recorded its tile, the call passes it as config=."""
    import types

    seen = []

    def matmul(a, b, *, precision=None, out=None, scale_a=None, scale_b=None, config=None,
               choose=None):
        seen.append(("choose" if choose is not None else "config", config))
        if choose is not None:
            choose.last = types.SimpleNamespace(config="tile-A")
        return out

    chooser = types.SimpleNamespace(last=None)
    inp = make_inputs(Case(8, 8, 8), MODES["fp32"], "cpu", seed=1)
    call = providers.kernel_call(matmul, chooser, inp, MODES["fp32"])
    for _ in range(3):
        call()
    assert seen == [("choose", None), ("config", "tile-A"), ("config", "tile-A")]


def test_kernel_call_asks_a_kernel_that_can_to_keep_its_operand_copies():
    seen = []

    def keeps(a, b, *, precision, out, scale_a=None, scale_b=None,
              cache_copies=False):
        seen.append(cache_copies)
        return out

    def plain(a, b, *, precision, out, scale_a=None, scale_b=None):   # an old commit's contract
        seen.append("plain")
        return out

    inp = make_inputs(Case(8, 8, 8), MODES["fp32"], "cpu", seed=0)
    providers.kernel_call(keeps, None, inp, MODES["fp32"])()
    providers.kernel_call(plain, None, inp, MODES["fp32"])()
    providers.kernel_call(keeps, None, inp, MODES["fp32"], keep_copies=False)()  # per call
    assert seen == [True, "plain", False]


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["bf16", "fp16", "fp8", "tf32"])
def test_gpu_the_eager_triton_call_repeats_through_bound_launches_on_every_pr_case(
        mode, monkeypatch):
    """The Triton provider's call as the harness times it in eager mode (same inputs, an
    out of its own, kept copies): from its third call on, every launch it makes (the GEMM,
    a split's reduction, a staged C's copy) is a bound launch, none the long way through
    Launch.__call__ (the JIT's binder, or the descriptors encoded anew: ~10 us a call on
    a device's host). Triton 3.6's launcher only: another launcher has no direct path."""
    import triton

    import kernels
    from gemmgate.shape_sets import SETS
    from kernels import launch

    if not triton.__version__.startswith("3.6."):
        pytest.skip(f"the bound launch is triton 3.6's launcher form (this is "
                    f"{triton.__version__})")
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("the pr set's fp8 and TMA picks are Hopper (sm_90) paths")
    slow: list[str] = []
    real = launch.Launch.__call__
    for case in SETS["pr"]:
        call = providers.kernel_call(kernels.matmul, None,
                                     make_inputs(case, MODES[mode], "cuda"), MODES[mode])
        call()
        call()
        with monkeypatch.context() as m:
            m.setattr(launch.Launch, "__call__", lambda self, *t, case=case: (
                slow.append(f"{case.id}: {getattr(self.fn, '__name__', self.fn)}"),
                real(self, *t)))
            call()
        torch.cuda.synchronize()
    assert not slow, f"launches not bound on a repeated {mode} call: {slow}"


@pytest.mark.parametrize("keep", [True, False])
def test_fp8_vendor_writes_into_a_c_made_once(fake_scaled_mm, keep):
    """As the Triton side writes its `out`: every call (the builder's check too) writes
    the padded C made in the builder and returns the same (M, N) view of it, so an eager
    sample counts no allocation on the vendor's side."""
    inp = _fp8_inputs(24, 40, 253)
    call = providers.vendor_provider(inp, MODES["fp8"], keep_copies=keep)
    outs = [call() for _ in range(3)]
    assert all(o is outs[0] for o in outs) and outs[0].shape == (24, 40)
    assert len(set(fake_scaled_mm.outs)) == 1 and len(fake_scaled_mm.outs) == 4


def test_fp8_vendor_without_out_allocates_as_before(monkeypatch):
    """A torch whose _scaled_mm takes no `out=` (TypeError): the product is allocated and
    sliced per call, not refused as unsupported."""
    def no_out(a, b, scale_a, scale_b, out_dtype, use_fast_accum):
        return ((a.float() @ b.float()) * scale_a * scale_b).to(out_dtype)

    monkeypatch.setattr(torch, "_scaled_mm", no_out)
    inp = _fp8_inputs(24, 40, 253)
    call = providers.vendor_provider(inp, MODES["fp8"])
    first, second = call(), call()
    assert first.shape == (24, 40) and first is not second and torch.equal(first, second)


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (40, 50, 253)])
def test_gpu_the_fp8_vendor_writes_into_its_c_made_once(m, n, k):
    """On this torch's CUDA _scaled_mm the vendor's fp8 call takes `out=`: each call
    returns the same view of one C (no allocation in an eager sample), right."""
    if torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("fp8 matmul needs sm_89 or later")
    inp = make_inputs(Case(m, n, k), MODES["fp8"], "cuda", seed=3)
    call = providers.vendor_provider(inp, MODES["fp8"])
    first, second = call(), call()
    assert first is second and first.shape == (m, n)
    want = inp.reference()
    assert ((first.double() - want).norm() / want.norm()).item() < 1e-2
