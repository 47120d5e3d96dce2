"""scripts/summarize_runs.py: compact rows from run JSON files, merged by label."""

import csv
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "summarize_runs.py"


@pytest.fixture
def sr(load_script):
    return load_script(SCRIPT)


def _run(path: Path, ratio: float, ref_ms: float | None = None,
         ref_rounds: tuple[float, ...] = (), rounds: tuple[float, ...] = (1.0,) * 6) -> Path:
    """A run file of one bf16 64^3 case: Triton's `rounds` (1 ms), the vendor `ratio` ms,
    the reference (an A/B) `ref_ms` or its rounds `ref_rounds`."""
    from gemmgate.results import CaseResult, ProviderResult, RunRecord
    from gemmgate.shapes import Case

    times = {"triton": rounds, "vendor": (ratio,) * 6}
    if ref_ms is not None or ref_rounds:
        times["reference"] = ref_rounds or (ref_ms,) * 6
    case = CaseResult("bf16", Case(64, 64, 64), {
        n: ProviderResult(n, "pass", 1e-3, "", ts, tflops=0.5 / ts[0])
        for n, ts in times.items()}, telemetry={"triton_config": "tma 64x64x64 g8 s4 w4"})
    path.write_text(json.dumps(RunRecord({"chip": "h"}, "s", (case,)).to_json()))
    return path


def test_a_label_given_again_replaces_its_rows_and_keeps_the_others(sr, tmp_path):
    out = tmp_path / "cases.csv"
    assert sr.main([str(out), f"a={_run(tmp_path / 'a.json', 2.0)}"]) == 0
    assert sr.main([str(out), f"b={_run(tmp_path / 'b.json', 1.5, ref_ms=1.1)}"]) == 0
    assert sr.main([str(out), f"a={_run(tmp_path / 'a2.json', 3.0)}"]) == 0
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert [(r["label"], r["ratio"]) for r in rows] == [("b", "1.5000"), ("a", "3.0000")]
    assert rows[0]["extra"] == "ab:1.1000"   # the reference's time / Triton's
    assert rows[1]["tile"] == "tma 64x64x64 g8 s4 w4" and rows[1]["case"] == "m64-n64-k64"


def test_an_existing_file_of_another_kind_is_refused_and_kept(sr, tmp_path, capsys):
    out = tmp_path / "shapes.csv"
    out.write_text("m,n,k,layout,pad\n256,256,128,rr,0\n")
    assert sr.main([str(out), f"a={_run(tmp_path / 'a.json', 2.0)}"]) == 2
    assert "no 'label' column" in capsys.readouterr().err
    assert out.read_text() == "m,n,k,layout,pad\n256,256,128,rr,0\n"


def test_the_ab_is_the_gate_s_median_of_the_rounds_ratios(sr, tmp_path):
    """Rounds in two clock states, Triton 1 1 1 2 2 2 ms, the reference 2 2 2 1 1 1: the
    paired ratios 2 2 2 0.5 0.5 0.5 have the median 1.25 (the gate's A/B,
    `CaseResult.ab_median`); the medians' ratio, which the script gave, is 1."""
    out = tmp_path / "cases.csv"
    run = _run(tmp_path / "a.json", 2.0, ref_rounds=(2.0, 2.0, 2.0, 1.0, 1.0, 1.0),
               rounds=(1.0, 1.0, 1.0, 2.0, 2.0, 2.0))
    assert sr.main([str(out), f"a={run}"]) == 0
    row = next(csv.DictReader(out.read_text().splitlines()))
    assert row["extra"].startswith("ab:1.2500")


def test_a_providers_block_excess_is_kept_beside_its_whole_excess(sr, tmp_path):
    """`bx_NAME`: the error beyond the output's rounding in its worst block (session 70
    on), in e-notation as `xs_NAME`; none where the run did not record it."""
    run = _run(tmp_path / "r.json", 0.9)
    data = json.loads(run.read_text())
    data["cases"][0]["providers"]["triton"].update(excess=2e-4, block_excess=6.5e-4,
                                                   element=1.5e-2)
    run.write_text(json.dumps(data))
    out = tmp_path / "cases.csv"
    assert sr.main([str(out), f"a={run}"]) == 0
    (row,) = csv.DictReader(out.open())
    assert "xs_triton:2.00e-04" in row["extra"] and "bx_triton:6.50e-04" in row["extra"]
    assert "el_triton:1.50e-02" in row["extra"]   # its worst element's (session 79 on)
    assert "bx_vendor" not in row["extra"] and "el_vendor" not in row["extra"]



