"""A time limit on one case (`--case-timeout`): a provider that hangs (a kernel that
deadlocks on its barriers, a custom provider that never returns) ends the run with exit
3 naming the case, where it used to hold a GPU runner until CI's job timeout killed it
with nothing said.

A watchdog thread per case, in two stages:
1. At the limit it raises CaseTimeout in the measuring thread (CPython's
   PyThreadState_SetAsyncExc). Python code stops at its next bytecode, and the run ends as
   any MeasurementError does: exit 3, the cases measured before it kept in --json.
   CaseTimeout is a BaseException, so no provider's `except Exception` takes it for a
   failed case.
2. A thread stuck in native code (waiting for a GPU kernel that never finishes) never
   reaches a bytecode. After `grace` more seconds the watchdog prints every thread's stack,
   calls `last_words` (the CLI writes the cases measured so far) and ends the process with
   exit 3 (`os._exit`: a stuck thread cannot be unwound). In a `--devices` worker that is
   a dead worker, which the parent reports as exit 3 too.
3. Native code that holds the GIL (a `module:function` provider's extension that never
   releases it) stops the watchdog itself: it is a Python thread. So each case also arms
   the kernel's alarm (SIGALRM, where its default action stands), `ALARM_AFTER_S` past
   the hard stop: it ends the process with nothing said or kept (exit 142 in a shell,
   -14 to a parent). Without it such a case held the runner until CI's job timeout (a
   review).
"""

from __future__ import annotations

import ctypes
import faulthandler
import math
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from gemmgate.context import MeasurementError
from gemmgate.stop_signal import CaseTimeout

T = TypeVar("T")
ALARM_AFTER_S = 30.0   # from the hard stop to the kernel's SIGALRM (stage 3)
EXIT_STUCK = 3   # the CLI's exit code for a run that could not be measured to its end
DEFAULT_LIMIT_S = 900.0   # the CLI's --case-timeout: a pr case takes seconds on a GPU


def cli_limit(given: float | None, tune_budget_s: float = 0.0) -> float:
    """--case-timeout's value: the given one, else the default plus twice a tuning
    search's budget per key (`gemmgate tune --budget-per-key`)."""
    return given if given is not None else DEFAULT_LIMIT_S + 2 * tune_budget_s


def grace_for(limit_s: float) -> float:
    """Seconds between the raise and the hard stop: a tenth of the limit, 1 s to 30 s."""
    return min(30.0, max(1.0, 0.1 * limit_s))


def _alarm_armed(seconds: float) -> bool:
    """SIGALRM in `seconds` (whole, at least 1), where its default action (ending the
    process) stands: not on Windows, not where a handler (pytest-timeout's) took it."""
    if not hasattr(signal, "alarm") or signal.getsignal(signal.SIGALRM) != signal.SIG_DFL:
        return False
    signal.alarm(min(max(1, math.ceil(seconds)), 2**31 - 1))   # (a C int's largest)
    return True


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> None:
    """Make `thread_id` raise `exc` at its next bytecode (None: cancel a pending one)."""
    arg = ctypes.py_object(exc) if exc is not None else ctypes.c_void_p(0)
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), arg)


def run_within(limit_s: float | None, label: str, fn: Callable[[], T],
               last_words: Callable[[], None] | None = None,
               grace_s: float | None = None) -> T:
    """`fn()` under a Deadline (`limit_s` None or 0: no limit); MeasurementError naming
    `label` when it ran past the limit. A call that returns is its result, even one that
    returned at the limit."""
    d = Deadline(limit_s, label, last_words, grace_s)
    try:
        with d:
            return fn()
    except CaseTimeout:   # raised once: nothing more can arrive from the watchdog
        d.stand_down()
        raise MeasurementError(f"{label} ran past the case time limit ({d.limit_s:g} s, "
                               "--case-timeout); a provider hangs or is far slower than "
                               "the limit allows") from None


class Deadline:
    """`with Deadline(limit_s, label):` around one case, in the thread that measures it
    (`run_within` is the usual way in). `limit_s` None or 0: no limit. At the limit the
    block ends with CaseTimeout, which may surface anywhere up to this object's exit."""

    def __init__(self, limit_s: float | None, label: str,
                 last_words: Callable[[], None] | None = None,
                 grace_s: float | None = None) -> None:
        if limit_s is not None and limit_s < 0:
            raise ValueError(f"a case time limit must be >= 0 seconds, got {limit_s}")
        self.limit_s = limit_s or 0.0
        self.label = label
        self.last_words = last_words
        self.grace_s = grace_for(self.limit_s) if grace_s is None else grace_s
        self.expired = False   # the watchdog raised (or is about to)
        self.ended = False     # the case left its block: the watchdog stands down
        self._over = threading.Event()
        self._lock = threading.Lock()   # expiring and leaving the block never interleave
        self._thread_id = 0
        self._alarmed = False

    def __enter__(self) -> Deadline:
        if self.limit_s > 0:
            self._thread_id = threading.get_ident()
            threading.Thread(target=self._watch, name=f"deadline {self.label}",
                             daemon=True).start()
            self._alarmed = _alarm_armed(self.limit_s + self.grace_s + ALARM_AFTER_S)
        return self

    def __exit__(self, *exc) -> bool:
        with self._lock:
            self.ended = True
            if self.expired:   # a raise still pending is cancelled; it mostly lands
                _raise_in(self._thread_id, None)   # first (any bytecode before this
                # call): then the case ends as timed out, at its limit, which is right
        self._disarm()
        self._over.set()
        return False

    def stand_down(self) -> None:
        """The case is over (its CaseTimeout was caught outside the block)."""
        self.ended = True
        self._disarm()
        self._over.set()

    def _disarm(self) -> None:
        if self._alarmed:
            self._alarmed = False
            signal.alarm(0)

    def _watch(self) -> None:
        if self._over.wait(self.limit_s):
            return
        with self._lock:
            if self.ended:
                return
            self.expired = True
            _raise_in(self._thread_id, CaseTimeout)
        if self._over.wait(self.grace_s) or self.ended:
            return
        self._stop()

    def _stop(self) -> None:
        """Stage 2: the measuring thread is stuck in native code."""
        err = sys.stderr
        print(f"\ngemmgate: {self.label} ran past the case time limit ({self.limit_s:g} s, "
              f"--case-timeout) and has not returned {self.grace_s:g} s later: stuck in "
              "native code (a GPU kernel that never finishes?). Every thread's stack:",
              file=err, flush=True)
        try:
            faulthandler.dump_traceback(file=err, all_threads=True)
        except (OSError, ValueError, AttributeError):   # stderr without a file number
            pass
        if self.last_words is not None:
            try:
                self.last_words()
            except Exception as e:   # the exit below must happen whatever it does
                print(f"gemmgate: could not keep the partial results: {e}", file=err)
        print(f"gemmgate: stopping the process (exit {EXIT_STUCK})", file=err, flush=True)
        os._exit(EXIT_STUCK)
