"""The CLI end to end on the CPU path (interpreter + CPU BLAS): output, JSON, exit codes."""

import json
import os
import platform
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gemmgate import stats
from gemmgate.cli import main

CPU_BASELINE = Path(__file__).parents[2] / "baselines" / "cpu.json"


def test_run_smoke_writes_json(tmp_path, capsys):
    out = tmp_path / "run.json"
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "geomean Triton/vendor speed ratio" in printed
    data = json.loads(out.read_text())
    assert data["environment"]["chip"] == "cpu"
    assert {"torch", "triton", "driver", "cuda", "device_name", "timing"} <= set(
        data["environment"])
    # the machine the gate tells calibration hosts by: on the CPU the host alone
    assert data["environment"]["host"] == platform.node()
    assert "gpus" not in data["environment"]
    cases = data["cases"]
    assert len(cases) == 4 and all(c["passed"] for c in cases)
    assert not any("gpu_uuid" in c["telemetry"] for c in cases)
    c = cases[0]
    assert {"mode", "m", "n", "k", "layout", "ratio", "providers"} <= set(c)
    for p in c["providers"].values():
        assert p["median_ms"] > 0 and p["error"] < 1e-5  # fp32: IEEE-exact range
        assert {"p10", "p50", "p90"} <= set(p["quantiles_ms"])


def test_user_shape_file(tmp_path):
    f = tmp_path / "shapes.csv"
    f.write_text("m,n,k,layout\n17,9,33,cc\n")
    assert main(["run", "--chip", "cpu", "--modes", "fp16", "--shapes", str(f)]) == 0


def test_inline_shapes(tmp_path):
    out = tmp_path / "run.json"
    assert main(["run", "--chip", "cpu", "--modes", "fp16", "--shapes", "17x9x33-cc,16x16x16+p3",
                 "--json", str(out)]) == 0
    assert [c["id"] for c in json.loads(out.read_text())["cases"]] == [
        "fp16-m17-n9-k33-cc", "fp16-m16-n16-k16-rr+p3"]