@pytest.mark.parametrize("field, word", [("element", "inf"), ("excess", "nan"),
                                         ("block_excess", "inf")])
def test_an_error_written_as_a_word_is_a_number_in_the_row(sr, tmp_path, field, word):
    """The run file writes an error past any number as "inf" or "nan" (a nonzero output
    where the product is zero, K = 0): the row's e-notation raised on the word, a
    ValueError traceback (a review)."""
    run = _run(tmp_path / "a.json", 2.0)
    data = json.loads(run.read_text())
    data["cases"][0]["providers"]["triton"][field] = word
    run.write_text(json.dumps(data))
    out = tmp_path / "cases.csv"
    assert sr.main([str(out), f"a={run}"]) == 0
    extra = next(csv.DictReader(out.read_text().splitlines()))["extra"]
    short = {"element": "el", "excess": "xs", "block_excess": "bx"}[field]
    assert f"{short}_triton:{word}" in extra.split()


def _failed_run(path: Path) -> Path:
    """`_run`'s case, Triton failing accuracy there: not timed, no ratio."""
    data = json.loads(_run(path, 2.0).read_text())
    case = data["cases"][0]
    case["providers"]["triton"].update(accuracy="fail", message="max error 3", tflops=None,
                                       median_ms=None, samples_ms=[])
    case.update(passed=False, ratio=None)
    path.write_text(json.dumps(data))
    return path


def test_every_runs_accuracy_and_ratio_count_whatever_their_order(sr, tmp_path):
    """A label's second run failing accuracy read "pass" (the first run's alone); with the
    failing run first, the other run's ratio was left blank."""
    good, bad = _run(tmp_path / "a.json", 2.0), _failed_run(tmp_path / "b.json")
    for name, runs in (("ab.csv", (good, bad)), ("ba.csv", (bad, good))):
        out = tmp_path / name
        assert sr.main([str(out), "a=" + ",".join(map(str, runs))]) == 0
        (row,) = csv.DictReader(out.read_text().splitlines())
        assert (row["accuracy"], row["ratio"], row["runs"]) == (
            "fail 1/2, pass 1/2", "2.0000", "2"), name


def test_a_label_given_twice_or_a_missing_run_is_refused(sr, tmp_path, capsys):
    run, out = _run(tmp_path / "a.json", 2.0), tmp_path / "cases.csv"
    assert sr.main([str(out), f"a={run}", f"a={run}"]) == 2   # (each row written twice)
    assert sr.main([str(out), f"a={tmp_path / 'missing.json'}"]) == 2   # (a traceback)
    err = capsys.readouterr().err
    assert "label a given more than once" in err and "missing.json" in err
    assert not out.exists()


def test_a_rate_under_one_tflops_keeps_its_digits(sr, tmp_path):
    """A CPU's rates (0.004 TFLOP/s) had been written 0.0, which read as nothing ran."""
    out = tmp_path / "cases.csv"
    assert sr.main([str(out), f"a={_run(tmp_path / 'a.json', 2.0, rounds=(125.0,) * 6)}"]) == 0
    row = next(csv.DictReader(out.read_text().splitlines()))
    assert (row["triton_tflops"], row["vendor_tflops"]) == ("0.004", "0.25")
    assert sr._tflops(666.04) == "666.0" and sr._tflops(None) == "" and sr._tflops(0.0) == ""


def test_a_failed_write_keeps_the_other_labels_rows(sr, tmp_path, monkeypatch, capsys):
    out = tmp_path / "cases.csv"
    assert sr.main([str(out), f"a={_run(tmp_path / 'a.json', 2.0)}"]) == 0
    before = out.read_text()

    def boom(path, text):
        raise OSError("disk full")
    monkeypatch.setattr("gemmgate.files.write_text_atomic", boom)
    assert sr.main([str(out), f"b={_run(tmp_path / 'b.json', 1.5)}"]) == 2
    assert out.read_text() == before
    assert "disk full" in capsys.readouterr().err
