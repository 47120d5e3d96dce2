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
