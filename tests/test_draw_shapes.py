"""scripts/draw_shapes.py: random shape files, the same for the same seed and arguments."""

import csv
import io
from pathlib import Path

import pytest

from gemmgate.shapes import load_shape_file

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "draw_shapes.py"


@pytest.fixture
def ds(load_script):
    return load_script(SCRIPT)


def _rows(ds, capsys, *argv):
    assert ds.main([str(a) for a in argv]) == 0
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def test_a_draw_is_its_seed_s_and_keeps_to_its_bounds(ds, capsys):
    rows = _rows(ds, capsys, 68, 200, "--k-lo", 768)
    assert rows == _rows(ds, capsys, 68, 200, "--k-lo", 768)
    assert rows != _rows(ds, capsys, 69, 200, "--k-lo", 768)
    dims = [(int(r["m"]), int(r["n"]), int(r["k"])) for r in rows]
    assert all(d % 8 == 0 and 256 <= d <= 8192 for shape in dims for d in shape)
    assert all(k >= 768 for _, _, k in dims)
    assert len({d for shape in dims for d in shape}) > 100   # spread, not one value
    # session 44's seed 68 began so (scripts/draw_shapes.py reproduces the draws PERF names)
    assert dims[0] == ds.draw(68, 1, 256, 8192, 768, 8)[0]


def test_layouts_are_drawn_per_row_and_the_file_loads_as_shapes(ds, capsys, tmp_path):
    rows = _rows(ds, capsys, 72, 60, "--layouts", "rc,cr,cc")
    assert {r["layout"] for r in rows} == {"rc", "cr", "cc"}
    again = _rows(ds, capsys, 72, 60, "--layouts", "rc,cr,cc", "--layout-seed", 5)
    assert [r["m"] for r in again] == [r["m"] for r in rows]
    assert [r["layout"] for r in again] != [r["layout"] for r in rows]
    path = tmp_path / "s.csv"
    assert ds.main(["3", "5", "--multiple", "1", "--lo", "17", "--hi", "99"]) == 0
    path.write_text(capsys.readouterr().out)
    assert len(load_shape_file(path)) == 5


def test_m_takes_its_own_range_unrounded(ds, capsys):
    rows = _rows(ds, capsys, 97, 80, "--lo", 128, "--hi", 16384, "--m", "1:32")
    ms = [int(r["m"]) for r in rows]
    assert all(1 <= m <= 32 for m in ms) and any(m % 8 for m in ms) and len(set(ms)) > 10
    assert all(int(r["n"]) % 8 == 0 and 128 <= int(r["n"]) <= 16384 for r in rows)
    plain = _rows(ds, capsys, 97, 80, "--lo", 128, "--hi", 16384)
    assert [r["n"] for r in plain] == [r["n"] for r in rows]   # M's range alone differs


@pytest.mark.parametrize("argv", [["1", "2", "--m", "0:32"], ["1", "2", "--m", "32"],
                                  ["1", "2", "--m", "9:3"],
                                  ["1", "2", "--layouts", "rx"], ["1", "2", "--lo", "0"],
                                  ["1", "2", "--lo", "900", "--hi", "800"],
                                  ["1", "2", "--multiple", "0"]])
def test_bad_arguments_exit_2_with_a_message(ds, capsys, argv):
    assert ds.main(argv) == 2
    assert "draw_shapes:" in capsys.readouterr().err
