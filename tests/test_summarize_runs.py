"""scripts/summarize_runs.py: compact rows from run JSON files, merged by label."""

import csv
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "summarize_runs.py"


@pytest.fixture
def sr(load_script):
    return load_script(SCRIPT)


def _run(path: Path, ratio: float, ref_ms: float | None = None) -> Path:
    providers = {"triton": {"tflops": 200.0, "median_ms": 1.0, "accuracy": "pass"},
                 "vendor": {"tflops": 100.0, "median_ms": 2.0, "accuracy": "pass"}}
    if ref_ms is not None:
        providers["reference"] = {"median_ms": ref_ms}
    case = {"id": "bf16-m64-n64-k64", "mode": "bf16", "ratio": ratio,
            "ratios": {"vendor": ratio}, "providers": providers,
            "telemetry": {"triton_config": "tma 64x64x64 g8 s4 w4"}}
    path.write_text(json.dumps({"cases": [case]}))
    return path


def test_a_label_given_again_replaces_its_rows_and_keeps_the_others(sr, tmp_path):
    out = tmp_path / "cases.csv"
    assert sr.main([str(out), f"a={_run(tmp_path / 'a.json', 2.0)}"]) == 0
    assert sr.main([str(out), f"b={_run(tmp_path / 'b.json', 1.5, ref_ms=1.1)}"]) == 0
    assert sr.main([str(out), f"a={_run(tmp_path / 'a2.json', 3.0)}"]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [(r["label"], r["ratio"]) for r in rows] == [("b", "1.5000"), ("a", "3.0000")]
    assert rows[0]["extra"] == "ab:1.1000"   # the reference's time / Triton's
    assert rows[1]["tile"] == "tma 64x64x64 g8 s4 w4" and rows[1]["case"] == "m64-n64-k64"


def test_an_existing_file_of_another_kind_is_refused_and_kept(sr, tmp_path, capsys):
    out = tmp_path / "shapes.csv"
    out.write_text("m,n,k,layout,pad\n256,256,128,rr,0\n")
    assert sr.main([str(out), f"a={_run(tmp_path / 'a.json', 2.0)}"]) == 2
    assert "no 'label' column" in capsys.readouterr().err
    assert out.read_text() == "m,n,k,layout,pad\n256,256,128,rr,0\n"
