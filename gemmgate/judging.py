"""A provider's verdict: its checked calls before timing (`check`), each output judged
on a buffer poisoned with NaN (`judged`), and the judgment again after timing
(`after_timing`: the timed CUDA graph replayed, then the call), a worse verdict replacing
the first. gemmgate/run.py calls them for every case."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace

import torch

from gemmgate.accuracy import (
    DOWNGRADED,
    EXCESS_RATIO,
    FAIL,
    PASS,
    Accuracy,
    classify,
    errors,
    kept_less,
)
from gemmgate.input_guard import InputGuard
from gemmgate.precision import PrecisionMode, band_for, flags_changed
from gemmgate.providers import Unsupported
from gemmgate.results import UNSUPPORTED, ProviderResult
from gemmgate.stop_signal import STOPS
from gemmgate.tuning import TuningError


def check(name: str, build, inp, mode: PrecisionMode, ref, scale2: float = 0.0):
    """Build the provider, run it on a poisoned output, classify its error (`scale2`:
    the inputs' typical product size, accuracy.errors' floor)."""
    try:
        call = build(inp, mode)
        measured, acc = judged(call, band_for(mode, name), ref, scale2,
                               inputs=operands(inp))
    except Unsupported as e:
        return None, ProviderResult(name, UNSUPPORTED, message=str(e))
    except TuningError:   # the harness's tuning cache, not the kernel: no accuracy verdict
        raise             # (a save another job's rewrite refused was Triton's "fail", exit 1)
    except STOPS:
        raise
    except BaseException as e:   # a compile or launch error, a wrong output, a provider's
        return None, failed(name, e)   # exit or own BaseException (which crashed the
        # run, exit 1, no --json: a review) fails this case, not the run
    return call, ProviderResult(name, acc.status, acc.error, acc.message,
                                excess=measured.excess, block_excess=measured.block_excess,
                                element=measured.element)


def operands(inp) -> tuple:
    """A case's input tensors (A, B and fp8's scales), which no output may share."""
    return tuple(x for x in (inp.a, inp.b, inp.scale_a, inp.scale_b) if x is not None)


def judged(call, mode: PrecisionMode, ref, scale2: float, kept: list | None = None,
           inputs: tuple = ()):
    """(Errors, Accuracy) of a provider's call made on its poisoned output: two calls,
    the first one's output filled with NaN, so elements the second does not write show
    (with a block more of its size: where a provider makes its own output, the memory it
    gets back).
    `kept`, where given, gets a copy of the output judged (`replayed` compares with it).
    An output that shares memory with one of `inputs` is refused before it is poisoned
    (the poison wrote into A, and the provider was said to write into its inputs)."""
    out = _tensor(call())
    if inputs and out.device != inputs[0].device:   # (a meta tensor failed on "item()
        # cannot be called on meta tensors", a review)
        raise ValueError(f"returned a tensor on {out.device}, its inputs are on "
                         f"{inputs[0].device}")
    if out.numel() and any(x.numel() and x.untyped_storage().data_ptr()
                           == out.untyped_storage().data_ptr() for x in inputs):
        raise ValueError("returned a view of its inputs (A, B or a scale), not its product")
    if out.is_floating_point() and out.numel():
        out.fill_(math.nan)
        # and a free block of its size (a scratch of C's size a call freed) poisoned too,
        # both let go: a provider that makes its own output, not writing `out=`, gets this
        # memory back (the poison reached nothing its second call wrote: one that never
        # wrote its last row passed, the row holding its freed scratch's product; a review)
        spare = torch.empty_like(out).fill_(math.nan)
        del out, spare
    out = _tensor(call())
    if out.is_cuda:
        torch.cuda.synchronize()
    want = getattr(torch, mode.output_dtype)
    if out.dtype != want:   # the contract's output type: a wider one is another GEMM
        raise TypeError(f"output dtype {out.dtype}, the mode's is {want}")
    measured = errors(out, ref, scale2)                # (a wrong shape raises)
    if kept is not None:
        kept[:] = [out.clone()]
    return measured, classify(measured, mode)


def _tensor(out):
    """A call's output, where it is a tensor (the contract returns the product): a custom
    provider returning None failed on "'NoneType' object has no attribute ..."."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"returned {type(out).__name__}, not a tensor (a GEMM provider "
                        "returns its product)")
    return out


