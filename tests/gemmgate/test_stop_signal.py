"""SIGTERM and Ctrl-C (gemmgate/stop_signal.py, the CLI's `main`): a run stopped so keeps
the cases measured before it, and a process stuck in native code still ends. Every
signal here is sent by the process to itself from its own code, at a point it chose; no
assertion rests on how long real work took."""

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("provider, code, reason", [
    ("sigterm_on_24_rows", 143, "terminated (SIGTERM)"),
    # `timeout` sends it twice, to the command and to its process group: the second was
    # SIGTERM's default action, no case kept and the --json left "running" (a review)
    ("sigterm_twice_on_24_rows", 143, "terminated (SIGTERM)"),
    ("sigint_on_24_rows", 130, "interrupted"),
])
def test_a_run_stopped_by_a_signal_keeps_the_cases_before_it(tmp_path, provider, code, reason):
    """`gemmgate run` end to end: the first case is measured, the second's custom provider
    signals the process (SIGTERM: a CI job cancelled or `timeout`; SIGINT: Ctrl-C): exit
    128 + the signal, and --json holds the first case, marked incomplete with the reason."""
    out = tmp_path / "run.json"
    proc = subprocess.run(
        [sys.executable, "-m", "gemmgate", "run", "--chip", "cpu", "--modes", "fp32",
         "--shapes", "16x16x16,24x16x16", "--budget", "0.2",
         "--providers", f"triton,vendor,custom_providers:{provider}", "--json", str(out)],
        capture_output=True, text=True, timeout=240, cwd=Path(__file__).parent)
    assert proc.returncode == code, proc.stderr[-3000:]
    assert f"gemmgate: {reason}" in proc.stderr
    data = json.loads(out.read_text())
    assert [(c["m"], c["passed"]) for c in data["cases"]] == [(16, True)]
    assert data["environment"]["incomplete"] == reason



@pytest.mark.parametrize("run_args, shapes, provider", [
    pytest.param(["--chip", "cpu", "--modes", "fp32"], "16x16x16,24x16x16",
                 "custom_providers:sigterm_in_native_code_on_24_rows", id="cpu"),
    pytest.param(["--modes", "fp16"], "256x256x256,264x256x256",
                 "spin_providers:sigterm_while_spinning_on_264_rows", id="gpu-kernel",
                 marks=pytest.mark.gpu),
])
def test_sigterm_while_stuck_in_native_code_ends_the_process_after_the_grace(
        tmp_path, run_args, shapes, provider):
    """SIGTERM lands while the measuring thread is in native code that never returns to
    Python (no handler can run there: on the CPU a key derivation, on a GPU a kernel that
    never ends): the stop_signal watcher ends the process with exit 143 after its grace
    (5 s), saying so, where --case-timeout (900 s) would have held it, and the GPU, 15
    minutes."""
    out = tmp_path / "run.json"
    proc = subprocess.run(
        [sys.executable, "-m", "gemmgate", "run", *run_args, "--shapes", shapes,
         "--budget", "0.2", "--providers", f"triton,vendor,{provider}",
         "--json", str(out)], capture_output=True, text=True, timeout=240,
        cwd=Path(__file__).parent)
    assert proc.returncode == 143, proc.stderr[-3000:]
    assert "terminated (SIGTERM); the command had not ended 5 s later" in proc.stderr
    _marked_running(out)


def _marked_running(out) -> None:
    """What a process ended outright leaves at its --json: this run's mark, no earlier
    run's file complete and unmarked (a review)."""
    from gemmgate.cli_run import RUNNING

    data = json.loads(out.read_text())
    assert data["environment"]["incomplete"] == RUNNING and data["cases"] == []


def test_a_run_stopped_before_its_first_case_marks_its_json_incomplete(tmp_path):
    """An earlier run's file at --json stayed, complete and unmarked, where the stop came
    before any case was measured: an artifact upload read it as this run's (a review)."""
    out = tmp_path / "run.json"
    out.write_text('{"stale": true}')
    proc = subprocess.run(
        [sys.executable, "-m", "gemmgate", "run", "--chip", "cpu", "--modes", "fp32",
         "--shapes", "24x16x16", "--budget", "0.2", "--providers",
         "triton,vendor,custom_providers:sigterm_on_24_rows", "--json", str(out)],
        capture_output=True, text=True, timeout=240, cwd=Path(__file__).parent)
    assert proc.returncode == 143, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert data["cases"] == [] and data["environment"]["incomplete"] == "terminated (SIGTERM)"


