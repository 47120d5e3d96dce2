"""The case time limit (gemmgate/deadline.py). Every hang here is a real one, bounded (a
loop of at most a minute, a sleep of a minute) so that a broken limit fails the test
instead of hanging CI; no assertion rests on how long real work took."""

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gemmgate.context import MeasurementError
from gemmgate.deadline import (
    DEFAULT_LIMIT_S,
    CaseTimeout,
    Deadline,
    cli_limit,
    grace_for,
    run_within,
)


def _spin(seconds: float) -> str:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return "not stopped"


def test_a_python_loop_past_the_limit_is_a_measurement_error_naming_the_case():
    with pytest.raises(MeasurementError, match=r"fp16 64x64x64 ran past the case time "
                                               r"limit \(0.2 s, --case-timeout\)"):
        run_within(0.2, "fp16 64x64x64", lambda: _spin(60), grace_s=30)


def test_the_timeout_passes_through_except_exception():
    """A provider's `except Exception` (the run's own `judging.check` has one) must not take the
    stop for a failed call and go on."""
    def swallows():
        try:
            return _spin(60)
        except Exception:
            return "swallowed"

    assert not issubclass(CaseTimeout, Exception)
    with pytest.raises(MeasurementError):
        run_within(0.2, "case", swallows, grace_s=30)


def test_a_call_that_returns_is_its_result_and_leaves_no_stop_behind():
    assert run_within(30, "case", lambda: 42) == 42
    assert run_within(None, "case", lambda: 43) == 43
    assert run_within(0, "case", lambda: 44) == 44
    # calls ending around their limit: a stop raised is a MeasurementError inside
    # run_within, and none arrives after it returned
    for i in range(300):
        try:
            run_within(1e-4 * (i % 7), "case", lambda: sum(range(2000)), grace_s=30)
        except MeasurementError:
            pass
    assert _spin(0.3) == "not stopped"


def test_no_limit_starts_no_watchdog():
    before = {t.name for t in __import__("threading").enumerate()}
    with Deadline(0, "case") as d:
        assert d.limit_s == 0
    with Deadline(None, "case"):
        pass
    after = {t.name for t in __import__("threading").enumerate()}
    assert not any(n.startswith("deadline") for n in after - before)


def test_bad_limits_and_the_grace():
    with pytest.raises(ValueError, match="must be >= 0"):
        Deadline(-1, "case")
    assert grace_for(1) == 1.0 and grace_for(100) == 10.0 and grace_for(3600) == 30.0
    assert cli_limit(None) == DEFAULT_LIMIT_S and cli_limit(5.0, 100.0) == 5.0
    assert cli_limit(None, 100.0) == DEFAULT_LIMIT_S + 200.0