@pytest.mark.parametrize("argv,message", [
    (["run", "--shapes", "64x64x64,6x4"], "'6x4' is not a case"),
    (["run", "--modes", "fp64"], "unknown precision mode 'fp64'"),
    (["run", "--chip", "cpu", "--modes", "fp8"], "fp8 is not supported on cpu"),
    (["run", "--chip", "cpu", "--modes", "tf32"], "tf32 is not supported on cpu"),
    (["run", "--chip", "nvidia-h999"], "unknown chip id 'nvidia-h999'"),
    (["run", "--chip", ""], "--chip is empty"),   # an unset CI variable: detected was run
    (["chips", "--chip", " "], "--chip is empty"),
    (["chips", "--ids", "--chip", "nosuch"], "unknown chip id 'nosuch'"),   # was exit 0
    (["check", "--baseline", ""], "--baseline is an empty path"),   # was "cannot read
    (["run", "--pin-tiles", " "], "--pin-tiles is an empty path"),  # baseline .: a directory"
    (["run", "--shapes", "no-such-set"], "unknown shape set"),
    (["run", "--shapes", "/nonexistent/shapes.csv"], "cannot read shape file"),
    (["run", "--chip", "cpu", "--timing", "graph"], "needs a GPU"),
    (["frobnicate"], "invalid choice"),
])
def test_usage_errors_exit_2(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err.replace("\n", " ")


def test_a_usage_error_after_the_outputs_are_checked_leaves_no_folder(tmp_path, capsys):
    assert main(["run", "--json", str(tmp_path / "new" / "dir" / "x.json"),
                 "--modes", "nosuch"]) == 2
    assert "unknown precision mode" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("which", ["shapes", "pins", "empty"])
def test_an_output_that_is_an_input_or_empty_is_exit_2_and_the_input_kept(tmp_path, capsys,
                                                                          which):
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("m,n,k\n16,16,16\n")
    pins = tmp_path / "pins.json"
    pins.write_bytes(CPU_BASELINE.read_bytes())
    argv = ["run", "--chip", "cpu", "--modes", "fp32", "--shapes", str(shapes)]
    if which == "pins":
        argv += ["--pin-tiles", str(pins)]
    out = {"shapes": str(shapes), "pins": str(tmp_path / "." / "pins.json"), "empty": ""}[which]
    assert main([*argv, "--json", out]) == 2
    err = capsys.readouterr().err
    assert ("--json is an empty path" if which == "empty" else
            f"is also --{'shapes' if which == 'shapes' else 'pin-tiles'}") in err
    assert shapes.read_text() == "m,n,k\n16,16,16\n"
    assert pins.read_bytes() == CPU_BASELINE.read_bytes()


@pytest.mark.parametrize("argv, said", [
    (["report", "run.json", "-o", ""], "-o/--output: is an empty path: give a folder"),
    (["trials", "--chip", "cpu", "--out", " "], "--out: is an empty path"),
    (["baseline", "calibrate", "--chip", "cpu", "--keep-runs", ""], "--keep-runs: is an empty"),
    (["run", "--chip", "cpu", "--json", "-"], "--json is '-': gemmgate writes a file"),
    (["check", "--chip", "cpu", "--comment", "-"], "--comment is '-'"),
    (["baseline", "update", "--chip", "cpu", "--output", "newdir/"],   # wrote a file
     "names a folder: give a file path"),                               # newdir (a review)
    (["run", "--chip", "cpu", "--json", "out/"], "--json out/ names a folder"),
])
def test_an_empty_folder_or_a_dash_for_an_output_is_exit_2_before_any_work(
        argv, said, tmp_path, monkeypatch, capsys):
    """An unset CI variable for a folder wrote into the current directory (`report -o ""`:
    index.html and its figures there); `--json -` wrote a file named "-"."""
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert said in capsys.readouterr().err.replace("\n", " ")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("edit, said", [
    (lambda d: d.update(chip="nvidia-h200"), "is for chip nvidia-h200, not cpu"),
    (lambda d: next(iter(d["cases"].values())).update(m="64"), "corrupt"),
    (None, "corrupt (not JSON"),
    # a tile the kernel's class refuses was dropped, the kernel's own tile run in its
    # place, exit 0, unsaid (a review)
    (lambda d: [c["tuning"]["config"].update(block_m=48) for c in d["cases"].values()],
     "tile {'block_m': 48"),
    (lambda d: [c["tuning"]["config"].update(block_m="32") for c in d["cases"].values()],
     "is not one the kernel makes (TileConfig block_m='32': give an int)"),
    (lambda d: [c["tuning"]["config"].update(colour=1) for c in d["cases"].values()],
     "is not one the kernel makes")])
def test_pins_that_are_not_this_chips_baseline_are_exit_2_before_any_work(tmp_path, capsys,
                                                                         edit, said):
    pins = tmp_path / "pins.json"
    if edit is None:
        pins.write_text('{"cases": ')
    else:
        data = json.loads(CPU_BASELINE.read_text())
        edit(data)
        pins.write_text(json.dumps(data))
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--shapes", "16x16x16",
                 "--pin-tiles", str(pins)]) == 2
    err = capsys.readouterr().err
    assert said in err and "cases x" not in err                 # nothing announced or run


def test_paths_with_rich_markup_are_printed_as_they_are_and_the_json_is_written(tmp_path,
                                                                               capsys):
    """A shape file under a folder named like Rich markup ('[/x]'): the run's table title
    and its 'wrote' line raised MarkupError after measuring, and the JSON was lost."""
    d = tmp_path / "[" / "x]"    # the path holds '[/x]'
    d.mkdir(parents=True)
    shapes, out = d / "s.csv", d / "[red]out.json"
    shapes.write_text("m,n,k\n16,16,16\n")
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--shapes", str(shapes),
                 "--json", str(out)]) == 0
    said = capsys.readouterr()
    assert json.loads(out.read_text())["cases"] and f"wrote {out}" in said.err.replace("\n", "")
    assert "[/x]/s.csv" in said.out


def test_unreadable_shape_file(tmp_path, capsys):
    f = tmp_path / "shapes.yaml"
    f.write_text("cases: [ {m: 1, n: 2")
    assert main(["run", "--chip", "cpu", "--shapes", str(f)]) == 2
    assert "not valid YAML" in capsys.readouterr().err