def test_a_second_sigterm_while_stuck_in_native_code_ends_the_process_at_once(tmp_path):
    """The docs promise it: the first SIGTERM's handler (which would have put back the
    default action) never ran, and the watcher waited out its whole grace (a review)."""
    out = tmp_path / "run.json"
    proc = subprocess.run(
        [sys.executable, "-m", "gemmgate", "run", "--chip", "cpu", "--modes", "fp32",
         "--shapes", "16x16x16,24x16x16", "--budget", "0.2", "--providers",
         "triton,vendor,custom_providers:two_sigterms_in_native_code_on_24_rows",
         "--json", str(out)], capture_output=True, text=True, timeout=240,
        cwd=Path(__file__).parent)
    assert proc.returncode == 143, proc.stderr[-3000:]
    assert "terminated (SIGTERM); a second SIGTERM: stopped" in proc.stderr
    assert "had not ended" not in proc.stderr
    _marked_running(out)


def test_main_puts_back_the_sigterm_handler_and_wakeup_fd_it_replaced(monkeypatch):
    """In-process calls of `main` (tests, a caller's own CLI) leave SIGTERM as they found
    it: after a command, after --help's SystemExit, and from a thread other than the
    main one (where nothing is set)."""
    import signal
    import threading

    from gemmgate.cli import main

    def mine(signum, frame):
        pass

    old = signal.signal(signal.SIGTERM, mine)
    try:
        assert main(["chips"]) == 0
        assert signal.getsignal(signal.SIGTERM) is mine
        with pytest.raises(SystemExit):
            main(["--help"])
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.set_wakeup_fd(-1) == -1   # none left set
        got = []
        worker = threading.Thread(target=lambda: got.append(main(["chips"])))
        worker.start()
        worker.join(60)
        assert got == [0] and signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, old)


@pytest.mark.parametrize("after", ["type_error", "import_error", "nothing", "failed_case"])
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_stop_a_library_took_is_still_the_stop(monkeypatch, capsys, after, sig):
    """Ctrl-C while torch imported NumPy was taken by torch: exit 2 ("expected a message
    argument"), exit 1 (an ImportError traceback; "0/1 passed") or 0, by the moment it
    came (a review). The signal is heard by the CLI's own handler: exit 130 or 143."""
    import os
    import signal

    import gemmgate.cli as cli

    def a_library_takes_it(args, console, err):
        try:
            os.kill(os.getpid(), getattr(signal, sig))
            for _ in range(1000):   # the handler runs at a bytecode boundary
                pass
        except KeyboardInterrupt:   # (Terminated is one too)
            if after == "type_error":
                raise TypeError("expected a message argument") from None
            if after == "import_error":
                raise ImportError("cannot load module more than once per process") from None
        return 1 if after == "failed_case" else 0

    monkeypatch.setattr(cli, "_dispatch", a_library_takes_it)
    want = 130 if sig == "SIGINT" else 143
    assert cli.main(["chips"]) == want
    err = capsys.readouterr().err
    assert "a library took the signal" in err and "Traceback" not in err
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # put back


def test_without_a_signal_the_errors_are_what_they_were(monkeypatch, capsys):
    import gemmgate.cli as cli

    def fails(args, console, err):
        raise TypeError("bad")

    monkeypatch.setattr(cli, "_dispatch", fails)
    assert cli.main(["chips"]) == 2 and "gemmgate: error: bad" in capsys.readouterr().err


def test_a_run_that_went_on_after_a_taken_stop_is_marked_incomplete(monkeypatch, tmp_path,
                                                                    capsys):
    """A Ctrl-C taken by a library while torch imported: the run measured every case and
    wrote a file that looked whole (with NumPy half-imported, every case failed), exit
    130 (a review). The file is marked incomplete now, its cases kept."""
    import os
    import signal

    import gemmgate.cli as cli
    from gemmgate.results import RUN_SCHEMA, RunRecord

    out = tmp_path / "run.json"

    def went_on(args, console, err):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):
                pass
        except KeyboardInterrupt:
            pass
        out.write_text(json.dumps({"schema": RUN_SCHEMA, "environment": {"chip": "cpu"},
                                   "shapes": "8x8x8", "cases": []}))
        return 1

    monkeypatch.setattr(cli, "_dispatch", went_on)
    assert cli.main(["run", "--json", str(out)]) == 130
    data = json.loads(out.read_text())
    assert data["environment"]["incomplete"].startswith("interrupted: a library took")
    assert data["environment"]["chip"] == "cpu"
    assert RunRecord.from_json(data, "r").environment["incomplete"]
    assert "marked" in capsys.readouterr().err
