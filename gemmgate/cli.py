"""gemmgate command line: parse, call, print, exit code.

Exit codes: 0 all good; 1 regression or accuracy failure; 2 usage or input error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape

from gemmgate.precision import MODE_NAMES
from gemmgate.shapes import SETS

OK, FAILED, USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad input from the user: exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits 2 too; keep our message format
        self.print_usage(sys.stderr)
        raise UsageError(message)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--chip", help="chip id (default: $GEMMGATE_CHIP, else detected)")
    p.add_argument("--shapes", help=f"shape set ({', '.join(SETS)}) or a .csv/.yaml file "
                                    "(default: smoke on the CPU, pr on a GPU)")
    p.add_argument("--modes", help=f"comma-separated precision modes ({','.join(MODE_NAMES)}); "
                                   "default: every mode the chip supports")
    p.add_argument("--timing", choices=("graph", "eager"),
                   help="graph: CUDA-graph replay, device time only (default); "
                        "eager: host launch cost included")
    p.add_argument("--budget", type=float, metavar="S", help="timing budget per case, seconds")
    p.add_argument("--block", type=int, metavar="N",
                   help="time each provider N calls in a row (default 1: strict A B "
                        "alternation); see gemmgate/timing.py on power-capped GPUs")
    p.add_argument("--json", metavar="PATH", help="write the full results as JSON")
    p.add_argument("--devices", metavar="IDS",
                   help="spread cases over these devices, one worker process each (e.g. 0,1)")
    p.add_argument("--retune", action="store_true",
                   help="ignore pinned and cached Triton tiles: tune every shape afresh")


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="gemmgate", description="Triton GEMM vs vendor BLAS, per chip.")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="check accuracy and time Triton against the vendor")
    _common(run)
    run.add_argument("--pin-tiles", metavar="FILE",
                     help="use the Triton tiles recorded in this baseline file")
    run.add_argument("--ab-ref", metavar="REF",
                     help="also time the kernel at git REF in the same process (A/B); "
                          "the JSON then holds a 'reference' provider")
    chips = sub.add_parser("chips", help="list the chip table and what is detected here")
    chips.add_argument("--ids", action="store_true", help="print chip ids only")
    from gemmgate.cli_gate import add_gate_commands

    add_gate_commands(sub, _common)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    console = Console()
    if not console.is_terminal:  # CI logs: wide enough that tables do not fold
        console = Console(width=160)
    err = Console(stderr=True, soft_wrap=True)
    try:
        args = build_parser().parse_args(argv)
        return _dispatch(args, console, err)
    except UsageError as e:
        err.print(f"[red]gemmgate: error:[/] {escape(str(e))}")
        return USAGE
    except (ValueError, TypeError, OSError) as e:
        err.print(f"[red]gemmgate: error:[/] {escape(str(e))}")
        return USAGE
    except KeyboardInterrupt:
        err.print("gemmgate: interrupted")
        return 130


def _dispatch(args, console: Console, err: Console) -> int:
    if args.command == "chips":
        from gemmgate.cli_run import chips_command

        return chips_command(args, console)
    if args.command == "run":
        from gemmgate.cli_run import run_command

        return run_command(args, console, err)
    from gemmgate.cli_gate import gate_command

    return gate_command(args, console, err)


if __name__ == "__main__":
    sys.exit(main())
