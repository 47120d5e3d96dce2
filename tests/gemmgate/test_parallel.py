"""Work done at once: `--devices` spreads cases over worker processes (on the CPU the
devices are processes only) and merges them in order; the gate's re-measure runs with
the same context, reference kernel included (issue 9); two baseline writers on one file
both land (issue 10). Worker processes time for real: no verdict is asserted here.
"""

import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from gemmgate import baselines
from gemmgate.cli import main
from gemmgate.compare import REGRESSED, UNCHANGED
from gemmgate.context import make_context
from gemmgate.execute import run_cases
from gemmgate.gate import CaseVerdict, GateResult, remeasure
from gemmgate.results import REFERENCE, RunRecord
from gemmgate.shapes import SETS, Case
from tests.gemmgate.broken_kernels import run_broken


def test_split_over_two_workers_keeps_order(tmp_path):
    out = tmp_path / "par.json"
    assert main(["run", "--chip", "cpu", "--modes", "fp32,fp16", "--devices", "0,1",
                 "--json", str(out)]) == 0                    # exit 1 only on accuracy
    data = json.loads(out.read_text())
    cases = data["cases"]
    want = [(m, c.m, c.n, c.k) for m in ("fp32", "fp16") for c in SETS["smoke"]]
    assert [(c["mode"], c["m"], c["n"], c["k"]) for c in cases] == want
    # worker processes, not this one, did the work; which of the two took how many cases is
    # the OS's start-up order (5/3 and 4/4 under load; 8/0 possible: a review)
    workers = {c["worker"] for c in cases}
    assert 1 <= len(workers) <= 2 and f"pid{os.getpid()}" not in {w.split("/")[-1] for w in workers}
    assert data["environment"]["devices"] == [0, 1]
    assert all(c["passed"] for c in cases)


def test_remeasure_on_several_devices_keeps_the_reference_kernel(clean_repo, monkeypatch):
    """Issue 9: `check --devices 0,1 --ab-ref REF` re-measured suspects in the parent
    process without the reference kernel, so they came back with no A/B verdict."""
    repo, head = clean_repo
    monkeypatch.chdir(repo)                                   # ctx.repo is "."
    ctx = make_context(chip="cpu", modes="fp32", devices="0,1", budget_s=0.3, reference=head)
    ctx = replace(ctx, cases=(Case(16, 16, 16), Case(8, 24, 16)))
    results = run_cases(ctx)
    assert all(REFERENCE in r.providers for r in results)
    env = {"chip": "cpu", "host": "this-host"}
    run = RunRecord(env, ctx.shapes_label, tuple(results))
    base = baselines.build([run], "cpu", ctx.shapes_label)
    suspect, fine = (r.key for r in results)
    gate = GateResult((CaseVerdict(suspect, REGRESSED, None, None),
                       CaseVerdict(fine, UNCHANGED, None, None)), (), ())

    fresh, again = remeasure(ctx, results, gate, base, 0.015, env)

    assert fresh[0] is not results[0] and fresh[1] is results[1]  # the suspect only
    assert fresh[0].worker.startswith("cpu/pid") and fresh[0].worker != f"cpu/pid{os.getpid()}"
    ref = fresh[0].providers[REFERENCE]
    assert ref.accuracy == "pass" and ref.samples_ms
    verdicts = {v.key: v for v in again.verdicts}
    assert verdicts[suspect].remeasured and verdicts[suspect].ab is not None
    assert not verdicts[fine].remeasured and verdicts[fine].ab is not None
    # the run's environment reaches the second judgement: the calibration host, process
    assert {v.level for v in again.verdicts} == {"process"}


def _write(path, measured: dict, barrier, slow_s: float) -> None:
    """One `baseline update`'s write; its read-merge-write takes `slow_s` longer, so an
    unlocked writer would lose the other's case."""
    merge = baselines.merge

    def slow_merge(new, old):
        time.sleep(slow_s)
        return merge(new, old)

    baselines.merge = slow_merge                              # this process only
    barrier.wait()
    baselines.write_merged(path, "cpu", measured)


def test_two_writers_on_one_baseline_both_land(tmp_path, synthetic_record):
    path = tmp_path / "cpu.json"
    one, two = Case(32, 32, 32), Case(48, 16, 64)
    measured = [baselines.build([synthetic_record([("fp32", c)])], "cpu", "s")
                for c in (one, two)]
    fork = mp.get_context("fork")
    barrier = fork.Barrier(2)
    procs = [fork.Process(target=_write, args=(path, m, barrier, 0.5)) for m in measured]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    assert set(baselines.load(path, "cpu").cases) == {"fp32-m32-n32-k32",
                                                       "fp32-m48-n16-k64"}


def test_an_unusable_reference_on_several_devices_is_exit_2(tmp_path, monkeypatch, capsys):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "__init__.py").write_text("def matmul(a, b):\n    return a @ b\n")
    for cmd in (["init", "-q"], ["add", "-A"],
                ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "k"]):
        subprocess.run(["git", *cmd], cwd=tmp_path, check=True, capture_output=True)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--devices", "0,1",
                 "--ab-ref", "HEAD"]) == 2
    assert "has no choose= hook" in capsys.readouterr().err


@pytest.mark.parametrize("devices", [[], ["--devices", "0,1"]])
def test_a_kernels_package_that_does_not_import_is_exit_2_naming_it(tmp_path, devices):
    """A PR's syntax error in kernels/: a traceback and exit 1 (the regression code) on one
    device, "a worker died" (exit 3) with --devices (a review)."""
    r, init = run_broken(tmp_path, "run", "--chip", "cpu", "--shapes", "16x16x16", "--modes",
                         "fp32", "--json", str(tmp_path / "r.json"), *devices)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "kernels/ cannot be imported: SyntaxError" in r.stderr
    assert str(init) in r.stderr and "Traceback" not in r.stderr


