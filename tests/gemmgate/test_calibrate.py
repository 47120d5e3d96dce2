"""gemmgate/calibrate.py: `fresh_runs` starts one `python -m gemmgate.worker CTX OUT`
process per run and hands each the pickled RunContext. Here `subprocess.run` is a fake
that unpickles what it is given and writes a synthetic run JSON, so the tests see
exactly which context each process would measure: a GPU chip gets an unrecorded priming
run, only the first process retunes, --devices and everything else are the same in
every run. The worker itself is run in-process once, on a real context file.
"""

import pickle
import subprocess
import sys
from dataclasses import replace

import pytest

from gemmgate import calibrate, worker
from gemmgate.chips import CHIPS, Selection
from gemmgate.context import make_context
from gemmgate.files import write_json_atomic
from gemmgate.results import RunRecord
from gemmgate.shapes import Case
from gemmgate.tuning import TuningSetup

SHAPES = "m,n,k\n16,16,16\n8,24,16\n"


@pytest.fixture
def cpu_ctx(tmp_path):
    (tmp_path / "s.csv").write_text(SHAPES)
    return make_context(chip="cpu", shapes=str(tmp_path / "s.csv"), modes="fp32")


def _on_chip(ctx, chip: str, retune: bool, pins: str | None):
    """`ctx` as a run on `chip` over devices 0,1 (no such GPU needed: nothing measures)."""
    sel = Selection(CHIPS[chip], "--chip", CHIPS[chip].name)
    return replace(ctx, selection=sel, devices=(0, 1),
                   tuning=TuningSetup(chip, pins_from=pins, retune=retune))


@pytest.fixture
def processes(monkeypatch, synthetic_record):
    """The fake worker processes: each call's unpickled context, in order. Process i
    writes a run whose environment says {"process": i}."""
    seen = []

    def fake_run(cmd, stdout=None, **kw):
        assert cmd[:3] == [sys.executable, "-m", "gemmgate.worker"] and len(cmd) == 5
        with open(cmd[3], "rb") as f:
            ctx = pickle.load(f)
        seen.append(ctx)
        record = synthetic_record([(m.name, c) for m, c in ctx.items],
                                  environment={"process": len(seen) - 1})
        write_json_atomic(cmd[4], record.to_json())
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(calibrate.subprocess, "run", fake_run)
    return seen


@pytest.mark.parametrize("chip, retune, pins", [
    ("nvidia-h200", True, None), ("nvidia-h200", False, "baselines/x.json"),
    ("cpu", False, None), ("cpu", True, None)])
def test_one_process_per_run_all_with_the_same_context(cpu_ctx, processes, tmp_path, chip,
                                                       retune, pins):
    ctx = _on_chip(cpu_ctx, chip, retune, pins)
    labels = []
    keep = tmp_path / "kept"
    keep.mkdir()
    records = calibrate.fresh_runs(ctx, 3, keep, on_run=labels.append)

    primed = chip != "cpu"
    assert len(processes) == 3 + primed                        # one process per run
    recorded = [1, 2, 3] if primed else [0, 1, 2]             # the priming run is not
    assert [r.environment["process"] for r in records] == recorded
    assert labels[0] == ("priming run (not recorded)" if primed else "calibration run 1/3")
    assert labels[-1] == "calibration run 3/3"
    own = processes[0].tuning.cache_dir   # with --retune, a cache of the calibration's
    if retune:                              # own (the user's was shared by every job on
        assert own and "gemmgate-cal-" in own   # the machine: another's save swapped a
        ctx = replace(ctx, tuning=replace(ctx.tuning, cache_dir=own))   # run's tiles)
    later = replace(ctx, tuning=replace(ctx.tuning, retune=False, pins_from=None,
                                        search=True)) if retune else ctx
    assert processes == [ctx] + [later] * (len(processes) - 1)  # only the first retunes,
    if retune:                                                    # the others read its cache
        assert later.tuning.searching and not later.tuning.retune
    assert all(p.devices == (0, 1) and p.chip.id == chip for p in processes)
    assert sorted(p.name for p in keep.iterdir()) == ["run1.json", "run2.json", "run3.json"]
    for i, r in enumerate(records, start=1):
        assert RunRecord.load(keep / f"run{i}.json") == r
        assert {c.key for c in r.cases} == {"fp32-m16-n16-k16", "fp32-m8-n24-k16"}


@pytest.mark.parametrize("write", [True, False])
def test_a_failed_process_is_a_calibration_error(cpu_ctx, monkeypatch, write):
    def fake_run(cmd, stdout=None, **kw):
        if write:
            open(cmd[4], "w").close()
        return subprocess.CompletedProcess(cmd, 3 if write else 0)

    monkeypatch.setattr(calibrate.subprocess, "run", fake_run)
    with pytest.raises(calibrate.CalibrationError,
                       match=rf"calibration run 1/2 failed \(exit {3 if write else 0}\)"):
        calibrate.fresh_runs(cpu_ctx, 2)


def test_the_worker_runs_the_pickled_context(cpu_ctx, tmp_path, synthetic_timing):
    ctx = replace(cpu_ctx, cases=(Case(16, 16, 16),))
    (tmp_path / "ctx.pickle").write_bytes(pickle.dumps(ctx))
    out = tmp_path / "run.json"
    assert worker.main([str(tmp_path / "ctx.pickle"), str(out)]) == 0
    record = RunRecord.load(out)
    assert [c.key for c in record.cases] == ["fp32-m16-n16-k16"]
    assert record.cases[0].passed and record.shapes == ctx.shapes_label
    assert synthetic_timing.measured == [("triton", "vendor")]
    assert worker.main([str(out)]) == 2                        # usage


def test_an_interrupted_worker_ends_quietly_with_130(cpu_ctx, tmp_path, monkeypatch, capsys):
    """Ctrl-C reaches every process of the terminal's group: a calibration's worker
    printed an 80-line traceback under the parent's "interrupted" (a review)."""
    import gemmgate.execute

    def interrupted(ctx, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(gemmgate.execute, "run_cases", interrupted)
    (tmp_path / "ctx.pickle").write_bytes(pickle.dumps(cpu_ctx))
    out = tmp_path / "run.json"
    assert worker.main([str(tmp_path / "ctx.pickle"), str(out)]) == 130
    assert not out.exists() and capsys.readouterr().err == ""