def test_stuck_in_native_code_the_process_ends_with_exit_3_after_its_last_words(tmp_path):
    """A sleep never reaches a bytecode: the raise cannot land. The watchdog prints the
    stacks, runs `last_words` and ends the process."""
    kept = tmp_path / "kept.txt"
    code = textwrap.dedent(f"""
        import time
        from gemmgate.deadline import run_within
        def last_words():
            open({str(kept)!r}, "w").write("kept")
        run_within(3, "bf16 8x8x8", lambda: time.sleep(60), last_words, grace_s=0.3)
        print("returned")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=50)
    assert proc.returncode == 3, proc.stderr
    assert "bf16 8x8x8 ran past the case time limit (3 s" in proc.stderr
    assert "stuck in native code" in proc.stderr
    assert "in <lambda>" in proc.stderr          # the stuck thread's stack
    assert kept.read_text() == "kept" and "returned" not in proc.stdout


@pytest.mark.skipif(not hasattr(__import__("signal"), "alarm"), reason="no SIGALRM here")
def test_native_code_holding_the_gil_is_ended_by_the_kernel_s_alarm():
    """A C loop that never releases the GIL stops the watchdog thread too: no raise, no
    hard stop, and SIGTERM's watcher is as stuck; the process ran until CI's job timeout
    (a review). The alarm armed past the hard stop ends it (SIGALRM)."""
    import signal

    code = textwrap.dedent("""
        from gemmgate import deadline
        deadline.ALARM_AFTER_S = 0.5
        deadline.run_within(1, "fp32 8x8x8", lambda: sum(range(10**15)), grace_s=0.5)
        print("returned")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == -signal.SIGALRM, proc.stderr
    assert "returned" not in proc.stdout


def test_a_case_s_alarm_is_disarmed_when_it_ends():
    """Returned, raised past its limit, or no limit: no alarm is left behind (it would
    end the process ALARM_AFTER_S past a later hard stop that never comes)."""
    import signal

    if not hasattr(signal, "alarm"):
        pytest.skip("no SIGALRM here")
    assert run_within(30, "case", lambda: 1) == 1
    assert signal.alarm(0) == 0
    with pytest.raises(MeasurementError):
        run_within(0.2, "case", lambda: _spin(30), grace_s=30)
    assert signal.alarm(0) == 0
    run_within(0, "case", lambda: 1)
    assert signal.alarm(0) == 0


@pytest.mark.gpu
def test_gpu_a_kernel_that_never_ends_stops_the_process_with_exit_3(tmp_path):
    """The hang the limit is for: a GPU kernel that never finishes, waited for in
    cudaDeviceSynchronize. The raise cannot land there; the watchdog (which needs the
    wait to have released the GIL) ends the process. 30 s: CUDA's start and the spin
    kernel's compile come first, inside the limit."""
    code = textwrap.dedent("""
        from gemmgate.deadline import run_within
        from spin_providers import spin_forever
        run_within(30, "fp16 spin", spin_forever, lambda: print("LAST WORDS"), grace_s=2)
        print("returned")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).parent)
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert "fp16 spin ran past the case time limit (30 s" in proc.stderr
    assert "in spin_forever" in proc.stderr and "LAST WORDS" in proc.stdout


@pytest.mark.parametrize("run_args,shapes,limit,provider,stuck", [
    pytest.param(["--chip", "cpu", "--modes", "fp32"], "16x16x16,24x16x16", 10,
                 "custom_providers:stuck_on_24_rows", "fp32 m24-n16-k16", id="cpu-sleep"),
    pytest.param(["--modes", "fp16"], "256x256x256,264x256x256", 60,
                 "spin_providers:spins_on_264_rows", "fp16 m264-n256-k256",
                 id="gpu-kernel", marks=pytest.mark.gpu),
])
def test_a_run_stuck_in_native_code_ends_keeping_the_cases_before_it(
        tmp_path, run_args, shapes, limit, provider, stuck):
    """`gemmgate run` end to end: the first case is measured (on the GPU: a kernel
    compiled, timed in CUDA graphs, far inside the limit), the second's custom provider
    blocks in native code (a two-minute sleep; a kernel that never ends): exit 3, and
    --json holds the first case, marked incomplete."""
    out = tmp_path / "run.json"
    proc = subprocess.run(
        [sys.executable, "-m", "gemmgate", "run", *run_args, "--shapes", shapes,
         "--budget", "0.2", "--case-timeout", str(limit),
         "--providers", f"triton,vendor,{provider}", "--json", str(out)],
        capture_output=True, text=True, timeout=240, cwd=Path(__file__).parent)
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert f"{stuck} ran past the case time limit ({limit} s" in proc.stderr
    data = json.loads(out.read_text())
    assert [(c["m"], c["passed"]) for c in data["cases"]] == [(int(shapes.split("x")[0]), True)]
    assert f"stuck past --case-timeout ({limit} s)" in data["environment"]["incomplete"]


@pytest.mark.parametrize("provider, extra, code, said, reason", [
    ("hangs_when_run_again", ["--case-timeout", "10"], 3,
     "ran past the case time limit (10 s", "re-measure: fp32 m16-n16-k16 ran past"),
    ("sigterm_when_run_again", [], 143, "gemmgate: terminated (SIGTERM)",
     "re-measure: terminated (SIGTERM)"),
], ids=["hangs", "sigterm"])
def test_a_check_whose_re_measure_stops_keeps_its_first_pass(
        tmp_path, monkeypatch, capsys, synthetic_timing, provider, extra, code, said, reason):
    """The first pass measured every case; the re-measure of the suspect (a slowdown
    injected) hangs in the custom provider (exit 3), or SIGTERM lands in it (exit 143):
    --json holds the first pass, marked incomplete (it was lost: the re-measure ran
    outside the partial keeping). Timed synthetically: the re-measure follows only a
    "regressed" first pass, which wall-clock timing gave by a margin of ~3x (a review)."""
    from gemmgate import deadline, stop_signal
    from gemmgate.cli import main

    # the hard stops' graces (1 s, 5 s) would end pytest itself (os._exit) where a loaded
    # machine holds the main thread that long before it unwinds
    monkeypatch.setattr(deadline, "grace_for", lambda limit_s: 30.0)
    monkeypatch.setattr(stop_signal, "TERM_GRACE_S", 30.0)
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    import custom_providers

    custom_providers._RUNS.clear()        # the cases these providers have seen: none yet
    custom_providers._SEEN_TERM.clear()   # (a rerun in this process starts afresh)
    common = ["--chip", "cpu", "--modes", "fp32", "--shapes", "16x16x16", "--budget", "0.2"]
    base, out = tmp_path / "base.json", tmp_path / "check.json"
    assert main(["baseline", "update", *common, "--output", str(base)]) == 0
    assert main(["check", *common, "--baseline", str(base), "--inject-slowdown", "2",
                 "--providers", f"triton,vendor,custom_providers:{provider}", *extra,
                 "--json", str(out)]) == code
    assert said in capsys.readouterr().err
    data = json.loads(out.read_text())
    assert [c["m"] for c in data["cases"]] in ([16], [])   # (16 done before the stop: on
    # a loaded machine it may not be, and the broken pool drops its pending case)
    assert data["environment"]["incomplete"].startswith(reason)


def test_a_devices_worker_stuck_past_the_limit_is_said_so(tmp_path, monkeypatch, capfd):
    """--devices: the stuck worker ends itself (exit 3); the run says a case was stuck
    past the limit, not that a worker crashed, and keeps the cases measured. The workers'
    exit codes are hidden (the pool's manager thread reaps them concurrently: a racing
    waitpid reads none, and CI was told "died", session 66): the worker's own flag says it."""
    from gemmgate import parallel
    from gemmgate.cli import main

    real_stop = parallel._stop
    monkeypatch.setattr(parallel, "_stop", lambda pool: (real_stop(pool), {None})[1])
    monkeypatch.syspath_prepend(str(Path(__file__).parent))   # spawned workers inherit it
    out = tmp_path / "run.json"
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--devices", "0,1",
                 "--shapes", "16x16x16,24x16x16", "--budget", "0.2", "--case-timeout", "10",
                 "--providers", "triton,vendor,custom_providers:stuck_on_24_rows",
                 "--json", str(out)]) == 3
    err = capfd.readouterr().err
    assert "stopped itself: a case was stuck past --case-timeout" in err
    assert "fp32 m24-n16-k16 ran past the case time limit (10 s" in err
    data = json.loads(out.read_text())
    assert [c["m"] for c in data["cases"]] in ([16], [])   # (16 done before the stop: on
    # a loaded machine it may not be, and the broken pool drops its pending case)
    assert "stopped itself" in data["environment"]["incomplete"]
