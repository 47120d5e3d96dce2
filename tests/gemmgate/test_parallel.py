"""Work done at once: `--devices` spreads cases over worker processes (on the CPU the
devices are processes only) and merges them in order; the gate's re-measure runs with
the same context, reference kernel included (issue 9); two baseline writers on one file
both land (issue 10). Worker processes time for real: no verdict is asserted here.
"""

import json
import multiprocessing as mp
import os
import subprocess
import time
from dataclasses import replace

from gemmgate import baselines
from gemmgate.cli import main
from gemmgate.compare import REGRESSED, UNCHANGED
from gemmgate.context import make_context
from gemmgate.execute import run_cases
from gemmgate.gate import CaseVerdict, GateResult, remeasure
from gemmgate.results import REFERENCE, RunRecord
from gemmgate.shapes import SETS, Case


def test_split_over_two_workers_keeps_order(tmp_path):
    out = tmp_path / "par.json"
    assert main(["run", "--chip", "cpu", "--modes", "fp32,fp16", "--devices", "0,1",
                 "--json", str(out)]) == 0                    # exit 1 only on accuracy
    data = json.loads(out.read_text())
    cases = data["cases"]
    want = [(m, c.m, c.n, c.k) for m in ("fp32", "fp16") for c in SETS["smoke"]]
    assert [(c["mode"], c["m"], c["n"], c["k"]) for c in cases] == want
    assert len({c["worker"] for c in cases}) == 2   # two processes did the work
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
