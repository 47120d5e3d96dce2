"""gemmgate/precision.py: mode table invariants, parsing, dtype mapping, vendor flags."""

import pytest
import torch

from gemmgate import precision
from gemmgate.precision import ERROR_BOUND, MODE_NAMES, MODES, PrecisionMode

M = torch.backends.cuda.matmul


NEW_API = hasattr(M, "fp32_precision")  # torch >= 2.9: the flag vendor_flags writes


def _tf32() -> bool:
    """Whether cuBLAS may use tf32 for fp32 matmuls, read through the API in use."""
    return M.fp32_precision == "tf32" if NEW_API else M.allow_tf32


def _flags():
    return (M.fp32_precision if NEW_API else M.allow_tf32,
            M.allow_bf16_reduced_precision_reduction,
            M.allow_fp16_reduced_precision_reduction)


@pytest.fixture(autouse=True)
def restore_torch_flags():
    """Every test starts and ends with torch's matmul flags as they were, even if a test
    (or the code under test) leaves torch in its 'mixed legacy/new API' state."""
    saved = _flags()
    global_precision = torch.get_float32_matmul_precision()
    new_api = getattr(M, "fp32_precision", None)
    global_new = getattr(torch.backends, "fp32_precision", None)
    yield
    if global_new is not None:
        torch.backends.fp32_precision = global_new
    # set_float32_matmul_precision clears the mixed state and sets allow_tf32 with it.
    torch.set_float32_matmul_precision(global_precision)
    if new_api is not None:
        M.fp32_precision = new_api
    M.allow_bf16_reduced_precision_reduction = saved[1]
    M.allow_fp16_reduced_precision_reduction = saved[2]
    assert _flags() == saved


# --- the mode table ----------------------------------------------------------------------

def test_mode_names():
    assert MODE_NAMES == ("fp32", "tf32", "bf16", "fp16", "fp8", "tf32x3")
    assert all(MODES[n].name == n for n in MODE_NAMES)


@pytest.mark.parametrize("name", MODE_NAMES)
def test_every_mode_invariants(name):
    m = MODES[name]
    assert m.bound == ERROR_BOUND == 1e-2
    assert 0 < m.max_error < m.bound
    assert m.input_precision in ("ieee", "tf32", "tf32x3")
    assert m.accumulator == "float32"
    for dtype_name in (m.input_dtype, m.output_dtype):
        assert isinstance(getattr(torch, dtype_name), torch.dtype)
    assert m.downgrade_hint
    assert m.scaled == (name == "fp8")
    # Only tf32 may use tf32 on the vendor side; tf32x3 is three tf32 passes in Triton,
    # timed against the vendor's IEEE fp32, with an fp32-like band.
    assert m.allow_tf32 == (name == "tf32")
    assert (m.input_precision == "tf32") == (name == "tf32")
    assert (m.input_precision == "tf32x3") == (name == "tf32x3")
    if name == "tf32x3":
        assert m.max_error <= 1e-5 < MODES["tf32"].max_error


def test_fp32_is_ieee_and_tight():
    fp32 = MODES["fp32"]
    assert (fp32.input_dtype, fp32.output_dtype) == ("float32", "float32")
    assert fp32.input_precision == "ieee" and fp32.allow_tf32 is False
    # A tf32-like error (~3e-4) must sit above the fp32 band.
    assert fp32.max_error < 3e-4


def test_tf32_sets_allow_tf32():
    tf32 = MODES["tf32"]
    assert tf32.allow_tf32 is True and tf32.input_precision == "tf32"
    assert tf32.input_dtype == "float32"


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(max_error=0.0), "max_error"),
    (dict(max_error=1e-2), "max_error"),            # == bound is not below it
    (dict(max_error=2e-2), "max_error"),
    (dict(input_precision="tf32x9"), "input_precision"),
    (dict(block_max_error=1e-2), "block_max_error"),
])
def test_precision_mode_validation(kwargs, match):
    base = dict(name="x", input_dtype="float32", output_dtype="float32",
                input_precision="ieee", allow_tf32=False, max_error=1e-5, downgrade_hint="h")
    PrecisionMode(**base)  # the base is valid
    with pytest.raises(ValueError, match=match):
        PrecisionMode(**{**base, **kwargs})


# --- get_mode / parse_modes ----------------------------------------------------------------

