"""SIGTERM (a CI job cancelled, `timeout`, `docker stop`) as Ctrl-C is: raised where the
process is, so that `run` and `check` keep the cases measured before it in their --json
(`cli_run.execute`) and the CLI exits 143 (`cli.main`).

A Python signal handler runs only when the main thread next runs Python code. A case
stuck in native code (a GPU kernel that never ends) would hold the process, and its GPU,
until `--case-timeout` stopped it (gemmgate/deadline.py: 900 s by default), where before
the handler SIGTERM ended it at once. So a watcher thread hears each SIGTERM through
`signal.set_wakeup_fd` (written by the C-level handler, whatever the main thread does):
where the command has not ended `grace_s` later, it says so and ends the process, exit
143, as SIGTERM's default action would have (the cases measured are not kept then).
A second SIGTERM ends the process at once, by the handler where it runs, else (the main
thread in native code) by the watcher, which hears it too (it waited out the grace: a
review). One sent within `SAME_STOP_S` of the first is that stop again, not a second:
`timeout` (and a job runner that signals the command and then its process group) sends
SIGTERM to the command, then to its whole process group, so the command gets it twice,
microseconds apart; taken as a second, it ended the run by SIGTERM's default action, the
cases measured not kept and its --json left marked running (about 1 run in 6 under
`timeout`; a review).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from types import TracebackType

TERM_GRACE_S = 5.0   # from SIGTERM to the hard stop, where the command has not ended
SAME_STOP_S = 0.5    # a SIGTERM this soon after the first is the same stop, sent twice
EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread (`StopOnSigterm`)."""


class CaseTimeout(BaseException):
    """Raised in the measuring thread when its case ran past the limit
    (gemmgate/deadline.py)."""


# What stops a case from outside its providers: never a provider's failure, whatever a
# provider's call was doing when it came (a provider's own BaseException is its failure:
# GeneratorExit too, which comes from outside only at a generator's yield, never inside a
# provider's call: raised by one, it crashed the run, exit 1, no --json; a review)
STOPS = (KeyboardInterrupt, CaseTimeout)


class StopOnSigterm:
    """While in this context, SIGTERM raises `Terminated` in the main thread, and ends the
    process `grace_s` later where the context has not been left by then. Entered outside
    the main thread (a signal handler can be set nowhere else) it does nothing. Leaving
    it puts back the handler and wakeup fd it replaced."""

    def __init__(self, grace_s: float | None = None) -> None:
        self.grace_s = TERM_GRACE_S if grace_s is None else grace_s
        self._active = False
        # the first SIGINT or SIGTERM heard inside, or None: a library may take the
        # KeyboardInterrupt it raised and fail otherwise (torch importing NumPy made it an
        # ImportError, a TypeError, or nothing; a review), which the CLI then reads as
        # the stop it was
        self.heard: int | None = None
        self._term_at: float | None = None   # when the handler took the first SIGTERM

    def __enter__(self) -> StopOnSigterm:
        if threading.current_thread() is not threading.main_thread():
            return self
        self._done = threading.Event()
        self._read, self._write = socket.socketpair()
        self._write.setblocking(False)
        self._old_fd = signal.set_wakeup_fd(self._write.fileno(), warn_on_full_buffer=False)
        self._old_handler = signal.signal(signal.SIGTERM, self._on_term)
        self._old_int = signal.getsignal(signal.SIGINT)
        if self._old_int is signal.default_int_handler:   # (not a caller's own handler)
            signal.signal(signal.SIGINT, self._on_int)
        self._watcher = threading.Thread(target=self._watch, name="gemmgate-sigterm",
                                         daemon=True)
        self._watcher.start()
        self._active = True
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if not self._active:
            return
        self._active = False
        self._done.set()
        signal.signal(signal.SIGTERM, self._old_handler)
        if self._old_int is signal.default_int_handler:
            signal.signal(signal.SIGINT, self._old_int)
        signal.set_wakeup_fd(self._old_fd)
        self._read.shutdown(socket.SHUT_RDWR)   # the watcher's recv returns b""
        self._watcher.join(5)
        self._read.close()
        self._write.close()

    def _watch(self) -> None:
        first, until = None, None   # when the first SIGTERM was heard; its grace's end
        while True:
            try:
                if until is not None:
                    self._read.settimeout(max(until - time.monotonic(), 0.0))
                got = self._read.recv(64)
            except TimeoutError:
                got = None   # the grace is over
            except OSError:
                return
            if got == b"":   # the context was left: the command ended
                return
            if self._done.is_set():   # the command is ending: no hard stop
                return
            if got and signal.SIGTERM in got:
                now = time.monotonic()
                if first is None:   # (its copies read with it are the same stop)
                    first, until = now, now + self.grace_s
                elif now - first >= SAME_STOP_S:
                    self._stop("a second SIGTERM")
                continue
            if first is not None and got is None:
                self._stop(f"the command had not ended {self.grace_s:g} s later (a case "
                           "stuck in native code?)")

    @staticmethod
    def _stop(why: str) -> None:
        print(f"gemmgate: terminated (SIGTERM); {why}: stopped without keeping its cases",
              file=sys.stderr, flush=True)
        os._exit(EXIT_TERMINATED)

    def _on_term(self, signum, frame) -> None:
        now = time.monotonic()
        if self._term_at is None:
            self._term_at = now
            self.heard = self.heard or signal.SIGTERM
            raise Terminated()
        if now - self._term_at >= SAME_STOP_S:
            self._stop("a second SIGTERM")
        # else: the first one again (`timeout`: to the command, then to its group)

    def _on_int(self, signum, frame) -> None:
        self.heard = self.heard or signal.SIGINT
        raise KeyboardInterrupt


def stop_reason(signum: int) -> str:
    """How a run stopped by this signal says so (`environment.incomplete`, messages)."""
    return "terminated (SIGTERM)" if signum == signal.SIGTERM else "interrupted"


def stopped_by(e: KeyboardInterrupt) -> str:
    """A partial run's `incomplete` reason for an interrupt (`Terminated`: SIGTERM)."""
    return stop_reason(signal.SIGTERM if isinstance(e, Terminated) else signal.SIGINT)