def test_gpu_chip_without_gpu(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("needs a machine without a GPU")
    assert main(["run", "--chip", "nvidia-h200"]) == 2
    assert "no GPU" in capsys.readouterr().err


def test_accuracy_failure_exits_1(capsys, monkeypatch):
    """The kernel under test returning a wrong result (here scaled by 1.5, the interpreter's
    own result otherwise) is an accuracy failure: exit 1."""
    import functools

    import kernels

    real = kernels.matmul

    @functools.wraps(real)
    def wrong(*args, **kwargs):
        return real(*args, **kwargs).mul_(1.5)

    monkeypatch.setattr(kernels, "matmul", wrong)
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--shapes", "16x16x16"]) == 1
    assert "failed accuracy" in capsys.readouterr().err


@pytest.mark.parametrize("argv, said", [
    (["--modes", "bf16"], "bf16 is not supported on cpu: the Triton interpreter's tl.dot"),
    (["--retune"], "--retune needs a GPU"),
    (["--devices", "100000"], "on the CPU a device is a worker process"),
])
def test_what_the_cpu_cannot_run_is_a_usage_error(argv, said, capsys):
    assert main(["run", "--chip", "cpu", "--shapes", "16x16x16", *argv]) == 2
    assert said in capsys.readouterr().err


def test_module_entry_point_and_chips():
    r = subprocess.run([sys.executable, "-m", "gemmgate", "chips"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for chip in ("nvidia-a100", "nvidia-h100", "nvidia-h200", "amd-mi300x", "cpu"):
        assert chip in r.stdout
    assert "selected:" in r.stdout


def test_chips_names_the_tuning_table_each_reads_and_a_lent_one():
    from gemmgate.chips import CHIPS
    from gemmgate.cli_run import _table_of

    assert _table_of(CHIPS["nvidia-h200"]) == "nvidia-h200.json"
    assert _table_of(CHIPS["nvidia-h100"]) == "nvidia-h100.json over nvidia-h200.json (lent)"
    assert _table_of(CHIPS["nvidia-a100"]) == "—" == _table_of(CHIPS["cpu"])


def test_run_block_is_recorded_and_bad_block_is_exit_2(tmp_path, capsys):
    out = tmp_path / "run.json"
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--block", "2", "--budget", "0.2",
                 "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["environment"]["block"] == 2
    assert all(len(c["providers"]["triton"]["samples_ms"]) % 2 == 0 for c in data["cases"])
    assert main(["run", "--chip", "cpu", "--block", "0"]) == 2
    assert "--block must be 1 to 1000, got 0" in capsys.readouterr().err


def test_run_with_a_custom_provider_shows_it_with_its_ratio(tmp_path, monkeypatch, capsys):
    # custom_providers.py beside this file: `correct` computes the GEMM in float64
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    shapes, out = tmp_path / "shapes.csv", tmp_path / "run.json"
    shapes.write_text("m,n,k\n16,24,32\n")
    name = "custom_providers:correct"
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--shapes", str(shapes),
                 "--providers", f"triton,vendor,{name}", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "ratio vs" in printed
    line = next(x for x in printed.splitlines() if x.startswith("fp32: geomean"))
    assert f", vs {name} " in line and line.endswith("1/1 passed")  # its geomean ratio
    data = json.loads(out.read_text())
    (case,) = data["cases"]
    p, t = case["providers"][name], case["providers"]["triton"]
    assert p["accuracy"] == "pass" and p["tflops"] > 0
    per_round = [o / ti for ti, o in zip(t["samples_ms"], p["samples_ms"])]   # paired rounds
    assert case["ratios"][name] == pytest.approx(stats.median(per_round), rel=1e-12)
    assert case["ratios"]["vendor"] == case["ratio"]
    assert data["summary"]["fp32"]["geomean_ratios"][name] == pytest.approx(case["ratios"][name])
    assert data["environment"]["providers"] == ["triton", "vendor", name]


def test_run_with_a_wrong_custom_provider_exits_1(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("m,n,k\n16,16,16\n")
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--shapes", str(shapes),
                 "--providers", "triton,vendor,custom_providers:wrong"]) == 1
    got = capsys.readouterr()
    assert "1 case(s) failed accuracy" in got.err and "fail" in got.out


def test_a_bad_provider_path_exits_2(capsys, monkeypatch):
    assert main(["run", "--chip", "cpu", "--shapes", "smoke", "--modes", "fp32",
                 "--providers", "triton,vendor,nosuch.mod:fn"]) == 2
    assert "--providers nosuch.mod:fn: cannot import it" in capsys.readouterr().err
    monkeypatch.syspath_prepend(str(Path(__file__).parent))   # a module that exits on import
    assert main(["run", "--chip", "cpu", "--shapes", "smoke", "--modes", "fp32",
                 "--providers", "triton,vendor,exits_at_import:f"]) == 2
    assert "cannot import it (SystemExit: 3)" in capsys.readouterr().err
    # its own BaseException: a traceback and exit 1, the regression code (a review)
    assert main(["run", "--chip", "cpu", "--shapes", "smoke", "--modes", "fp32",
                 "--providers", "triton,vendor,raises_at_import:f"]) == 2
    assert "cannot import it (Odd: raised at import)" in capsys.readouterr().err


def test_a_run_that_cannot_be_measured_to_its_end_is_exit_3(monkeypatch, capsys):
    """Not 1 (a regression, which the nightly answers with a bisect) nor 2 (bad input)."""
    import gemmgate.cli_run
    from gemmgate.context import MeasurementError

    def dies(ctx, err, partial_to=None):
        raise MeasurementError("a worker process of --devices 0,1 died")
    monkeypatch.setattr(gemmgate.cli_run, "execute", dies)
    assert main(["run", "--chip", "cpu", "--shapes", "16x16x16", "--modes", "fp32"]) == 3
    assert "measurement failed: a worker process" in capsys.readouterr().err


@pytest.mark.parametrize("stop", ["measurement", "interrupt"])
def test_a_stopped_run_keeps_its_cases_in_case_order(tmp_path, monkeypatch, synthetic_record,
                                                     stop):
    """--devices hands each case's result on as its worker finishes it; a stopped run's
    --json listed its cases so (16, 8, 32, 24), where a whole run and a one-device run
    list them in case order (a review). Here the workers' finishing order is given."""
    import gemmgate.cli_run
    from gemmgate.context import MeasurementError

    def out_of_order(ctx, items=None, on_case=None, last_words=None):
        done = synthetic_record([(m.name, c) for m, c in ctx.items]).cases
        for r in (done[3], done[1], done[0]):
            on_case(r)
        if stop == "interrupt":
            raise KeyboardInterrupt
        raise MeasurementError("a worker process of --devices 0,1 died")

    monkeypatch.setattr(gemmgate.cli_run, "run_cases", out_of_order)
    out = tmp_path / "run.json"
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--shapes",
                 "8x8x8,16x16x16,24x24x24,32x32x32", "--json", str(out)]) == \
        (130 if stop == "interrupt" else 3)
    data = json.loads(out.read_text())
    assert data["environment"]["incomplete"]
    assert [c["m"] for c in data["cases"]] == [8, 16, 32]


