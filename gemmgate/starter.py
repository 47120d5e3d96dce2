"""A gemmgate process started by another one ends when its starter does: a worker, a
calibration run or a trials check left behind kept measuring (on a GPU runner, holding a
CUDA context and disturbing the next job's timing) and wrote its files."""

from __future__ import annotations

import os
import sys
import threading
import time

PARENT_ENV = "GEMMGATE_PARENT_PID"   # the starter's pid, for a process run as a command


def exit_with_parent(parent: int | None = None) -> None:
    """End this process when its parent (`parent`, the starter's pid, else the current
    parent) is gone: a worker or a calibration run left behind keeps measuring (on a GPU
    runner, holding a CUDA context and disturbing the next job's timing). A daemon thread
    polls the parent; given the starter's pid, a parent gone before the thread started
    is seen too."""
    parent = parent or os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def starter_env() -> dict[str, str]:
    """The environment of a gemmgate command started by this process (a calibration run,
    trials' checks): it ends when this process does (`follow_starter`)."""
    return {**os.environ, PARENT_ENV: str(os.getpid())}


def follow_starter() -> None:
    """In a CLI command started with `starter_env`: end with the starter. trials' checks
    ran on, orphaned, after trials was killed, and wrote their files (a review). The
    variable is taken out of the environment (this command's own children get their
    own). A starter that is not this process's parent: already gone (the command is not
    started), or a stale value (ignored)."""
    value = os.environ.pop(PARENT_ENV, "")
    if not value.isdigit():
        return
    starter = int(value)
    if starter == os.getppid():
        exit_with_parent(starter)
        return
    try:
        os.kill(starter, 0)
    except ProcessLookupError:
        print(f"gemmgate: the process that started this command (pid {starter}, "
              f"${PARENT_ENV}) is gone: not starting", file=sys.stderr, flush=True)
        os._exit(1)
    except OSError:   # alive, another user's: not this command's starter
        pass
