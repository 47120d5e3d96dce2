"""gemmgate/inputs.py: `layout` gives the operands' shapes, strides and dtype exactly as
`make_inputs` lays them out, without memory."""

import pytest

from gemmgate.inputs import layout, make_inputs
from gemmgate.precision import MODES
from gemmgate.shapes import Case


@pytest.mark.parametrize("case", [Case(48, 40, 64), Case(33, 17, 65, "cc", 3),
                                  Case(40, 24, 56, "rc", 8), Case(24, 56, 40, "cr")],
                         ids=lambda c: c.id)
@pytest.mark.parametrize("mode", ["fp32", "bf16", "fp8"])
def test_layout_is_make_inputs_layout_without_memory(case, mode):
    got = make_inputs(case, MODES[mode], "cpu")
    a, b = layout(case, MODES[mode])
    assert a.device.type == b.device.type == "meta"
    for x, y in ((a, got.a), (b, got.b)):
        assert (x.shape, x.stride(), x.dtype) == (y.shape, y.stride(), y.dtype)


@pytest.mark.parametrize("case, a_stride, b_stride", [
    (Case(48, 40, 64), (64, 1), (40, 1)),
    (Case(48, 40, 64, "rr", 8), (72, 1), (48, 1)),          # leading dimension K + pad
    (Case(33, 17, 65, "cc", 3), (1, 36), (1, 68)),           # column-major: M + pad, K + pad
    (Case(40, 24, 56, "rc", 8), (64, 1), (1, 64)),
    (Case(24, 56, 40, "cr"), (1, 24), (56, 1)),
], ids=lambda x: x.id if isinstance(x, Case) else "")
@pytest.mark.parametrize("mode", ["fp32", "fp16", "fp8"])
def test_operands_have_the_cases_layout_and_leading_dimension(case, a_stride, b_stride, mode):
    """Strides written out from the case's definition, not from the helpers that lay the
    operands out (comparing `layout` with `make_inputs` alone passed with `pad` ignored by
    both: every +pPAD case then ran contiguous operands)."""
    got = make_inputs(case, MODES[mode], "cpu")
    assert tuple(got.a.shape) == (case.m, case.k) and tuple(got.b.shape) == (case.k, case.n)
    assert got.a.stride() == a_stride and got.b.stride() == b_stride
    assert got.a.is_contiguous() == (case.layout[0] == "r" and not case.pad)
    assert (got.scale_a is not None and got.scale_b is not None) == MODES[mode].scaled


def test_fp8_scales_are_far_apart_and_a_swapped_scale_fails_accuracy():
    """From one normal buffer each, the scales were 0.3-0.5% apart: a kernel that read
    scale_a for scale_b passed (a review). A's values an eighth and B's 8x leave the fp8
    payloads bit for bit as they were and the scales 64x apart."""
    import torch

    from gemmgate.accuracy import classify, errors
    from gemmgate.inputs import FP8_SPREAD

    case, mode = Case(48, 40, 64), MODES["fp8"]
    got = make_inputs(case, mode, "cpu")
    ratio = float(got.scale_a / got.scale_b)
    assert 1 / 100 < ratio < 1 / 40   # 1/64 times the buffers' own amax ratio
    gen = torch.Generator().manual_seed(0)   # the payload as before the spread
    raw = torch.randn(case.m, case.k, generator=gen)
    old = (raw / (raw.abs().amax() / torch.finfo(torch.float8_e4m3fn).max)).to(
        torch.float8_e4m3fn)
    assert torch.equal(got.a.view(torch.uint8), old.view(torch.uint8))
    assert FP8_SPREAD[0] * FP8_SPREAD[1] == 1.0
    ref, s2 = got.reference_and_scale2()
    prod = got.a.float() @ got.b.float()
    right = (prod * got.scale_a * got.scale_b).to(torch.bfloat16)
    swapped = (prod * got.scale_a * got.scale_a).to(torch.bfloat16)
    assert classify(errors(right, ref, s2), mode).status == "pass"
    assert classify(errors(swapped, ref, s2), mode).status != "pass"


def test_fp8_scale_is_the_operands_amax_not_the_padded_buffers():
    from gemmgate.inputs import make_inputs
    from gemmgate.precision import MODES
    from gemmgate.shapes import Case
    for lay in ("rr", "cr", "rc", "cc"):
        inp = make_inputs(Case(5, 7, 3, lay, 3), MODES["fp8"], "cpu", 1)
        for q in (inp.a, inp.b):   # each operand's largest quantised value is the fp8 max
            assert float(q.float().abs().max()) == 448.0
