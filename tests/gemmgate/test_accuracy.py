"""gemmgate/accuracy.py: verdict boundaries per mode and the relative Frobenius error."""

import math

import pytest
import torch

from gemmgate.accuracy import DOWNGRADED, FAIL, PASS, Accuracy, classify, relative_error
from gemmgate.precision import MODE_NAMES, MODES

# --- classify ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", MODE_NAMES)
def test_classify_boundaries_every_mode(name):
    mode = MODES[name]
    assert classify(0.0, mode).status == PASS
    assert classify(mode.max_error, mode).status == PASS          # the band is inclusive
    assert classify(mode.max_error * 1.01, mode).status == DOWNGRADED
    assert classify(mode.bound, mode).status == DOWNGRADED        # the bound is inclusive
    assert classify(mode.bound * 1.01, mode).status == FAIL


@pytest.mark.parametrize("name", MODE_NAMES)
@pytest.mark.parametrize("error", [math.nan, math.inf, -math.inf])
def test_classify_non_finite_fails(name, error):
    acc = classify(error, MODES[name])
    assert acc.status == FAIL and not acc.ok
    assert "NaN/Inf" in acc.message


@pytest.mark.parametrize(("name", "error", "status"), [
    ("fp32", 1e-7, PASS),
    ("fp32", 3e-4, DOWNGRADED),      # tf32-like error under an fp32 promise
    ("fp32", 3e-3, DOWNGRADED),      # bf16-like
    ("tf32", 3e-4, PASS),
    ("tf32", 3e-3, DOWNGRADED),
    ("bf16", 2e-3, PASS),
    ("bf16", 2e-2, FAIL),
    ("fp16", 2e-4, PASS),
    ("fp16", 3e-3, DOWNGRADED),
    ("fp8", 4e-3, PASS),
    ("fp8", 5e-2, FAIL),
])
def test_classify_typical_errors(name, error, status):
    assert classify(error, MODES[name]).status == status


def test_downgraded_message_and_fields():
    acc = classify(3e-4, MODES["fp32"])
    assert acc == Accuracy(3e-4, DOWNGRADED, acc.message)
    assert not acc.ok
    assert "precision downgraded" in acc.message
    assert "fp32" in acc.message and "tf32 or lower" in acc.message


def test_fail_and_pass_messages():
    fail = classify(2e-2, MODES["bf16"])
    assert fail.status == FAIL and "bound" in fail.message and not fail.ok
    ok = classify(2e-3, MODES["bf16"])
    assert ok.ok and ok.message == "" and ok.error == 2e-3


# --- relative_error -----------------------------------------------------------------------

def _ref(shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)


def test_exact_output_has_zero_error():
    ref = _ref((8, 5))
    assert relative_error(ref.clone(), ref) == 0.0
    # float32 output of float64 values: only output rounding (2^-24 relative) remains.
    assert 0.0 < relative_error(ref.float(), ref) < 1e-7


def test_known_relative_error():
    ref = torch.ones(4, 4, dtype=torch.float64)
    out = ref.clone()
    out[0, 0] = 3.0                       # ||diff|| = 2, ||ref|| = 4 -> 0.5 exactly
    assert relative_error(out, ref) == pytest.approx(0.5, rel=1e-15)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_output_is_infinite(bad):
    ref = _ref((4, 4))
    out = ref.float()
    out[1, 2] = bad
    assert relative_error(out, ref) == math.inf


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_empty_and_k0_outputs(dtype):
    empty = torch.empty(0, 7, dtype=dtype)
    assert relative_error(empty, torch.empty(0, 7, dtype=torch.float64)) == 0.0
    # K = 0: C = A @ B is all zeros.
    a, b = torch.empty(5, 0, dtype=dtype), torch.empty(0, 3, dtype=dtype)
    zeros_ref = a.double() @ b.double()
    assert relative_error(a @ b, zeros_ref) == 0.0


def test_zero_reference_with_nonzero_output_is_infinite():
    ref = torch.zeros(3, 3, dtype=torch.float64)
    out = torch.zeros(3, 3)
    out[2, 2] = 1e-30
    assert relative_error(out, ref) == math.inf


def test_shape_mismatch_is_rejected():
    ref = torch.ones(3, 4, dtype=torch.float64)
    with pytest.raises(ValueError):
        relative_error(torch.ones(1, 4), ref)


def test_realistic_fp32_and_bf16_rounded_matmul():
    g = torch.Generator().manual_seed(1234)
    a = torch.randn(128, 256, generator=g)
    b = torch.randn(256, 64, generator=g)
    ref = a.double() @ b.double()

    # float32 GEMM with K=256: ~2e-7 relative; bound 1e-6.
    err32 = relative_error(a @ b, ref)
    assert 0.0 < err32 < 1e-6
    assert classify(err32, MODES["fp32"]).status == PASS

    # Inputs rounded to bfloat16 (8-bit mantissa, ~1e-3 rms relative each), float32 math,
    # against the float64 result of the unrounded inputs: ~2e-3 relative, above 1e-3.
    err_bf = relative_error(a.bfloat16().float() @ b.bfloat16().float(), ref)
    assert 1e-3 < err_bf < 5e-3
    acc = classify(err_bf, MODES["fp32"])
    assert acc.status == DOWNGRADED and "precision downgraded" in acc.message