def test_a_provider_that_hangs_stops_the_run_at_the_case_time_limit(monkeypatch, capsys):
    """The limit stops a Python loop (a custom provider here; a kernel on a GPU) with exit
    3 naming the case. The limit is far above what the Triton and vendor checks before
    the provider take on a loaded machine: only the hang can reach it."""
    from gemmgate import deadline

    monkeypatch.setattr(deadline, "grace_for", lambda limit_s: 30.0)   # (its hard stop
    # would end pytest itself where a loaded machine holds the main thread 1 s)
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--shapes", "16x16x16",
                 "--providers", "triton,vendor,custom_providers:hangs",
                 "--case-timeout", "8"]) == 3
    err = capsys.readouterr().err
    assert "measurement failed: fp32 m16-n16-k16" in err and "--case-timeout" in err
    assert main(["run", "--chip", "cpu", "--case-timeout", "-1"]) == 2
    assert "--case-timeout: '-1': give seconds >= 0" in capsys.readouterr().err
    assert main(["run", "--chip", "cpu", "--case-timeout", "inf"]) == 2
    assert main(["run", "--chip", "cpu", "--case-timeout", "1e10"]) == 2   # past TIMEOUT_MAX
    for past_an_alarm in ("5e9", "2.2e9"):   # an OverflowError traceback, exit 1 (a review)
        assert main(["run", "--chip", "cpu", "--case-timeout", past_an_alarm]) == 2
        assert "give seconds >= 0 and up to 1e+09" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["run", "--chip", "cpu", "--modes", "fp32", "--shapes", "16x16x16", "--json"],
    ["sweep", "--chip", "cpu", "--mode", "fp32", "--shape", "16x16x16", "--param",
     "num_stages", "--values", "2", "--json"],
])
@pytest.mark.parametrize("sort_keys", [False, True])
def test_an_output_onto_a_baseline_file_is_exit_2_and_keeps_it(tmp_path, capsys, argv,
                                                                sort_keys):
    """A run's --json at baselines/cpu.json replaced the baseline with a run file (exit 0),
    and the next check failed: baselines are written by `gemmgate baseline` only. Saved
    with sorted keys (jq -S), a baseline's schema is past the first 4 KiB the guard read
    (a review)."""
    base = tmp_path / "cpu.json"
    text = CPU_BASELINE.read_text()
    if sort_keys:
        text = json.dumps(json.loads(text), indent=1, sort_keys=True)
        assert text.index('"schema"') > 4096
    base.write_text(text)
    assert main([*argv, str(base)]) == 2
    assert f"{base} is a baseline file: baselines are written only by `gemmgate " \
        "baseline`" in capsys.readouterr().err.replace("\n", " ")
    assert base.read_text() == text


