"""scripts/ncu_summary.py: Nsight Compute's launch rows matched to tiles.py's
--profile-calls order, a metric's median per provider, and its refusals (exit 2)."""

import csv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "ncu_summary.py"
TIME = "gpu__time_duration.sum"
TENSOR = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"


@pytest.fixture
def ncu(load_script):
    return load_script(SCRIPT)


def _raw(path: Path, launches: list[tuple[int, str, str, str]]) -> Path:
    """A raw page as `ncu --csv --page raw` writes it: header, units, one row a launch
    (ID, kernel, time, tensor %), with thousands separators in large numbers."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_ALL)
        w.writerow(["ID", "Process ID", "Kernel Name", TIME, TENSOR])
        w.writerow(["", "", "", "us", "%"])
        for row in launches:
            w.writerow([row[0], "77", *row[1:]])
    return path


def _order(path: Path, providers: list[tuple[str, int]]) -> Path:
    path.write_text("shape,mode,provider,calls\n" + "".join(
        f"64x64x64,bf16,{p},{n}\n" for p, n in providers))
    return path


def test_launches_go_to_providers_in_call_order_and_each_metric_is_a_median(ncu, tmp_path):
    # listed out of ID order: the IDs decide
    raw = _raw(tmp_path / "r.csv", [(2, "_wide_kernel", "30.0", "60"),
                                    (0, "_tma_kernel", "10.0", "90"),
                                    (1, "_tma_kernel", "12.0", "94"),
                                    (3, "_wide_kernel", "34.0", "70"),
                                    (4, "nvjet_sm90", "1,234.5", "95")])
    order = _order(tmp_path / "o.csv", [("pick tma:128x256x64:s3:w8", 2),
                                        ("tma_wide:128x192x64:s4:w8", 2), ("vendor", 1)])
    out = tmp_path / "s.csv"
    assert ncu.main([str(raw), str(order), "--metric", TIME, "--metric", TENSOR,
                     "--label", "call1", "--out", str(out)]) == 0
    rows = list(csv.DictReader(open(out)))
    assert [(r["provider"], r["kernel"], r["launches"]) for r in rows] == [
        ("pick tma:128x256x64:s3:w8", "_tma_kernel", "2"),
        ("tma_wide:128x192x64:s4:w8", "_wide_kernel", "2"),
        ("vendor", "nvjet_sm90", "1")]
    assert [float(r[TIME]) for r in rows] == [11.0, 32.0, 1234.5]
    assert [float(r[TENSOR]) for r in rows] == [92.0, 65.0, 95.0]
    assert {r["label"] for r in rows} == {"call1"}


def test_kernel_keeps_only_the_gemm_launches(ncu, tmp_path):
    raw = _raw(tmp_path / "r.csv", [(0, "copy_kernel", "1", "0"), (1, "_tma_kernel", "9", "90"),
                                    (2, "copy_kernel", "1", "0"), (3, "nvjet_x", "8", "95")])
    order = _order(tmp_path / "o.csv", [("pick", 1), ("vendor", 1)])
    out = tmp_path / "s.csv"
    assert ncu.main([str(raw), str(order), "--metric", TIME, "--kernel", "_tma|nvjet",
                     "--out", str(out)]) == 0
    assert [r[TIME] for r in csv.DictReader(open(out))] == ["9.0", "8.0"]


@pytest.mark.parametrize("argv,message", [
    (["--metric", TIME], "3 profiled launches, the order names 2 calls"),
    (["--metric", "dram__bytes.sum"], "metric 'dram__bytes.sum' is not in the report"),
])
def test_counts_that_disagree_or_a_missing_metric_exit_2(ncu, tmp_path, capsys, argv, message):
    raw = _raw(tmp_path / "r.csv", [(0, "k", "1", "1"), (1, "k", "1", "1"), (2, "k", "1", "1")])
    order = _order(tmp_path / "o.csv", [("pick", 1), ("vendor", 1)])
    if "dram" in argv[1]:
        order = _order(tmp_path / "o.csv", [("pick", 3)])
    assert ncu.main([str(raw), str(order), *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_file_that_is_no_raw_page_exits_2(ncu, tmp_path, capsys):
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    assert ncu.main([str(bad), str(_order(tmp_path / "o.csv", [("pick", 1)]))]) == 2
    assert "not an ncu raw page" in capsys.readouterr().err
