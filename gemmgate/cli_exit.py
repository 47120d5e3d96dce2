"""How a command's end reaches its caller (gemmgate/cli.py's `main`): a console that goes
quiet where its reader went away, and what a stop (Ctrl-C, SIGTERM) leaves in a
`run`/`check` --json where it came before the command's own guard or was taken by a
library. Light: no torch, so the CLI imports it before any command's module."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from gemmgate.files import write_json_atomic
from gemmgate.results import RunRecord, holds_a_run
from gemmgate.stop_signal import stop_reason, stopped_by


class QuietConsole(Console):
    """A console whose reader went away (`gemmgate check | head -1`, a CI log's pipe
    closed) goes quiet and the command goes on to its end and its exit code: rich's
    default ended the process with exit 1, the regression code, before `check` wrote
    --comment and --summary (a review)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        try:
            fd = self.file.fileno()
        except (AttributeError, OSError, ValueError):
            fd = sys.stdout.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)   # (and Python's own flush at exit writes nowhere)
        os.close(devnull)


def taken(signum: int, e: Exception | None, args, err: Console) -> int:
    """A Ctrl-C or SIGTERM that a library took (its KeyboardInterrupt caught, then another
    error or none): the stop it was, 130 or 143, not a usage error, a failed case or 0;
    and a run file this `run`/`check` wrote after it is marked incomplete (the run went
    on, and its file looked whole: with NumPy half-imported every case had failed; a
    review). A second Ctrl-C stops the run where it is."""
    name = stop_reason(signum)
    after = f"; then: {type(e).__name__}: {e}" if e is not None else ""
    err.print(f"gemmgate: {name} (a library took the signal{escape(after)})")
    path = getattr(args, "json", None)
    if getattr(args, "command", None) not in ("run", "check") or not holds_a_run(path):
        return 128 + signum
    try:
        data = json.loads(Path(path).read_text())
        env = data["environment"]
    except (OSError, ValueError, KeyError, TypeError):
        return 128 + signum
    if isinstance(env, dict) and not env.get("incomplete"):
        env["incomplete"] = f"{name}: a library took the signal and the run went on"
        write_json_atomic(path, data)
        err.print(f"gemmgate: marked {escape(path)} incomplete (environment.incomplete)")
    return 128 + signum


def mark_stopped(args, e: KeyboardInterrupt) -> None:
    """`run`/`check` stopped while their module imports, before their own guard
    (cli_run.stops_before_cases): an earlier run's --json there is marked a run of no
    case, stopped (it stayed complete and unmarked: a review); nothing else is written
    over, the path being unchecked yet."""
    path = getattr(args, "json", None)
    if args.command in ("run", "check") and holds_a_run(path):
        write_json_atomic(path, RunRecord.stopped_before_cases(
            stopped_by(e), getattr(args, "shapes", None) or "").to_json())
        print(f"gemmgate: marked the earlier run in {path} as this one, stopped before its "
              "first case (environment.incomplete)", file=sys.stderr)
