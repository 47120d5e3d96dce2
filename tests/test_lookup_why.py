"""scripts/lookup_why.py: one case's pick, its neighbours and their priced options."""

from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "lookup_why.py"


@pytest.fixture
def lw(load_script):
    return load_script(SCRIPT)


def test_a_case_s_pick_is_the_lookup_s_and_its_groups_are_listed(lw, capsys):
    import kernels

    ld = lw.sys.modules["lookup_diff"]
    from gemmgate.shapes import Case

    case = Case(952, 4312, 992)
    assert lw.main(["bf16", "952x4312x992"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == f"pick: {ld.pick(kernels, 'bf16', case, 132)} (table-nearest)"
    assert out[2] == "16bit bf16 rr tma ld128:"
    assert sum(line.startswith("  near entry") for line in out) == 6   # both 16-bit types
    options = [line for line in out if line.startswith("    near option")]
    assert len(options) == 8 and all(" us x1." in line for line in options)
    # the options are listed best first, each weighed by its margin
    lines = lw.explain("bf16", 952, 4312, 992, top=50)
    first = [float(x.split()[2]) * float(x.split()[4][1:]) for x in lines
             if x.startswith("    near option")]
    assert first[:len(first) // 2] == sorted(first[:len(first) // 2])


def test_a_column_major_case_reads_its_own_bucket(lw):
    assert "bucket '16bit bf16 cr tma" in lw.explain("bf16", 528, 6984, 3072, "cr")[0]


@pytest.mark.parametrize("argv", [["bf17", "1x2x3"], ["bf16", "1x2"], ["bf16", "0x2x3"],
                                  ["bf16", "1x2x3", "--top", "0"]])
def test_bad_input_exits_2_with_a_message(lw, capsys, argv):
    assert lw.main(argv) == 2
    assert "lookup_why:" in capsys.readouterr().err


def test_another_device_reads_its_own_table_over_the_lent_one(lw, capsys):
    """--device: an H100 reads its own entries first (session 65: its fp8 4096^2 entry,
    tuned there, is its exact pick; the H200's own entry for that shape is another tile)."""
    h100 = lw.explain("fp8", 4096, 4096, 4096, device="NVIDIA H100 80GB HBM3")
    h200 = lw.explain("fp8", 4096, 4096, 4096)
    assert "(table)" in h100[1] and "(table)" in h200[1] and h100[1] != h200[1]
    assert lw.main(["fp8", "4096x4096x4096", "--device", "NVIDIA H100 80GB HBM3"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == h100[1]


def test_a_pick_borrowed_from_another_bucket_lists_that_bucket(lw):
    """bf16 1000 x 3000 x 700 cc has no entry near in its bucket: the lookup borrows the
    row-major bucket's tile (`table._sources`), and the listing names that bucket and the
    variants that carry (it listed nothing, a review)."""
    lines = lw.explain("bf16", 1000, 3000, 700, "cc")
    assert "bucket '16bit bf16 cc tma ld128'" in lines[0] and "(table-nearest)" in lines[1]
    heads = [line for line in lines if not line.startswith(" ")][2:]
    assert heads and heads[0].startswith("16bit bf16 rr tma ld128 (borrowed: tma, ")
    assert any(line.startswith("  near entry") for line in lines)


def test_a_near_entry_with_no_option_here_is_said_to_be_taken_as_it_is(lw):
    """bf16 48 x 128 x 7680's one near entry is a 64-way split of 96 x 128 x 61440, whose
    K ranges do not fit 7680: nothing is priced, and its 64 ranges are more than K's 60
    blocks: the heuristic decides (session 77: such a pick ran x1.11 by the heuristic's
    on an H100). fp32 256 x 256 x 128's nearest split fits its 4 blocks: taken as it is
    (the heuristic's ran x0.89)."""
    lines = lw.explain("bf16", 48, 128, 7680)
    assert "heuristic" in lines[1] and "k64" not in lines[1]
    assert ("    no option priced: the nearest entry's split k64 is more ranges than K's 60 "
            "blocks: the next source or the heuristic decides") in lines
    lines = lw.explain("fp32", 256, 256, 128)
    assert "k4" in lines[1] and "table-nearest" in lines[1]
    assert "    no option priced: the nearest entry's tile is taken as it is" in lines


def test_tables_the_device_cannot_read_exit_2_with_the_tables_message(lw, capsys,
                                                                       monkeypatch):
    """A candidate table beside the device's own (both `match` it: table_file.TableError
    at the lookup) was a traceback and exit 1, where lookup_diff says it and exits 2."""
    from kernels import table, table_file

    def two_claim(*args, **kw):
        raise table_file.TableError("tuning tables a.json and b.json both name "
                                    "'nvidia h200' in their match: keep one")

    monkeypatch.setattr(table, "lookup", two_claim)
    assert lw.main(["bf16", "2264x616x136"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lookup_why: error: tuning tables a.json and b.json both name")
    assert "Traceback" not in err


def test_a_device_no_table_names_is_exit_2(lw, capsys):
    """--device naming no table (a typo) printed "pick: none (the heuristic's tile)", exit 0,
    as if the table had nothing near."""
    assert lw.main(["bf16", "4096x4096x4096", "--device", "NVIDIA H2OO"]) == 2
    assert "no tuning table" in capsys.readouterr().err
