"""Spread a run over several devices: one worker process per device (`--devices 0,1`).

Work items (mode, case) go to a process pool whose workers each build their own Runner
from the run's context on one device (spawned processes: no CUDA context is inherited;
the context pickles). Items are handed out one at a time, so a slow device takes fewer
of them; results come back in the original order. On the CPU the "devices" are just
worker processes (used to test the split without a GPU).
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed

from gemmgate import interpreter
from gemmgate.context import RunContext
from gemmgate.precision import PrecisionMode
from gemmgate.results import CaseResult
from gemmgate.run import Runner
from gemmgate.shapes import Case

_RUNNER = None  # the worker process's Runner: set once by _init, in the worker only


def _init(counter, ctx: RunContext) -> None:
    global _RUNNER
    with counter.get_lock():
        slot = counter.value
        counter.value += 1
    index = ctx.devices[slot % len(ctx.devices)]
    if ctx.chip.device_type != "cpu":
        import torch

        torch.cuda.set_device(index)
    else:   # a spawned process: the interpreter (and its fix) before kernels is imported
        interpreter.enable()
    _RUNNER = Runner(ctx.on_device(index))


def _item(mode: PrecisionMode, case: Case):
    return _RUNNER.run_case(mode, case)


def run_parallel(ctx: RunContext, items: Sequence[tuple[PrecisionMode, Case]],
                 on_case: Callable[[CaseResult], None] | None = None):
    spawn = mp.get_context("spawn")
    counter = spawn.Value("i", 0)
    results = [None] * len(items)
    workers = min(len(ctx.devices), max(len(items), 1))
    with ProcessPoolExecutor(workers, mp_context=spawn, initializer=_init,
                             initargs=(counter, ctx)) as pool:
        futures = {pool.submit(_item, m, c): i for i, (m, c) in enumerate(items)}
        for fut in as_completed(futures):
            i = futures[fut]
            results[i] = fut.result()
            if on_case:
                on_case(results[i])
    return results