_RANK = {PASS: 0, DOWNGRADED: 1, FAIL: 2}


def judge_kept_less(results: dict, mode: PrecisionMode, vendor: str = "vendor") -> None:
    """In a mode with a `kept_less_floor` (fp16), each passing provider whose error
    beyond the output's rounding is above it and over EXCESS_RATIO x the other side's on
    the same inputs is downgraded: every other provider against the vendor, the vendor
    against Triton. A sum kept in fp16 between K blocks passed fp16's whole-error band
    (a review); the other side's honest figure is the yardstick."""
    floor = mode.kept_less_floor
    if floor is None or vendor not in results:
        return
    pairs = [(n, vendor) for n in results if n != vendor] + [(vendor, "triton")]
    judged = {}
    for side, other in pairs:
        a, b = results.get(side), results.get(other)
        if a is None or b is None or a.accuracy != PASS or b.accuracy == FAIL:
            continue
        if kept_less(a.excess, b.excess, floor):
            judged[side] = replace(a, accuracy=DOWNGRADED, message=(
                f"accumulated below fp32: error {a.excess:.2e} beyond the output's own "
                f"rounding, over {EXCESS_RATIO:g}x {other}'s {b.excess:.2e} on the same "
                f"inputs and above {floor:.1e} (the whole output's {a.error:.2e})"))
    results.update(judged)


def after_timing(calls: dict, guard: InputGuard, mode: PrecisionMode,
                  results: dict, timed: dict | None = None,
                  flags: dict | None = None) -> None:
    """Each timed provider judged again, against a reference made again (the float64 one
    is dropped while timing), as before timing (`judged`: two calls, the first's output
    poisoned): first what its timed calls ran where that is not the call itself
    (`timed`, from `measure`: under CUDA-graph timing the captured graph's replay), then
    that again up to REPLAYS times (`replayed`: a graph wrong on some replays only), then
    the call. Where a verdict is worse (pass to downgraded or fail), that is the
    provider's (the worst of the two, a graph's downgrade said after an eager call's
    failure): its first two calls alone were judged, so a race, a kept copy gone stale,
    a tile switched after a few calls (a review) or a graph that computes otherwise than
    the eager calls (or leaves part of its output unwritten) failed no check. The timings
    stay; the verdict fails the case. One that writes into its inputs in these calls
    fails so, and the inputs are made again for the rest (else they were judged against
    a reference of other inputs; a review); one that changes torch's matmul math flags
    from `flags` (`precision.math_flags()` as the case set them) fails so, and they are
    set back for the rest (else a provider judged after it, reading them, was said to be
    "downgraded", and the one that set them passed; a review)."""
    ran = dict(timed or {})
    if timed is not None:
        timed.clear()   # (a replay holds its graph and its memory: dropped after its check)
    live = {n: c for n, c in calls.items() if results[n].accuracy in (PASS, DOWNGRADED)}
    if not live:
        return
    ref, scale2 = guard.inp.reference_and_scale2()
    inputs = operands(guard.inp)
    for name, call in live.items():
        replay, kept = ran.pop(name, call), []
        band = band_for(mode, name)   # each side's band (tf32x3)
        before = results[name]
        if replay is not call:   # the graph: judged, then replayed against what it gave
            _worse(results, name, *_tried(lambda r=replay, k=kept, b=band: judged(
                r, b, ref, scale2, k, inputs)), "in its timed CUDA graph")
            _worse(results, name, *_tried(lambda r=replay, k=kept, b=band: replayed(
                r, b, ref, scale2, k)), "in its timed CUDA graph")
        graph = results[name] if results[name] is not before else None
        got = _tried(lambda c=call, k=kept, b=band: judged(c, b, ref, scale2, k, inputs))
        again = (None, _PASSED) if replay is not call else \
            _tried(lambda c=call, k=kept, b=band: replayed(c, b, ref, scale2, k))   # (eager
        del replay, kept   # timing: what was timed is the call; before the guard looks)
        changed = flags_changed(flags) if flags is not None else ""   # (puts them back)
        if guard.written():
            results[name] = _failed_late(
                results[name], "wrote into its inputs (A, B or a scale) after its timed calls")
        elif changed:
            results[name] = _failed_late(results[name], (
                f"changed torch's matmul math flags after its timed calls ({changed}): "
                "they were set back for the rest")[:300])
        else:
            _worse(results, name, *got, "after its timed calls")
            _worse(results, name, *again, "after its timed calls")
            if graph is not None and results[name] is not graph:   # worse again: the
                results[name] = replace(results[name], message=(   # graph's finding said
                    f"{results[name].message}; {graph.message}")[:300])   # too (a review)


