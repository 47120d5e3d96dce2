"""gemmgate/starter.py: a command started by another gemmgate process (a calibration run,
trials' checks) ends with it, and a stale or foreign starter pid does not end it."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from gemmgate import starter
from gemmgate.cli_run import RUNNING


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc")
def test_a_cli_command_whose_starter_is_killed_ends_too(tmp_path, pid_running):
    """trials' checks ran on after trials was SIGKILLed, and wrote their files (a review).
    The starter is killed once the command printed its header (past `follow_starter`);
    the command has ~60 cases of interpreter work left, and must end within 20 s."""
    shapes = ",".join(f"{16 + 8 * i}x16x16" for i in range(60))
    out = tmp_path / "run.json"
    middle = ("import subprocess, sys\n"
              "from gemmgate.starter import starter_env\n"
              "p = subprocess.Popen([sys.executable, '-m', 'gemmgate', 'run', '--chip', 'cpu',"
              f" '--modes', 'fp32', '--shapes', {shapes!r}, '--budget', '0.05', '--json',"
              f" {str(out)!r}], env=starter_env())\n"
              "print(p.pid, flush=True)\n"
              "p.wait()\n")
    proc = subprocess.Popen([sys.executable, "-c", middle], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    child = int(proc.stdout.readline())
    try:
        for line in proc.stderr:   # the command's own stderr (inherited)
            if line.startswith("chip cpu"):
                break
        else:
            raise AssertionError("the command never started")
        proc.kill()
        proc.wait(30)
        deadline = time.time() + 20
        while pid_running(child) and time.time() < deadline:
            time.sleep(0.2)
        assert not pid_running(child), "the command outlived its starter by 20 s"
        if out.exists():   # its mark while it measured (cli_run.mark_running), never more:
            data = json.loads(out.read_text())   # no case written, the run said unended
            assert data["environment"]["incomplete"] == RUNNING and data["cases"] == []
    finally:
        if pid_running(child):
            os.kill(child, signal.SIGKILL)
        proc.kill()


def test_a_gone_starter_is_said_and_a_foreign_one_ignored(monkeypatch, capsys):
    ended = []
    monkeypatch.setattr(starter.os, "_exit", lambda code: ended.append(code))
    monkeypatch.setenv(starter.PARENT_ENV, "999999999")   # no such process
    starter.follow_starter()
    assert ended == [1] and "is gone: not starting" in capsys.readouterr().err
    assert starter.PARENT_ENV not in os.environ   # taken out: children get their own
    ended.clear()
    for foreign in ("1", "not a pid", ""):   # pid 1: alive, (mostly) not the parent
        monkeypatch.setenv(starter.PARENT_ENV, foreign)
        starter.follow_starter()
    assert ended == []
