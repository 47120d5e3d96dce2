"""Run a context's cases: in this process, or over several devices, one worker process
each (gemmgate/parallel.py). Every caller that runs more than one case comes here: the
CLI, the gate's re-measure, calibration workers, trials."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gemmgate.context import RunContext
from gemmgate.parallel import run_parallel
from gemmgate.precision import PrecisionMode
from gemmgate.results import CaseResult
from gemmgate.run import Runner, load_reference, own_kernels
from gemmgate.shapes import Case
from gemmgate.tuning import Tuner


def preflight(ctx: RunContext) -> None:
    """ValueError (exit 2) where the run cannot start: this tree's kernels/ or the A/B
    reference's not importing (or unusable), an unusable tuning cache or pin file. Asked
    before a run's --json is marked running (`cli_run.execute`): found in the Runner's
    start, such bad input had already replaced an earlier run's file there with a run of
    no case, "the process ended before the run did" (a review). Cached: the Runner asks
    again at no cost."""
    own_kernels()
    load_reference(ctx)
    Tuner(ctx.tuning)


def run_cases(ctx: RunContext, items: Sequence[tuple[PrecisionMode, Case]] | None = None,
              on_case: Callable[[CaseResult], None] | None = None,
              last_words: Callable[[], None] | None = None) -> list[CaseResult]:
    """Every (mode, case) of `items` (default: the whole run), in order; on several
    devices one worker process each (gemmgate/parallel.py), all with this context.
    `on_case(result)` is called with each case's result as it finishes (progress bars;
    `gemmgate tune` writes each key then, so a stopped search keeps the keys it finished).
    `last_words()` runs before this process stops on a case stuck in native code past
    `ctx.case_timeout_s` (gemmgate/deadline.py); a worker stuck so just dies (exit 3)."""
    items = ctx.items if items is None else list(items)
    for m in dict.fromkeys(m for m, _ in items):
        ctx.chip.require_mode(m.name)
    if len(ctx.devices) > 1:
        # this tree's kernels/ or the reference's not importing, an unusable tuning cache
        # or pin file is a clear error here (exit 2); in a worker's start it was "a worker
        # died", exit 3 (a review)
        preflight(ctx)
        return run_parallel(ctx, items, on_case)
    runner = Runner(ctx, last_words=last_words)
    out = []
    for mode, case in items:
        out.append(runner.run_case(mode, case))
        if on_case:
            on_case(out[-1])
    return out
