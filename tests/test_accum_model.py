"""scripts/accum_model.py: the fast-accumulation model's limits (many bits: the output's
own rounding; fewer: an error that grows with K and that a split cuts), its fit's reading
of an accum.csv, and its refusals (exit 2 with a message)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import accum_model  # noqa: E402


def test_with_a_full_fp32_sum_the_error_is_the_outputs_own_rounding():
    import torch

    from gemmgate.accuracy import errors
    from gemmgate.inputs import make_inputs
    from gemmgate.precision import MODES
    from gemmgate.shapes import Case

    inp = make_inputs(Case(16, 16, 512), MODES["fp8"], "cpu", seed=1)
    ref = (inp.a.double() @ inp.b.double()) * float(inp.scale_a) * float(inp.scale_b)
    own = errors(ref.to(torch.bfloat16), ref).whole
    assert accum_model.error(512, 1, 24, 32, 16) == pytest.approx(own, rel=0.02)


def test_a_short_sum_grows_its_error_with_k_and_a_split_cuts_it():
    short = [accum_model.error(k, 1, 8, 32, 16) for k in (256, 1024, 4096)]
    assert short[0] < short[1] < short[2]
    assert accum_model.error(4096, 4, 8, 32, 16) < 0.75 * short[2]


def test_the_fit_reads_tritons_default_rows_by_k(tmp_path):
    path = tmp_path / "accum.csv"
    path.write_text("shape,mode,provider,promote,error,block_error,excess,ms,tflops\n"
                    "64x64x1024,fp8,triton,default,2e-3,0,0,1,1\n"
                    "128x64x1024,fp8,triton,default,4e-3,0,0,1,1\n"
                    "64x64x1024,fp8,triton,block,1e-3,0,0,1,1\n"
                    "64x64x1024,fp8,cublas,default,1e-3,0,0,1,1\n"
                    "64x64x4096,fp8,triton,default,5e-3,0,0,1,1\n")
    assert accum_model.measured(path) == {1024: 3e-3, 4096: 5e-3}


@pytest.mark.parametrize("argv,says", [
    (["--ks", "1024,x"], "--ks must be positive integers"),
    (["--splits", "0"], "--splits must be positive integers"),
    (["--bits", "30"], "--bits must be 2-24"),
    (["--fit", "/nonexistent/accum.csv"], "No such file"),
])
def test_bad_input_exits_2_with_a_message(argv, says, capsys):
    assert accum_model.main(argv) == 2
    assert says in capsys.readouterr().err


def test_an_accum_csv_without_tritons_fp8_rows_is_refused(tmp_path, capsys):
    path = tmp_path / "accum.csv"
    path.write_text("shape,mode,provider,promote,error,block_error,excess,ms,tflops\n"
                    "64x64x1024,bf16,triton,default,2e-3,0,0,1,1\n")
    assert accum_model.main(["--fit", str(path)]) == 2
    assert "no fp8 rows" in capsys.readouterr().err


def test_a_csv_of_other_columns_is_refused(tmp_path, capsys):
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    assert accum_model.main(["--fit", str(path)]) == 2
    assert "not an accum.py CSV" in capsys.readouterr().err


def test_price_gives_the_picks_splits_at_the_step_models_cost(tmp_path):
    """An unsplit pick over a long K (4096 x 4096 x 32768: 512 tiles of 128x256, whole
    waves): its own price first (speed 1), then each split of it, slower by the partials
    it writes and reads and no wave it fills; the CSV holds the same rows."""
    out = tmp_path / "price.csv"
    assert accum_model.main(["--price", "4096x4096x32768", "--splits", "1,2", "--csv",
                             str(out)]) == 0
    rows = out.read_text().splitlines()
    assert rows[0] == ",".join(accum_model.PRICE_FIELDS)
    one, two = (r.split(",") for r in rows[1:])
    assert one[0] == two[0] == "4096x4096x32768" and one[1].startswith("tma ")
    assert (one[3], one[5]) == ("1", "1.000") and two[3] == "2"
    assert float(two[4]) > float(one[4]) and float(two[5]) < 1


@pytest.mark.parametrize("shapes", ["4096x4096", "4096x4096x-5", "axbxc"])
def test_a_price_shape_not_mxnxk_is_refused(shapes, capsys):
    assert accum_model.main(["--price", shapes]) == 2
    assert "accum_model: error: --price" in capsys.readouterr().err


def test_the_fit_writes_a_row_per_bits_with_its_spread(tmp_path):
    """--fit-csv: bits 9-14, each the model's error over the measured one (geomean, min,
    max over the measured K); more bits, a smaller error: the geomeans fall."""
    path, out = tmp_path / "accum.csv", tmp_path / "fit.csv"
    path.write_text("shape,mode,provider,promote,error,block_error,excess,ms,tflops\n"
                    "16x16x256,fp8,triton,default,2e-3,0,0,1,1\n"
                    "16x16x1024,fp8,triton,default,3e-3,0,0,1,1\n")
    assert accum_model.main(["--fit", str(path), "--fit-csv", str(out), "--mn", "16",
                             "--ks", "256", "--splits", "1"]) == 0
    rows = out.read_text().splitlines()
    assert rows[0] == ",".join(accum_model.FIT_FIELDS) and len(rows) == 7
    fits = [r.split(",") for r in rows[1:]]
    assert [f[0] for f in fits] == [str(b) for b in range(9, 15)]
    assert all(float(f[2]) <= float(f[1]) <= float(f[3]) and f[4] == "256 1024" for f in fits)
    assert float(fits[0][1]) > float(fits[-1][1])
