"""scripts/reads_past_n.py: the cases whose pick reads B past N over a kept copy's zeros,
as the --csv rows session 47's padded.csv held (frozen after ee037cf)."""

import csv
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "reads_past_n.py"


@pytest.fixture
def rp(load_script):
    return load_script(SCRIPT)


def test_a_part_tile_of_few_columns_reads_past_n_and_whole_or_wide_n_does_not(rp, tmp_path,
                                                                              capsys):
    shapes = tmp_path / "s.csv"
    # session 47's shape (fp16: 64x128x128, 4 columns of tiles, N = 408 of 512); N whole
    # in 256 (no room); N = 4100 (B's part tile one of 17 or more columns)
    shapes.write_text("m,n,k\n6296,408,7624\n4096,4096,4096\n2048,4100,2048\n")
    out = tmp_path / "past.csv"
    assert rp.main(["--sets", str(shapes), "--modes", "fp16", "--label", "r",
                    "--csv", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [(r["label"], r["mode"], r["case"]) for r in rows] == \
        [("r", "fp16", "m6296-n408-k7624")]
    block_n = int(rows[0]["block"].split("x")[1])
    assert int(rows[0]["columns"]) == -(-408 // block_n) <= 8
    assert int(rows[0]["b_cols"]) == int(rows[0]["columns"]) * block_n > 408
    assert capsys.readouterr().out.strip() == "1 picks read B past N: r fp16 1"


def test_a_bad_set_is_an_error(rp, capsys):
    assert rp.main(["--sets", "no-such-set", "--modes", "fp16"]) == 2
    assert "reads_past_n: error:" in capsys.readouterr().err


def test_without_kept_copies_only_a_b_the_call_copies_anyway_reads_past_n(rp, tmp_path, capsys):
    """--uncached: fp16's B on 16-byte rows is read as the caller gave it (no copy, no
    room); fp8's is copied K-major on every call, with the zeros, and read past N."""
    shapes = tmp_path / "s.csv"
    shapes.write_text("m,n,k\n6296,408,7624\n")
    assert rp.main(["--sets", str(shapes), "--modes", "fp16,fp8", "--uncached"]) == 0
    assert capsys.readouterr().out.strip() == "1 picks read B past N: s fp8 1"
