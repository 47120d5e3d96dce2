"""A fresh process that runs one RunContext and writes its run JSON:

    python -m gemmgate.worker CONTEXT.pickle OUT.json

`baseline calibrate` starts one per calibration run, handing each the same pickled
context (A/A runs must not share a process: process-to-process noise is what they
measure). The pickle is written by the parent into its own temporary directory.
Exit 0: written (accuracy failures are in the JSON); 2: the context could not be used;
3: a case could not be measured (past --case-timeout, out of memory): nothing written;
130: interrupted (Ctrl-C reaches the terminal's whole process group: the parent says so,
the worker ends quietly, where it printed an 80-line traceback, a review).
"""

from __future__ import annotations

import os
import pickle
import sys

from gemmgate.starter import PARENT_ENV, exit_with_parent

INTERRUPTED = 130


def main(argv: list[str]) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return INTERRUPTED


def _main(argv: list[str]) -> int:
    # (imported here, not at the top: a Ctrl-C while torch imports is `main`'s to take)
    from gemmgate.context import MeasurementError
    from gemmgate.execute import run_cases
    from gemmgate.files import write_json_atomic
    from gemmgate.results import RunRecord
    from gemmgate.run import environment_of

    if len(argv) != 2:
        print("usage: python -m gemmgate.worker CONTEXT.pickle OUT.json", file=sys.stderr)
        return 2
    # a calibration stopped (Ctrl-C, a killed job) ends its run too
    exit_with_parent(int(os.environ.get(PARENT_ENV, "0")) or None)
    with open(argv[0], "rb") as f:
        ctx = pickle.load(f)
    if ctx.chip.device_type == "cpu":
        from gemmgate import interpreter

        interpreter.enable()  # before kernels is imported (by the Runner)
    try:
        record = RunRecord(environment_of(ctx), ctx.shapes_label, tuple(run_cases(ctx)))
    except ValueError as e:
        print(f"gemmgate worker: error: {e}", file=sys.stderr)
        return 2
    except MeasurementError as e:
        print(f"gemmgate worker: measurement failed: {e}", file=sys.stderr)
        return 3
    write_json_atomic(argv[1], record.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