@pytest.mark.parametrize("argv", [
    ["run", "--chip", "cpu", "--modes", "fp32", "--shapes", "16x16x16", "--json"],
    ["sweep", "--chip", "cpu", "--mode", "fp32", "--shape", "16x16x16", "--param",
     "num_stages", "--values", "2", "--csv"],
    ["bisect", "HEAD~1", "HEAD", "--case", "fp32-m16-n16-k16", "--summary"],
])
def test_an_output_onto_a_tuning_table_is_exit_2_and_keeps_it(tmp_path, capsys, argv):
    """A sweep's --json (or --csv, a run's --json, bisect's --summary appended) at
    kernels/tuned/<chip>.json replaced the table, exit 0, and that device's lookups
    skipped it from then on: tables are written by `gemmgate tune` only."""
    from kernels import table_file

    table = tmp_path / "nvidia-h100.json"
    text = (Path(table_file.DEFAULT_DIR) / "nvidia-h100.json").read_text()
    table.write_text(text)
    assert main([*argv, str(table)]) == 2
    assert f"{table} is a tuning table: tables are written only by `gemmgate tune`" \
        in capsys.readouterr().err.replace("\n", " ")
    assert table.read_text() == text


def test_a_new_json_in_the_kernels_table_folder_is_exit_2(capsys, monkeypatch):
    """A sweep's --json created in kernels/tuned/ (no table there to protect) made every
    later table read warn that it is not a tuning table: the kernel globs *.json there.
    A --table there that is not *.json is a table the kernel never reads (a review)."""
    from gemmgate import cli_outputs
    from kernels import table_file

    out = Path(table_file.DEFAULT_DIR) / "sweep-out.json"
    try:
        assert main(["sweep", "--chip", "cpu", "--mode", "fp32", "--shape", "16x16x16",
                     "--param", "num_stages", "--values", "2", "--json", str(out)]) == 2
    finally:
        written = out.exists()
        out.unlink(missing_ok=True)   # (never left in the tree, whatever failed)
    assert not written
    assert "where the kernel reads every *.json as a tuning table" in \
        capsys.readouterr().err.replace("\n", " ")
    with pytest.raises(cli_outputs.InputError, match="reads only \\*.json files"):
        cli_outputs.check_outputs((str(Path(table_file.DEFAULT_DIR) / "x.txt"),
                                   cli_outputs.TABLE_OUTPUT))
    cli_outputs.check_outputs((str(Path(table_file.DEFAULT_DIR) / "x.csv"), "--csv"))


