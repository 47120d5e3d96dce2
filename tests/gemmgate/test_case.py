"""gemmgate/case.py: Case ids, flops and validation."""

import pytest

from gemmgate.case import Case


@pytest.mark.parametrize(("case", "case_id"), [
    (Case(64, 64, 64), "m64-n64-k64"),
    (Case(64, 32, 96, "cr"), "m64-n32-k96-cr"),
    (Case(32, 64, 48, "rc", 5), "m32-n64-k48-rc+p5"),
    (Case(8, 8, 8, "rr", 3), "m8-n8-k8-rr+p3"),
    (Case(0, 8, 8, "cc"), "m0-n8-k8-cc"),
])
def test_case_id(case, case_id):
    assert case.id == case_id


def test_case_layout_id_flops_and_defaults():
    c = Case(2, 3, 4)
    assert (c.layout, c.pad, c.layout_id) == ("rr", 0, "rr")
    assert Case(2, 3, 4, "cc", 7).layout_id == "cc+p7"
    assert c.flops == 2 * 2 * 3 * 4
    assert Case(0, 3, 4).flops == 0
    assert Case(1, 2, 3) == Case(1, 2, 3, "rr", 0)


@pytest.mark.parametrize(("args", "match"), [
    ((-1, 2, 3), "negative dimension"),
    ((1, -2, 3), "negative dimension"),
    ((1, 2, -3), "negative dimension"),
    ((1, 2, 3, "xx"), "unknown layout 'xx'"),
    ((1, 2, 3, "RR"), "unknown layout"),
    ((1, 2, 3, "rr", -1), "pad must be >= 0"),
])
def test_case_validation(args, match):
    with pytest.raises(ValueError, match=match):
        Case(*args)




def test_a_cases_key_in_a_mode_is_the_mode_then_its_id():
    assert Case(64, 64, 64).key("fp32") == "fp32-m64-n64-k64"
    assert Case(64, 64, 64, "cr", 3).key("bf16") == "bf16-m64-n64-k64-cr+p3"


def test_a_dimension_past_any_chips_gemm_is_refused_before_measuring(tmp_path, capsys):
    """0 x 0 x 10**20 passed the memory check (its operands hold no bytes), then failed
    inside torch: exit 3, a C++ stack dump, and the --json there replaced (a review)."""
    import pytest

    from gemmgate.case import MAX_DIM, Case
    from gemmgate.cli import main

    with pytest.raises(ValueError, match=r"a dimension of 2\*\*40 or more"):
        Case(0, 0, MAX_DIM)
    with pytest.raises(ValueError, match=r"a dimension of 2\*\*40 or more"):
        Case(1, 1, 1, "rr", MAX_DIM)
    kept = tmp_path / "keep.json"
    kept.write_text('{"keep": 1}')
    assert main(["run", "--chip", "cpu", "--shapes", "0x0x99999999999999999999",
                 "--json", str(kept)]) == 2
    assert "a dimension of 2**40 or more" in capsys.readouterr().err
    assert kept.read_text() == '{"keep": 1}'
