"""kernels/modes.py: the kernel's own table of precision names agrees with the harness's
(gemmgate/precision.py), as its docstring says this file checks (it did not exist: a
review, session 81). The kernel reads the contract's names itself so an old commit's
`kernels/` loads alone; a mode changed in one table only would have the harness judge
the kernel under another mode than it ran."""

import pytest

from gemmgate import precision
from kernels import modes


def test_both_tables_name_the_same_modes():
    assert set(modes.MODES) == set(precision.MODES)


@pytest.mark.parametrize("name", precision.MODE_NAMES)
def test_each_mode_means_the_same_to_the_kernel_and_the_harness(name):
    mine, theirs = modes.mode_named(name), precision.get_mode(name)
    assert theirs.input_dtype in mine.input_dtypes
    assert mine.output_dtype == theirs.output_dtype
    assert mine.input_precision == theirs.input_precision
    assert mine.scaled == theirs.scaled


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float8_e4m3fn",
                                   "float8_e4m3fnuz"])
def test_a_bare_dtype_implies_the_same_mode_on_both_sides(dtype):
    """float32 is IEEE fp32 on both sides, never tf32."""
    assert modes.mode_for_dtype(dtype).name == precision.mode_for_dtype(dtype).name


def test_a_mode_changed_in_one_table_only_is_seen(monkeypatch):
    """The check can fail: the kernel's fp32 made tf32 is told apart."""
    from dataclasses import replace

    monkeypatch.setitem(modes.MODES, "fp32", replace(modes.MODES["fp32"],
                                                     input_precision="tf32"))
    with pytest.raises(AssertionError):
        test_each_mode_means_the_same_to_the_kernel_and_the_harness("fp32")