def test_the_table_guard_knows_the_kernels_table_schema():
    from gemmgate.cli_outputs import TABLE_SCHEMA
    from kernels import table_file

    assert TABLE_SCHEMA == table_file.SCHEMA


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this OS")
def test_an_output_at_a_fifo_is_exit_2_without_reading_it(tmp_path, capsys):
    """The baseline probe read 4 KiB of each output path before the writable check, so
    --json at a FIFO (or /dev/stdout on a pipe) hung (a review). A reader left blocked
    is let go by opening the FIFO's write end, so a regression fails rather than hangs."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = threading.Event()
    result = {}

    def probe():
        result["rc"] = main(["run", "--chip", "cpu", "--modes", "fp32", "--shapes",
                             "16x16x16", "--json", str(fifo)])
        done.set()

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    blocked = not done.wait(20)
    if blocked:   # unblock the read: an opened-then-closed writer gives it end of file
        with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
            pass
        thread.join(20)
    assert not blocked, "the output check read the FIFO"
    assert result["rc"] == 2
    assert "not a regular file" in capsys.readouterr().err


def test_chips_with_an_unknown_chip_is_exit_2_and_prints_no_table(capsys):
    assert main(["chips", "--chip", "bogus"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "bogus" in err
    assert main(["chips", "--chip", "cpu"]) == 0
    assert "selected: cpu" in capsys.readouterr().out


def test_an_inline_list_past_the_file_name_limit_is_read_as_shapes(tmp_path):
    """29 shapes inline (420 characters) were exit 2 with ENAMETOOLONG from the CLI's
    input check (`shapes_file`: is the --shapes text a file?), an H100 call."""
    from gemmgate.cli_outputs import check_outputs, shapes_file

    text = ",".join(f"{4096 + i}x{4096 + i}x{4096 + i}-rr" for i in range(29))
    assert len(text) > 255 and shapes_file(text) == (None, "--shapes")
    check_outputs((str(tmp_path / "run.json"), "--json"), inputs=(shapes_file(text),))


def test_a_colon_name_in_a_message_is_printed_as_written(capsys):
    """rich made ':x:' an emoji: "'❌' is not a case" (a review)."""
    assert main(["run", "--chip", "cpu", "--shapes", "16x16x16,:x:"]) == 2
    assert "':x:' is not a case" in capsys.readouterr().err


def test_json_over_a_custom_providers_source_is_refused(tmp_path, monkeypatch, capsys):
    """`--json prov.py` wrote the run over the provider's own source (a review)."""
    (tmp_path / "prov_s71.py").write_text(
        "def good(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):\n"
        "    return out.copy_(a.double() @ b.double())\n")
    monkeypatch.chdir(tmp_path)
    before = (tmp_path / "prov_s71.py").read_text()
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--shapes", "16x16x16",
                 "--providers", "triton,vendor,prov_s71:good", "--json", "prov_s71.py"]) == 2
    assert "--json prov_s71.py is also --providers prov_s71:good" in \
        capsys.readouterr().err.replace("\n", "")
    assert (tmp_path / "prov_s71.py").read_text() == before
    (tmp_path / "d").mkdir()
    assert main(["run", "--chip", "cpu", "--pin-tiles", "d"]) == 2
    assert "--pin-tiles d: a directory, not a baseline file" in capsys.readouterr().err


def test_pin_tiles_with_a_kernels_package_that_does_not_import_is_exit_2(tmp_path,
                                                                          monkeypatch,
                                                                          capsys):
    """`run --pin-tiles` imported kernels.tile bare to check the pins: a kernels/ with a
    syntax error was a traceback, exit 1 (the regression code), where without
    --pin-tiles it is exit 2 naming it (a review)."""
    pins = Path(__file__).resolve().parents[2] / "baselines" / "cpu.json"
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "__init__.py").write_text("def matmul(a, b:\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "kernels", raising=False)
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--shapes", "16x16x16",
                 "--pin-tiles", str(pins)]) == 2
    assert "kernels/ cannot be imported: SyntaxError" in capsys.readouterr().err


def test_a_dotted_providers_package_is_not_run_by_the_output_check(tmp_path, monkeypatch,
                                                                     capsys):
    """The output check (`provider_files`) found a `pkg.mod:fn` provider's file with
    importlib.util.find_spec, which imports `pkg`: its __init__ ran there, before the
    context. One that raised was a traceback, exit 1 (`pkg:fn` was exit 2 with a message),
    one that exited set the exit code (4); one that imported `kernels` did so before the
    CPU's interpreter was on, and Triton failed accuracy, exit 1 (a review)."""
    from argparse import Namespace

    from gemmgate.cli_run import provider_files

    for pkg, init in (("pkg_s81_raises", "raise RuntimeError('pkg init broken')\n"),
                      ("pkg_s81_exits", "import sys\nsys.exit(4)\n"),
                      ("pkg_s81_runs", "import os\nos.environ['PKG_S81_RAN'] = '1'\n")):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text(init)
        (tmp_path / pkg / "sub.py").write_text(
            "def fn(a, b, *, precision=None, out=None):\n    return a @ b\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PKG_S81_RAN", raising=False)
    found = provider_files(Namespace(providers="triton,vendor,pkg_s81_runs.sub:fn"))
    assert [Path(f).resolve() for f, _ in found] == \
        [(tmp_path / "pkg_s81_runs" / "sub.py").resolve()]
    assert "PKG_S81_RAN" not in os.environ and "pkg_s81_runs" not in sys.modules
    for pkg, said in (("pkg_s81_raises", "RuntimeError: pkg init broken"),
                      ("pkg_s81_exits", "SystemExit: 4")):
        assert main(["run", "--chip", "cpu", "--modes", "fp32", "--shapes", "16x16x16",
                     "--providers", f"triton,vendor,{pkg}.sub:fn"]) == 2
        assert f"--providers {pkg}.sub:fn: cannot import it ({said})" in \
            capsys.readouterr().err.replace("\n", "")