def test_an_unusable_tuning_cache_on_several_devices_is_a_tuning_error_not_a_dead_worker(
        tmp_path):
    """Read in each worker's start, an unusable tuning cache was "a worker process of
    --devices 0,1 died", exit 3 (a review); one device: TuningError (exit 2), naming it.
    (A search runs on a GPU only: here the context is given one on the CPU.)"""

    from gemmgate.execute import run_cases
    from gemmgate.tuning import TuningError

    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "cpu.json").write_text("{ truncated")
    for devices in ("0", "0,1"):
        ctx = make_context(chip="cpu", shapes="16x16x16", modes="fp32", devices=devices,
                           budget_s=0.1)
        ctx = replace(ctx, tuning=replace(ctx.tuning, search=True, cache_dir=str(cache)))
        with pytest.raises(TuningError, match="cpu.json"):
            run_cases(ctx)


def test_a_worker_that_dies_ends_the_run_with_a_measurement_error_and_no_worker_left():
    """A worker killed mid-run (out of memory, a crash in native code): exit 3 with one
    line, not a BrokenProcessPool traceback and exit 1 (a regression's code), and the
    other worker is ended with it (session 57)."""
    import pytest

    from gemmgate.parallel import WorkerError, run_parallel

    ctx = make_context(chip="cpu", shapes="16x16x16,24x24x24,32x32x32,40x40x40,48x48x48,"
                       "56x56x56", modes="fp32", devices="0,1", budget_s=0.1)
    killed = []

    def kill_one(result):   # the worker that measured it (not any child: one left by
        if not killed:       # another test would be no pool's worker)
            victim = int(result.worker.rsplit("pid", 1)[1])
            killed.append(victim)
            os.kill(victim, 9)

    with pytest.raises(WorkerError, match="a worker process of --devices 0,1 died"):
        run_parallel(ctx, ctx.items, on_case=kill_one)
    deadline = time.time() + 20
    while mp.active_children() and time.time() < deadline:
        time.sleep(0.2)
    assert killed and not mp.active_children()


def test_a_worker_leaves_ctrl_c_to_the_parent():
    """Ctrl-C reaches the whole process group: a worker idle between cases died of it,
    printing "Process SpawnProcess-2:" and the start of a traceback under the run's
    "interrupted" (a review). The parent stops the pool (its own KeyboardInterrupt): a
    worker ignores SIGINT, so one sent to a worker alone ends nothing."""
    from gemmgate.parallel import run_parallel

    ctx = make_context(chip="cpu", shapes="16x16x16,24x24x24,32x32x32,40x40x40",
                       modes="fp32", devices="0,1", budget_s=0.1)
    sent = []

    def interrupt_one(result):   # the worker that measured it, idle or on its next case
        if not sent:
            sent.append(int(result.worker.rsplit("pid", 1)[1]))
            os.kill(sent[0], signal.SIGINT)
            time.sleep(1.0)

    got = run_parallel(ctx, ctx.items, on_case=interrupt_one)
    assert sent and [r.case.m for r in got] == [16, 24, 32, 40]


@pytest.mark.parametrize("provider", ["dies_on_32", "exits_3_on_32"])
def test_a_worker_that_dies_names_the_cases_in_flight(monkeypatch, capsys, provider):
    """"A worker died" named neither the case nor the device (a review): the cases the
    workers were running when it died are named, with their devices. One that exits 3
    by itself died too: it was "stopped itself: a case was stuck past --case-timeout",
    by its exit code alone, with no limit involved (a review)."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))   # (spawned workers get it)
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--devices", "0,1", "--shapes",
                 "16x16x16,32x32x32", "--providers",
                 f"triton,vendor,custom_providers:{provider}"]) == 3
    err = " ".join(capsys.readouterr().err.split())
    assert "a worker process of --devices 0,1 died" in err
    assert "in flight: " in err and "fp32 m32-n32-k32 on device " in err


def test_a_process_whose_parent_dies_ends_too(tmp_path, pid_running):
    """`exit_with_parent` in workers and calibration runs: an orphan kept measuring (on a
    GPU runner, holding a CUDA context into the next job)."""

    ready = tmp_path / "ready"   # written once it imported: a crash is no pass
    orphan = tmp_path / "orphan.py"
    orphan.write_text("import sys, time\n"
                      "from gemmgate.starter import exit_with_parent\n"
                      "open(sys.argv[2], 'w').close()\n"
                      "exit_with_parent(int(sys.argv[1]))\n"
                      "time.sleep(60)\n")
    child = (f"import os, subprocess, sys; p = subprocess.Popen([sys.executable, {str(orphan)!r}, "
             f"str(os.getpid()), {str(ready)!r}], stdout=subprocess.DEVNULL, "
             "stderr=subprocess.DEVNULL); print(p.pid, flush=True)")
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                         timeout=60, check=True)
    pid = int(out.stdout.split()[0])
    # its import of gemmgate (torch, triton) took 8-9 s on a loaded 2-core machine: the 20
    # s start once it is watching (ready), or once it is gone
    start = time.time()
    while not ready.exists() and pid_running(pid) and time.time() < start + 300:
        time.sleep(0.2)
    deadline = time.time() + 20
    while time.time() < deadline:
        if not pid_running(pid):
            assert ready.exists(), "the grandchild failed before it watched its parent"
            return
        time.sleep(0.2)
    os.kill(pid, 9)
    raise AssertionError("the orphan outlived its parent by 20 s")