def test_get_mode_unknown_names_it_and_lists_known():
    assert precision.get_mode("bf16") is MODES["bf16"]
    with pytest.raises(ValueError, match=r"unknown precision mode 'fp64'.*fp32, tf32"):
        precision.get_mode("fp64")


def test_parse_modes_uses_the_canonical_order_and_drops_duplicates():
    # the order modes run in is part of the measurement: a check must match its baseline
    got = precision.parse_modes("bf16, fp32,bf16 ,tf32,fp32")
    assert [m.name for m in got] == ["fp32", "tf32", "bf16"]
    assert precision.parse_modes("tf32x3,fp8,fp16,bf16,tf32,fp32") == tuple(MODES.values())
    assert [m.name for m in precision.parse_modes("fp8")] == ["fp8"]
    assert precision.parse_modes(",".join(MODE_NAMES)) == tuple(MODES.values())


def test_parse_modes_unknown_names_the_mode():
    with pytest.raises(ValueError, match="'int8'"):
        precision.parse_modes("fp32,int8")


@pytest.mark.parametrize("text", ["", " ", ",", " , ,"])
def test_parse_modes_empty(text):
    with pytest.raises(ValueError, match="no precision mode"):
        precision.parse_modes(text)


# --- mode_for_dtype --------------------------------------------------------------------------

@pytest.mark.parametrize(("dtype_name", "mode"), [
    ("float32", "fp32"), ("bfloat16", "bf16"), ("float16", "fp16"),
    ("float8_e4m3fn", "fp8"), ("float8_e4m3fnuz", "fp8"),
])
def test_mode_for_dtype(dtype_name, mode):
    assert precision.mode_for_dtype(dtype_name).name == mode


def test_float32_means_ieee_never_tf32():
    m = precision.mode_for_dtype("float32")
    assert m.name == "fp32" and not m.allow_tf32 and m.input_precision == "ieee"


@pytest.mark.parametrize("dtype_name", ["int32", "int8", "float64", "bool", "complex64"])
def test_mode_for_dtype_rejects_other_dtypes(dtype_name):
    with pytest.raises(TypeError, match=f"unsupported dtype {dtype_name}"):
        precision.mode_for_dtype(dtype_name)


# --- vendor_flags ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", MODE_NAMES)
def test_vendor_flags_set_explicitly_and_restored(name):
    mode = MODES[name]
    # Start from the opposite of what the mode wants, so every flag has to be written.
    if NEW_API:
        M.fp32_precision = "ieee" if mode.allow_tf32 else "tf32"
    else:
        M.allow_tf32 = not mode.allow_tf32
    M.allow_bf16_reduced_precision_reduction = True
    M.allow_fp16_reduced_precision_reduction = True
    before = _flags()
    with precision.vendor_flags(mode):
        assert _tf32() is mode.allow_tf32
        assert M.allow_bf16_reduced_precision_reduction is False
        assert M.allow_fp16_reduced_precision_reduction is False
    assert _flags() == before


@pytest.mark.skipif(not hasattr(torch._C, "_get_cublas_allow_fp16_accumulation"),
                    reason="torch without cuBLAS fp16 accumulation (2.7+)")
def test_vendor_flags_turn_fp16_accumulation_off_and_restore_split_k_whole():
    """cuBLAS's fp16 accumulation (set by a custom provider's module, a test, the
    environment) would let the vendor sum fp16 in fp16; and the reduced-precision flags
    are (reduced, split-K) pairs: restoring the first alone left split-K changed."""
    C = torch._C
    C._set_cublas_allow_fp16_reduced_precision_reduction(*(
        (False, False) if isinstance(C._get_cublas_allow_fp16_reduced_precision_reduction(),
                                     tuple) else (False,)))
    M.allow_fp16_accumulation = True
    before = C._get_cublas_allow_fp16_reduced_precision_reduction()
    try:
        with precision.vendor_flags(MODES["fp16"]):
            assert M.allow_fp16_accumulation is False
        assert M.allow_fp16_accumulation is True
        assert C._get_cublas_allow_fp16_reduced_precision_reduction() == before
    finally:
        M.allow_fp16_accumulation = False


def test_vendor_flags_restored_when_body_raises():
    torch.set_float32_matmul_precision("high")
    M.allow_bf16_reduced_precision_reduction = True
    M.allow_fp16_reduced_precision_reduction = False
    before = _flags()
    assert _tf32() is True
    with pytest.raises(RuntimeError, match="boom"):
        with precision.vendor_flags(MODES["fp32"]):
            assert _tf32() is False
            raise RuntimeError("boom")
    assert _flags() == before