@pytest.mark.parametrize("command, at", [
    (["run"], "gemmgate.cli_run.context_from_args"),
    (["run"], "gemmgate.cli_run.check_outputs"),   # before the path is checked
    (["run"], "importlib.import_module"),          # the command's module (torch) imports
    (["check", "--baseline", "baselines/cpu.json"], "gemmgate.cli_gate._set_up"),
    (["check", "--baseline", "baselines/cpu.json"], "gemmgate.cli_gate.select_chip"),
    (["check", "--baseline", "baselines/cpu.json"], "importlib.import_module")])
@pytest.mark.parametrize("stop", ["interrupt", "sigterm"])
def test_a_stop_while_setting_up_marks_the_json_incomplete(command, at, stop, tmp_path,
                                                           monkeypatch, capsys):
    """Ctrl-C or SIGTERM before the first case (CUDA's start, a provider's import, the
    reference's export) left an earlier run's --json in place, complete and unmarked, for
    an artifact upload to read as this run's (a review)."""
    from gemmgate.stop_signal import Terminated

    out = tmp_path / "run.json"
    out.write_text('{"schema": "gemmgate.run/1", "environment": {}, "cases": []}')
    raised = KeyboardInterrupt if stop == "interrupt" else Terminated

    def stopped(*a, **k):
        raise raised()

    monkeypatch.setattr(at, stopped)
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    code = main([*command, "--chip", "cpu", "--shapes", "16x16x16", "--modes", "fp32",
                 "--json", str(out)])
    assert code == (130 if stop == "interrupt" else 143)
    env = json.loads(out.read_text())["environment"]
    assert env["incomplete"] == ("interrupted" if stop == "interrupt"
                                 else "terminated (SIGTERM)") + " before the first case"
    err = capsys.readouterr().err
    assert "wrote the 0 case(s)" in err or "marked the earlier run" in err
    # (the first three stops: the 1-1.5 s before the guard, torch's import, left the file
    # complete and unmarked; a review)


