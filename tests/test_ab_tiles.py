"""scripts/ab_tiles.py: a device A/B's cases as tiles.py rows (the pick's tile and the
reference's), for scripts/model_check.py."""

import csv
import types
from pathlib import Path

import pytest

import kernels
from gemmgate.tuning import config_name, config_spec
from kernels.tile import TileConfig

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "ab_tiles.py"
OLD_TILE = TileConfig(128, 128, 64, 8, 4, 8, "tma")
HEADER = "label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile,accuracy,runs\n"


@pytest.fixture
def ab(load_script):
    return load_script(SCRIPT)


def _old():
    """A `kernels` package whose table picks OLD_TILE everywhere."""
    return types.SimpleNamespace(dispatch=kernels.dispatch, modes=kernels.modes,
                                 configs=kernels.configs, table=types.SimpleNamespace(
                                     lookup=lambda *a, **k: (OLD_TILE, "table")))


@pytest.mark.parametrize("tile", [
    TileConfig(128, 256, 64, 8, 3, 8, "tma"),
    TileConfig(64, 128, 128, 8, 4, 4, "tma_split", 2),
    TileConfig(64, 64, 256, 8, 5, 4, "tma", 1, 2),
    TileConfig(64, 64, 64, 8, 4, 4, "tiled"),
])
def test_a_tile_reads_back_from_its_name(ab, tile):
    assert ab.tile_of(config_name(tile)) == tile


def test_a_name_that_is_no_tile_reads_as_none(ab):
    assert ab.tile_of("{'block_m': 64}") is None


def test_each_ab_case_becomes_the_picks_row_and_the_references(ab):
    rows = list(csv.DictReader((HEADER +
        "call-bf16,bf16,m1024-n2048-k512,400.0,500.0,0.8,ab:1.2500,"
        "tma 128x256x64 g8 s3 w8,pass,1\n"
        "call-bf16,bf16,m512-n512-k512-rc,100.0,,,,tma 64x64x64 g8 s4 w4,pass,1\n"
        "other-bf16,bf16,m64-n64-k64,1.0,1.0,1.0,ab:1.0,tma 64x64x64 g8 s4 w4,pass,1\n"
        "call-bf16,bf16,m256-n256-k256,10.0,10.0,1.0,ab:1.0100,"
        "tma 128x128x64 g8 s4 w8,pass,1\n").splitlines()))
    out, skipped = ab.rows_for(rows, "call-", _old())
    assert skipped == 1          # no ab: not an A/B row
    us = 2.0 * 1024 * 2048 * 512 / 400e6          # 400 TFLOP/s
    assert [(r["shape"], r["provider"], r["us"]) for r in out] == [
        ("1024x2048x512", "tma:128x256x64:s3:w8", f"{us:.2f}"),
        ("1024x2048x512", config_spec(OLD_TILE), f"{us * 1.25:.2f}")]
    assert [r["ratio"] for r in out] == ["0.8000", "0.6400"]   # cuBLAS at 500 TFLOP/s
    assert {r["flush"] for r in out} == {"1"}      # the same tile both sides (last row): none


def test_the_rows_are_what_model_check_reads(ab, load_script, tmp_path):
    """The written file parses as tiles.py rows: one measurement of two tiles a case."""
    rows = list(csv.DictReader((HEADER +
        "call-fp8,fp8,m1536-n1536-k3072,700.0,900.0,0.78,ab:1.1000,"
        "tma 64x128x256 g8 s4 w4,pass,1\n").splitlines()))
    out, _ = ab.rows_for(rows, "call-", _old())
    path = tmp_path / "tiles_ab.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=ab.FIELDS)
        w.writeheader()
        w.writerows(out)
    parse = load_script(ROOT / "scripts" / "device" / "tiles.py", "tiles_for_ab").parse_tile
    got = list(csv.DictReader(path.open()))
    assert [parse(r["provider"]) for r in got] == [TileConfig(64, 128, 256, 8, 4, 4, "tma"),
                                                  OLD_TILE]


def test_bad_input_is_exit_2(ab, tmp_path, capsys):
    assert ab.main([str(tmp_path / "none.csv"), "--label", "x", "--ref", "HEAD",
                    "--out", str(tmp_path / "o.csv")]) == 2
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    assert ab.main([str(bad), "--label", "x", "--ref", "no-such-ref-anywhere",
                    "--out", str(tmp_path / "o.csv")]) == 2
    assert "no-such-ref-anywhere" in capsys.readouterr().err
    empty = tmp_path / "empty.csv"
    empty.write_text(HEADER)
    assert ab.main([str(empty), "--label", "x", "--ref", "HEAD",
                    "--out", str(tmp_path / "o.csv")]) == 2
    assert not (tmp_path / "o.csv").exists()


def test_an_out_that_cannot_be_written_is_exit_2_and_a_missing_folder_is_made(ab, tmp_path,
                                                                              capsys):
    """--out a directory was a traceback (IsADirectoryError, exit 1) after the work, its
    OUT.tmp left beside it; --out in a folder not made yet was one (FileNotFoundError)."""
    cases = tmp_path / "cases.csv"
    cases.write_text(HEADER + "x,bf16,m1024-n1024-k1024,36.6,33.7,1.0861,ab:1.1,"
                     "tma 16x16x16 g8 s3 w4,pass,1\n")
    folder = tmp_path / "folder"
    folder.mkdir()
    assert ab.main([str(cases), "--label", "x", "--ref", "HEAD", "--out", str(folder)]) == 2
    assert "--out file" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases.csv", "folder"]
    made = tmp_path / "new" / "tiles_ab.csv"
    assert ab.main([str(cases), "--label", "x", "--ref", "HEAD", "--out", str(made)]) == 0
    assert len(list(csv.DictReader(made.open()))) == 2
