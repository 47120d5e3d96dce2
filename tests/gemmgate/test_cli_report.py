"""`gemmgate report` end to end: exit 2 on bad input before anything is drawn, the CPU
path (a `smoke` run, then its report beside the committed CPU baseline), and matplotlib
stays out of every other command."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gemmgate.cli import main
from gemmgate.shapes import Case

REPO = Path(__file__).resolve().parents[2]
CPU_BASE = REPO / "baselines" / "cpu.json"


@pytest.fixture
def run_file(tmp_path, synthetic_record):
    rec = synthetic_record([("fp32", Case(64, 64, 64)), ("fp32", Case(48, 80, 72))])
    p = tmp_path / "run.json"
    p.write_text(json.dumps(rec.to_json()))
    return p


def _bad_inputs(tmp_path, run_file):
    """(name, argv tail, text the error must hold) for each way the input can be wrong."""
    (tmp_path / "notjson.json").write_text("{not json")
    (tmp_path / "schema.json").write_text(json.dumps({"schema": "other/9", "cases": []}))
    bad_case = json.loads(run_file.read_text())
    bad_case["cases"][0]["m"] = "64"
    (tmp_path / "badcase.json").write_text(json.dumps(bad_case))
    base = json.loads(CPU_BASE.read_text())
    base["version"] = 99
    (tmp_path / "base99.json").write_text(json.dumps(base))
    (tmp_path / "afile").write_text("x")
    r = str(run_file)
    return {
        "missing run": ([str(tmp_path / "nope.json")], "nope.json"),
        "run not JSON": ([str(tmp_path / "notjson.json")], "notjson.json"),
        "run of another schema": ([str(tmp_path / "schema.json")], "schema.json"),
        "run with a bad case": ([str(tmp_path / "badcase.json")], "cases[0].m"),
        "missing baseline": ([r, "--baseline", str(tmp_path / "gone.json")], "gone.json"),
        "baseline of another version": ([r, "--baseline", str(tmp_path / "base99.json")],
                                        "base99.json"),
        "baseline is a run": ([r, "--baseline", r], "run.json"),
        "baseline is a run, once": (["--baseline", r], "run.json"),
        # (it said only "schema is 'gemmgate.baseline', expected 'gemmgate.run/1'")
        "run is a baseline": ([str(CPU_BASE)], f"give it as --baseline {CPU_BASE}"),
        "nothing given": ([], "nothing to report"),
        "run given twice": ([r, str(Path(r).parent / "." / Path(r).name)], "given twice"),
        # a copy of a run drew a two-step history from one measurement (a review)
        "a copy of a run": (_run_and_copy(run_file, tmp_path), "copy.json is the run"),
    }


def _run_and_copy(run_file: Path, tmp_path: Path) -> list[str]:
    """A run with its run id (every run has one), and a copy of it."""
    data = json.loads(run_file.read_text())
    data["environment"]["run_id"] = "r-1"
    one, copy = tmp_path / "one.json", tmp_path / "copy.json"
    one.write_text(json.dumps(data))
    copy.write_text(json.dumps(data))
    return [str(one), str(copy)]


@pytest.mark.parametrize("what", ["missing run", "run not JSON", "run of another schema",
                                  "run with a bad case", "missing baseline",
                                  "baseline of another version", "baseline is a run",
                                  "baseline is a run, once", "run is a baseline",
                                  "nothing given", "run given twice", "a copy of a run"])
def test_bad_input_is_exit_2_naming_the_file_and_nothing_is_drawn(tmp_path, run_file, capsys,
                                                                   what):
    argv, text = _bad_inputs(tmp_path, run_file)[what]
    out = tmp_path / "out"
    assert main(["report", *argv, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "error" in err and text in err.replace("\n", "")
    assert not out.exists() or not any(out.iterdir())


def test_an_unwritable_output_is_exit_2_before_any_work(tmp_path, run_file, capsys,
                                                        monkeypatch):
    import gemmgate.report_sources

    def no_work(*a, **k):
        raise AssertionError("inputs were read before -o was checked")

    monkeypatch.setattr(gemmgate.report_sources, "load_sources", no_work)
    (tmp_path / "afile").write_text("x")
    assert main(["report", str(run_file), "-o", str(tmp_path / "afile" / "out")]) == 2
    err = capsys.readouterr().err.replace("\n", "")
    assert "cannot write -o (the report folder)" in err and "is a file" in err
    assert main(["report", str(run_file), "-o", str(tmp_path / "afile")]) == 2


def test_report_writes_the_page_and_says_so(tmp_path, run_file, capsys):
    out = tmp_path / "out"
    assert main(["report", str(run_file), "--baseline", str(CPU_BASE), "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"wrote {out / 'index.html'}" in said.replace("\n", "")
    assert "from 1 run(s) and 1 baseline(s)" in said.replace("\n", " ")
    assert (out / "index.html").is_file() and len(list(out.glob("*.png"))) >= 5


def test_a_run_file_after_baseline_stays_a_run_file():
    from gemmgate.cli import build_parser

    args = build_parser().parse_args(["report", "--baseline", "a.json", "r.json",
                                      "--baseline", "b.json", "-o", "x"])
    assert args.runs == ["r.json"] and args.baseline == ["a.json", "b.json"]


@pytest.mark.parametrize("argv, runs", [
    (["report", "r1.json", "-o", "x", "r2.json"], ["r1.json", "r2.json"]),
    (["report", "-o", "x", "r1.json", "--baseline", "b.json", "r2.json", "r3.json"],
     ["r1.json", "r2.json", "r3.json"]),
    (["report", "--baseline", "b.json", "-o", "x", "r1.json"], ["r1.json"]),
    # after `--`, every word a run file ("unrecognized arguments: -- r2.json", a review)
    (["report", "r1.json", "-o", "x", "--", "r2.json", "-odd.json"],
     ["r1.json", "r2.json", "-odd.json"]),
])
def test_run_files_on_both_sides_of_the_options_are_all_run_files(argv, runs):
    """`report r1.json -o DIR r2.json` was "unrecognized arguments: r2.json", exit 2
    (argparse takes one run of positionals; a review)."""
    from gemmgate.cli import _parse, build_parser

    args = _parse(build_parser(), argv)
    assert args.runs == runs and args.baseline == (["b.json"] if "b.json" in argv else [])


def test_an_unknown_option_or_a_stray_word_elsewhere_is_still_exit_2(tmp_path, run_file,
                                                                     capsys):
    assert main(["report", str(run_file), "-o", str(tmp_path / "o"), "--bogus"]) == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err
    assert main(["chips", "stray"]) == 2
    assert "unrecognized arguments: stray" in capsys.readouterr().err


def test_other_commands_never_import_matplotlib():
    code = ("import sys; from gemmgate import cli, cli_report, cli_run, cli_gate; "
            "cli.build_parser().parse_args(['report', 'r.json', '-o', 'x']); "
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_the_cpu_smoke_run_makes_the_report(tmp_path, capsys):
    """What CI runs on the CPU path: a real `smoke` run (Triton interpreter against the CPU
    BLAS), then its report beside the committed CPU baseline."""
    run = tmp_path / "run.json"
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--budget", "0.1", "--json",
                 str(run)]) == 0
    out = tmp_path / "out"
    assert main(["report", str(run), "--baseline", str(CPU_BASE), "-o", str(out)]) == 0
    html = (out / "index.html").read_text()
    pngs = sorted(p.name for p in out.glob("*.png"))
    bare = {p[10:] for p in pngs}   # (less the report's token, `report_page.token`)
    for kind in ("heatmap", "tflops", "roofline", "errors"):
        assert f"s1-cpu-fp32-{kind}.png" in bare
    assert "history-c0-cpu-fp32.png" in bare                   # the run beside the baseline
    assert all(f'src="{p}"' in html for p in pngs)
    assert "4 cases, 0 failing accuracy" in html


def test_an_input_where_the_report_writes_is_exit_2_and_kept(tmp_path, run_file, capsys):
    """A run file named index.html in the report folder was written over (a review)."""
    out = tmp_path / "rep"
    out.mkdir()
    page = out / "index.html"
    page.write_text(run_file.read_text())
    assert main(["report", str(page), "-o", str(out)]) == 2
    assert "where the report writes index.html" in capsys.readouterr().err.replace("\n", " ")
    assert page.read_text() == run_file.read_text()


def test_a_report_folder_whose_index_html_is_a_directory_is_exit_2_with_its_own_advice(
        tmp_path, run_file, capsys):
    """It said "give a file path, e.g. DIR/index.html/out.json": advice for an output
    file, and -o is a folder (a review)."""
    (tmp_path / "o" / "index.html").mkdir(parents=True)
    assert main(["report", str(run_file), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.replace("\n", "")
    assert "its index.html is a directory" in err and "out.json" not in err
