"""gemmgate command line: every parser (cli_args.py) and every printed line live in the cli*
modules; they parse, build a RunContext, call the harness, print, and return the exit
code.

Exit codes: 0 all good; 1 regression or accuracy failure; 2 usage or input error; 3 the
run could not be measured to its end (MeasurementError); 130 and 143 Ctrl-C, SIGTERM.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape

from gemmgate.cli_args import UsageError, build_parser
from gemmgate.cli_exit import QuietConsole, mark_stopped, taken
from gemmgate.context import MeasurementError
from gemmgate.stop_signal import EXIT_TERMINATED, StopOnSigterm, Terminated

OK, FAILED, USAGE, MEASUREMENT = 0, 1, 2, 3


def main(argv: Sequence[str] | None = None) -> int:
    # emoji=False: rich made ":a:" in a message (`--providers mod:a`) an emoji (a review)
    console = QuietConsole(emoji=False)
    if not console.is_terminal:  # CI logs: wide enough that tables do not fold
        console = QuietConsole(width=160, emoji=False)
    err = QuietConsole(stderr=True, soft_wrap=True, emoji=False)
    stop, args = StopOnSigterm(), None
    try:
        with stop:
            args = _parse(build_parser(), argv)
            code = _dispatch(args, console, err)
    except Terminated:
        err.print("gemmgate: terminated (SIGTERM)")
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        err.print("gemmgate: interrupted")
        return 128 + signal.SIGINT
    except (UsageError, ValueError, TypeError, OSError) as e:
        if stop.heard:
            return taken(stop.heard, e, args, err)
        err.print(f"[red]gemmgate: error:[/] {escape(str(e))}")
        return USAGE
    except MeasurementError as e:
        if stop.heard:
            return taken(stop.heard, e, args, err)
        err.print(f"[red]gemmgate: measurement failed:[/] {escape(str(e))}")
        return MEASUREMENT
    except Exception as e:
        if stop.heard:
            return taken(stop.heard, e, args, err)
        raise
    return taken(stop.heard, None, args, err) if stop.heard else code


_COMMANDS = {"chips": ("cli_run", "chips_command"), "run": ("cli_run", "run_command"),
             "check": ("cli_gate", "check_command"),
             "baseline": ("cli_gate", "baseline_command"),
             "trials": ("cli_trials", "trials_command"),
             "bisect": ("cli_bisect", "bisect_command"),
             "report": ("cli_report", "report_command"),
             "sweep": ("cli_sweep", "sweep_command"), "tune": ("cli_tune", "tune_command")}


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """The arguments; `report`'s run files may sit on both sides of its options
    (`report r1.json -o DIR r2.json`: argparse takes one run of positionals, and called
    the second "unrecognized", a review)."""
    args, extra = parser.parse_known_args(argv)
    cut = extra.index("--") if "--" in extra else len(extra)
    before, after = extra[:cut], extra[cut + 1:]
    if extra and args.command == "report" and not any(e.startswith("-") for e in before):
        args.runs += before + after   # (after `--`, every word a run file: "unrecognized
        # arguments: -- r2.json" was exit 2, a review)
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _dispatch(args, console: Console, err: Console) -> int:
    """The command's module only: `report` reads files and draws, and runs where torch is
    not installed (the nightly's hosted job that combines the chips' runs)."""
    import importlib

    from gemmgate.starter import follow_starter

    follow_starter()   # started by another gemmgate (trials): end with it
    module, name = _COMMANDS[args.command]
    try:   # (torch imports here: a second or more)
        command = getattr(importlib.import_module(f"gemmgate.{module}"), name)
    except KeyboardInterrupt as e:
        mark_stopped(args, e)
        raise
    return command(args, console, err)


if __name__ == "__main__":
    sys.exit(main())
