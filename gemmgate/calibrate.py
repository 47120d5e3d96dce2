"""Calibration runs: the same RunContext measured in several fresh processes (A/A).

On a GPU a priming run goes first and is not recorded: it compiles every kernel and
tunes (--retune) while the GPU idles between cases, and a run measured like that is
unlike every later one (H200: it set a 5-run noise of 4-6% on 1024^3 cases whose checks
then agreed within 1%). With --retune only the first process tunes; the others take its
tiles from a tuning cache of the calibration's own. Every run gets the very same context otherwise
(devices, reference kernel, timing policy): it is pickled, not rebuilt from arguments.
"""

from __future__ import annotations

import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from gemmgate.context import MeasurementError, RunContext
from gemmgate.results import RunRecord
from gemmgate.starter import starter_env


class CalibrationError(MeasurementError):
    """A calibration run failed (its process exited non-zero or wrote nothing)."""


def fresh_runs(ctx: RunContext, runs: int, keep: Path | None = None,
               on_run: Callable[[str], None] | None = None) -> list[RunRecord]:
    """`runs` recorded runs of `ctx`, each in a new process (after a priming run on a
    GPU); each run's JSON is also copied to keep/run<i>.json when `keep` is given."""
    prime = ctx.chip.device_type != "cpu"
    records = []
    with tempfile.TemporaryDirectory(prefix="gemmgate-cal-") as tmp:
        for i in range(-1 if prime else 0, runs):
            first = i == (-1 if prime else 0)
            tuning = ctx.tuning
            if tuning.retune:   # a cache of this calibration's own: in the user's, shared
                # by every job on the machine, another job's save swapped a recorded run's
                # tiles, and its A/A noise held a tile change (a review)
                tuning = replace(tuning, cache_dir=str(Path(tmp) / "tuning"))
            if tuning.retune and not first:  # the first run tuned into that cache: the
                # others search it (a key found there is not tuned again)
                tuning = replace(tuning, retune=False, pins_from=None, search=True)
            label = "priming run (not recorded)" if i < 0 else f"calibration run {i + 1}/{runs}"
            if on_run:
                on_run(label)
            out = Path(tmp) / f"run{i}.json"
            ctx_file = Path(tmp) / f"ctx{i}.pickle"
            ctx_file.write_bytes(pickle.dumps(replace(ctx, tuning=tuning)))
            proc = subprocess.run([sys.executable, "-m", "gemmgate.worker", str(ctx_file),
                                   str(out)], stdout=subprocess.DEVNULL,
                                  env=starter_env())
            if proc.returncode != 0 or not out.exists():
                raise CalibrationError(f"{label} failed (exit {proc.returncode})")
            if i >= 0:
                records.append(RunRecord.load(out))
                if keep:
                    shutil.copyfile(out, keep / f"run{i + 1}.json")
    return records
