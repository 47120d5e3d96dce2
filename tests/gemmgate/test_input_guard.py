"""gemmgate/input_guard.py: a write into a case's inputs told by values, and the inputs
made again in place. (Through a whole case: tests/gemmgate/test_run.py.)"""

import torch

from gemmgate.input_guard import InputGuard
from gemmgate.inputs import make_inputs
from gemmgate.precision import MODES
from gemmgate.shapes import Case


def _guard():
    case, mode = Case(8, 8, 8), MODES["fp32"]
    inp = make_inputs(case, mode, "cpu", 7, "float8_e4m3fn")
    return inp, InputGuard(inp, lambda: make_inputs(case, mode, "cpu", 7, "float8_e4m3fn"))


def test_untouched_inputs_are_not_written():
    inp, guard = _guard()
    assert not guard.written() and not guard.written()


def test_a_write_is_seen_once_and_the_inputs_are_made_again_in_place():
    inp, guard = _guard()
    a, first = inp.a, inp.a.clone()
    inp.a.add_(1.0)
    assert guard.written()
    assert inp.a is a and torch.equal(inp.a, first)   # the same tensor, its values again
    assert not guard.written()


def test_a_counter_moved_by_a_metadata_change_alone_is_no_write():
    inp, guard = _guard()
    inp.b.unsqueeze_(0)
    inp.b.squeeze_(0)
    assert not guard.written()