@pytest.mark.parametrize("at", ["gemmgate.cli_run.check_outputs", "importlib.import_module"])
def test_a_stop_before_the_path_is_checked_writes_over_no_other_file(at, tmp_path,
                                                                     monkeypatch):
    """Before check_outputs only an earlier run's file is marked: a --json naming a
    baseline (refused once checked) or a user's file is left as it is."""
    out = tmp_path / "b.json"
    mine = Path(__file__).resolve().parents[2] / "baselines" / "cpu.json"
    out.write_text(mine.read_text())

    def stopped(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(at, stopped)
    assert main(["run", "--chip", "cpu", "--shapes", "16x16x16", "--json", str(out)]) == 130
    assert out.read_text() == mine.read_text()


def _stdout_closed(*argv: str, cwd: Path) -> tuple[int, str]:
    """gemmgate ARGV with its standard output's reader gone before it prints (`| head
    -1`, a CI log's pipe closed): (exit code, stderr)."""
    p = subprocess.Popen([sys.executable, "-m", "gemmgate", *argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=cwd, text=True)
    p.stdout.close()
    err = p.stderr.read()
    return p.wait(timeout=600), err


def test_a_closed_standard_output_leaves_the_exit_code_and_the_files_as_they_would_be(
        tmp_path):
    """rich ended the process with exit 1 (the regression code, which the nightly answers
    with a bisect) on a broken pipe, with nothing said, and `check` wrote neither
    --comment nor --summary (a review). Now the console goes quiet and the command ends
    as it would have."""
    repo = Path(__file__).resolve().parents[2]
    assert _stdout_closed("chips", cwd=repo)[0] == 0
    out = tmp_path / "r.json"
    rc, err = _stdout_closed("run", "--shapes", "8x8x8", "--modes", "fp32", "--budget",
                             "0.05", "--json", str(out), cwd=repo)
    assert rc == 0 and out.is_file() and "Traceback" not in err, err
    base, comment, summary = tmp_path / "b.json", tmp_path / "c.md", tmp_path / "s.md"
    assert main(["baseline", "update", "--chip", "cpu", "--shapes", "8x8x8", "--modes",
                 "fp32", "--budget", "0.05", "--output", str(base)]) == 0
    rc, err = _stdout_closed("check", "--chip", "cpu", "--baseline", str(base), "--budget",
                             "0.05", "--no-remeasure", "--comment", str(comment),
                             "--summary", str(summary), cwd=repo)
    # (the verdict is on the CPU's timing: 0 or 1; not asserted)
    assert rc in (0, 1) and "Traceback" not in err, err
    assert comment.read_text().strip() and summary.read_text().strip()


def test_a_json_that_cannot_be_written_names_the_file_and_the_table_is_printed(
        tmp_path, capsys, monkeypatch):
    """A full disk at the end of a run was "[Errno 28] No space left on device", no file
    named, and no results table (the write came first and raised; a review)."""
    import errno

    import gemmgate.files

    out = tmp_path / "r.json"
    out.write_text("an earlier run's")
    real = gemmgate.files.os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(gemmgate.files.os, "fsync", full)
    assert main(["run", "--shapes", "8x8x8", "--modes", "fp32", "--budget", "0.05",
                 "--json", str(out)]) == 2
    monkeypatch.setattr(gemmgate.files.os, "fsync", real)
    captured = capsys.readouterr()
    assert f"cannot write {out}: No space left on device" in captured.err.replace("\n", "")
    assert "m8-n8-k8" in captured.out   # the table
    assert out.read_text() == "an earlier run's"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]   # no temp file left


def test_a_provider_that_writes_into_its_inputs_fails_alone(tmp_path, monkeypatch):
    """A custom provider that zeroed B after a right answer made every provider checked
    after it (the A/B reference, another extra) fail on the zeros, and Triton and the
    vendor were timed on them (a review). It fails alone now, the inputs made again."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    out = tmp_path / "run.json"
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--shapes", "16x24x32",
                 "--budget", "0.05", "--providers",
                 "triton,vendor,custom_providers:zeroes_b,custom_providers:correct",
                 "--json", str(out)]) == 1
    (case,) = json.loads(out.read_text())["cases"]
    got = {n: p["accuracy"] for n, p in case["providers"].items()}
    assert got == {"triton": "pass", "vendor": "pass", "custom_providers:zeroes_b": "fail",
                   "custom_providers:correct": "pass"}
    assert "wrote into its inputs" in case["providers"]["custom_providers:zeroes_b"]["message"]


def test_a_provider_raising_a_base_exception_fails_its_case_not_the_run(tmp_path,
                                                                        monkeypatch):
    """A provider's own BaseException subclass was a traceback, exit 1, no --json (a
    review): it fails the case like any other error."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    out = tmp_path / "run.json"
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--shapes", "16x16x16",
                 "--budget", "0.05", "--providers",
                 "triton,vendor,custom_providers:raises_base", "--json", str(out)]) == 1
    (case,) = json.loads(out.read_text())["cases"]
    p = case["providers"]["custom_providers:raises_base"]
    assert p["accuracy"] == "fail" and p["message"].startswith("Odd: a provider's own")


def test_a_builtin_provider_whose_signature_cannot_be_read_is_exit_2(capsys):
    """torch:matmul (no signature to inspect) was called as it is and failed every case
    with "unexpected keyword argument 'precision'", exit 1: the kernel read as wrong (a
    review)."""
    assert main(["run", "--chip", "cpu", "--shapes", "16x16x16", "--modes", "fp32",
                 "--providers", "triton,vendor,torch:matmul"]) == 2
    err = capsys.readouterr().err.replace("\n", "")
    assert "--providers torch:matmul: its signature cannot be read" in err


def test_commands_that_tune_nothing_or_always_do_not_offer_retune(capsys):
    """bisect's and tune's --help offered --retune ("searching up to 20 s a key"): bisect
    refused it, tune ignored it (a review). Unlisted there; each says why it takes none."""
    for cmd in ("bisect", "tune"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        assert "--retune" not in capsys.readouterr().out
    assert main(["tune", "--retune", "--chip", "cpu"]) == 2
    assert "--retune: tune always searches afresh" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "--retune" in capsys.readouterr().out
