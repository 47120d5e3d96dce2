"""Spread a run over several devices: one worker process per device (`--devices 0,1`).

Work items (mode, case) go to a process pool whose workers each build their own Runner
from the run's context on one device (spawned processes: no CUDA context is inherited;
the context pickles). Items are handed out one at a time, so a slow device takes fewer
of them; results come back in the original order. On the CPU the "devices" are just
worker processes (used to test the split without a GPU).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

from gemmgate import interpreter
from gemmgate.context import MeasurementError, RunContext
from gemmgate.precision import PrecisionMode
from gemmgate.results import CaseResult
from gemmgate.run import Runner
from gemmgate.shapes import Case
from gemmgate.starter import exit_with_parent

_RUNNER = None  # the worker process's Runner: set once by _init, in the worker only
_SLOT = None    # (the shared array of items in flight, this worker's slot in it): _init's


class WorkerError(MeasurementError):
    """A worker process died (killed, out of memory, a crash in native code)."""


def _init(counter, stuck, running, ctx: RunContext, parent: int) -> None:
    global _RUNNER, _SLOT
    exit_with_parent(parent)
    # Ctrl-C reaches the terminal's whole process group: the parent stops the pool
    # (`_stop`); a worker idle between cases died of it printing "Process SpawnProcess-2:"
    # and the start of a traceback under the run's "interrupted" (a review)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with counter.get_lock():
        slot = counter.value
        counter.value += 1
    _SLOT = running, slot % len(running)
    index = ctx.devices[slot % len(ctx.devices)]
    if ctx.chip.device_type != "cpu":
        import torch

        torch.cuda.set_device(index)
    else:   # a spawned process: the interpreter (and its fix) before kernels is imported
        interpreter.enable()

    def last_words() -> None:   # the deadline's, just before it ends this worker (exit 3)
        stuck.value = 1

    _RUNNER = Runner(ctx.on_device(index), last_words=last_words)


def _item(i: int, mode: PrecisionMode, case: Case):
    running, slot = _SLOT
    running[slot] = i   # what a worker that dies was running (`_in_flight`)
    try:
        return _RUNNER.run_case(mode, case)
    finally:
        running[slot] = -1


def _in_flight(running, ctx: RunContext, items) -> str:
    """The cases the workers were running when the pool broke, with their devices."""
    named = [f"{items[i][0].name} {items[i][1].id} on device {ctx.devices[slot]}"
             for slot, i in enumerate(running[:]) if 0 <= i < len(items)]
    return f"; in flight: {', '.join(named)}" if named else ""


def run_parallel(ctx: RunContext, items: Sequence[tuple[PrecisionMode, Case]],
                 on_case: Callable[[CaseResult], None] | None = None):
    spawn = mp.get_context("spawn")
    counter = spawn.Value("i", 0)
    running = spawn.Array("i", [-1] * len(ctx.devices))   # each worker's item (`_item`)
    stuck = spawn.Value("i", 0)   # set by a worker ending itself on a stuck case: its exit
    # code alone is unreliable (the pool's manager thread reaps the workers concurrently
    # with _stop, and a racing waitpid reads no code: "died" was said, CI, session 66)
    results = [None] * len(items)
    workers = min(len(ctx.devices), max(len(items), 1))
    pool = ProcessPoolExecutor(workers, mp_context=spawn, initializer=_init,
                               initargs=(counter, stuck, running, ctx, os.getpid()))
    try:
        futures = {pool.submit(_item, i, m, c): i for i, (m, c) in enumerate(items)}
        for fut in as_completed(futures):
            i = futures[fut]
            results[i] = fut.result()
            if on_case:
                on_case(results[i])
    except BrokenProcessPool:
        where = _in_flight(running, ctx, items)   # (read before the workers end)
        _stop(pool)
        devices = ",".join(map(str, ctx.devices))
        if stuck.value:   # its own stderr names the case and printed the stacks (its
            # last words set this before its exit 3: a provider's own exit(3) was "stuck
            # past --case-timeout" by its code alone, no limit involved; a review)
            raise WorkerError(f"a worker process of --devices {devices} stopped itself: a "
                              "case was stuck past --case-timeout (the worker's message "
                              f"above names it){where}; the run is incomplete") from None
        held = ", or a case held the interpreter in native code past --case-timeout" \
            if ctx.case_timeout_s else ""   # (its alarm ends the process: no word from it)
        raise WorkerError(f"a worker process of --devices {devices} died (killed, out of "
                          f"memory, or a crash in native code{held}){where}; the run is "
                          "incomplete") from None
    except BaseException:   # a case's error or Ctrl-C: stop now, run none of the rest
        _stop(pool)
        raise
    pool.shutdown(wait=True)
    return results


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel what is queued and end the workers (their current case too): leaving the
    pool's `with` block waited for every queued case (Ctrl-C ran them all, session 57)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())   # (shutdown drops them)
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(10)