def test_vendor_flags_nested():
    with precision.vendor_flags(MODES["fp32"]):
        with precision.vendor_flags(MODES["tf32"]):
            assert _tf32() is True
        assert _tf32() is False


def test_vendor_flags_restores_medium_precision():
    torch.set_float32_matmul_precision("medium")
    with precision.vendor_flags(MODES["fp32"]):
        pass
    assert torch.get_float32_matmul_precision() == "medium"


@pytest.mark.skipif(not hasattr(M, "fp32_precision"), reason="torch without fp32_precision")
def test_vendor_flags_after_new_fp32_precision_api():
    M.fp32_precision = "tf32"
    with precision.vendor_flags(MODES["fp32"]):
        assert M.fp32_precision == "ieee"
    assert M.fp32_precision == "tf32"


def test_tf32x3_judges_the_kernels_at_their_own_band_and_the_vendor_at_fp32_s():
    """Three bf16 passes leave ~4.4e-6 at any K and passed tf32x3's 1e-5 (a review): the
    kernels' side (Triton, the A/B reference, extras) is judged at 3e-6, the vendor, which
    runs IEEE fp32 (1.9e-6 at K = 11,008 on the H200), at 1e-5."""
    from gemmgate.accuracy import classify
    from gemmgate.precision import band_for

    mode = MODES["tf32x3"]
    assert band_for(mode, "vendor") is mode
    for name in ("triton", "reference", "mymod:gemm"):
        assert band_for(mode, name).max_error == 3e-6
        assert classify(4.4e-6, band_for(mode, name)).status == "downgraded"
        assert classify(3.6e-7, band_for(mode, name)).status == "pass"
    assert classify(4.4e-6, band_for(mode, "vendor")).status == "pass"
    for other in ("fp32", "tf32", "bf16", "fp16", "fp8"):
        assert band_for(MODES[other], "triton") is MODES[other]



def test_an_empty_mode_item_is_refused_and_a_trailing_comma_taken():
    """'fp32,,fp16' ran fp32 and fp16 where --shapes refuses an empty item (a review)."""
    from gemmgate.precision import parse_modes

    with pytest.raises(ValueError, match="has an empty item"):
        parse_modes("fp32,,fp16")
    assert [m.name for m in parse_modes("fp16,fp32,")] == ["fp32", "fp16"]


def test_tf32x3_a_tile_of_bf16x3_on_the_kernels_side_is_downgraded():
    """A whole bf16x3 output (4.4e-6) is downgraded at the kernels' 3e-6 band, but a
    64 x 64 tile of it in an honest tf32x3 output showed at 4.4e-6 to 4.8e-6 in its
    block, under BLOCK_SLACK x 3e-6 = 6e-6, and passed (a review, session 81): the
    kernels' blocks are judged at their band. An honest tf32x3 block (inputs split into
    truncated tf32 halves) stays at 3.7e-7 to 6.6e-7 (K = 1)."""
    from gemmgate.accuracy import classify, errors
    from gemmgate.inputs import make_inputs
    from gemmgate.precision import band_for
    from gemmgate.shapes import Case

    def tf32(x):   # cut to tf32's 10 bits, as the tensor cores read fp32
        return (x.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32)

    def three(a, b, split):   # hi*hi + hi*lo + lo*hi, summed exactly
        ah, bh = split(a), split(b)
        al, bl = split(a - ah), split(b - bh)
        return (ah.double() @ bh.double() + ah.double() @ bl.double()
                + al.double() @ bh.double()).float()

    mode = band_for(MODES["tf32x3"], "triton")
    for k in (1, 64):
        inp = make_inputs(Case(512, 512, k), MODES["tf32x3"], "cpu", 3)
        ref, s2 = inp.reference_and_scale2()
        honest = three(inp.a, inp.b, tf32)
        assert classify(errors(honest, ref, s2), mode).status == "pass"
        out = honest.clone()
        out[448:, 448:] = three(inp.a, inp.b, lambda x: x.bfloat16().float())[448:, 448:]
        e = errors(out, ref, s2)
        assert e.whole < mode.max_error < 4e-6 < e.block < 2 * mode.max_error
        got = classify(e, mode)
        assert got.status == "downgraded" and "bf16x3 or lower" in got.message, got
    assert band_for(MODES["tf32x3"], "vendor").block_max_error is None   # IEEE fp32's