# What a provider's timed calls ran, called again after the judged two: each output
# compared bit for bit with the last one judged, and judged where it differs. Only two
# calls were judged, so a graph wrong on some replays only (a race in a split's fix-up)
# passed 1 - p^2 of the time. Up to REPLAYS calls within REPLAYS_S seconds (a large
# case's replay takes ~100 ms); a call that repeats its bits costs no judging.
REPLAYS, REPLAYS_S = 8, 0.1


_PASSED = Accuracy(0.0, PASS, "")


def replayed(fn: Callable[[], object], mode: PrecisionMode, ref, scale2: float,
             kept: list | None = None) -> tuple:
    """(Errors, Accuracy) of the worst of up to REPLAYS more calls of `fn` (within
    REPLAYS_S seconds, read at the call), each judged where its output's bits differ from
    the last judged one's (`kept`: the output `judged` judged, else the first call's;
    NaN never repeats: judged); the message names the call. (None, a pass) where each
    repeats the last judged bit for bit: then no call is judged again."""
    times, seconds = REPLAYS, REPLAYS_S
    started, worst = time.perf_counter(), (None, _PASSED)
    last = kept[0] if kept else None
    for i in range(1, times + 1):
        out = _tensor(fn())
        if out.is_cuda:
            torch.cuda.synchronize()
        if last is None or not torch.equal(out, last):
            measured = errors(out, ref, scale2)
            acc = classify(measured, mode)
            if _RANK[acc.status] > _RANK[worst[1].status]:
                worst = measured, replace(acc, message=f"call {i} of {times} after the "
                                                       f"judged two: {acc.message}")
            last = out.clone()
        if time.perf_counter() - started > seconds:
            break
    return worst


def _tried(judge: Callable[[], tuple]) -> tuple:
    """`judge()`'s (Errors, Accuracy), or (None, what it raised)."""
    try:
        return judge()
    except STOPS:
        raise
    except BaseException as e:
        return None, e


def _worse(results: dict, name: str, measured, acc, when: str) -> None:
    """The provider's verdict replaced by `acc` where that is worse (or a raise), said to
    be `when`."""
    before = results[name]
    if before.accuracy == FAIL:
        return
    if isinstance(acc, BaseException):
        results[name] = _failed_late(before, f"{when}: {type(acc).__name__}: {acc}"[:300])
    elif _RANK[acc.status] > _RANK[before.accuracy]:
        results[name] = replace(before, accuracy=acc.status, error=acc.error,
                                message=f"{when}: {acc.message}",
                                excess=measured.excess, block_excess=measured.block_excess,
                                element=measured.element)


def _failed_late(before: ProviderResult, message: str) -> ProviderResult:
    """A failed verdict after timing: its first check's figures are not of these calls."""
    return replace(before, accuracy=FAIL, error=None, excess=None, block_excess=None,
                   element=None, message=message)


def failed(name: str, e: BaseException, when: str = "") -> ProviderResult:
    return ProviderResult(name, FAIL, message=f"{when}{type(e).__name__}: {e}"[:300])
