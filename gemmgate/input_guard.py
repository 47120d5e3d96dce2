"""Whether a provider wrote into a case's inputs (A, B, the scales), and the inputs made
again where one did (gemmgate/run.py calls it around each provider's checked calls and
its timing, gemmgate/judging.py around its calls judged after timing).

A write is told by a fingerprint of the inputs: each tensor's version counter (PyTorch's
in-place ops) and a float64 sum of its values (a raw kernel's stores). A counter that moved
with unmoved sums is compared bit for bit with the inputs made again (an in-place metadata
change, `unsqueeze_` then `squeeze_`, moves the counter alone and writes nothing; a swap of
two rows keeps the sum; a review). A raw store that keeps the sum is not seen.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from gemmgate.accuracy import FAIL
from gemmgate.context import MeasurementError
from gemmgate.results import ProviderResult
from gemmgate.stop_signal import STOPS


class InputGuard:
    """The inputs `inp` as last seen: `written()` tells whether they changed since, and
    makes them again in place where they did (`fresh()`: the case's inputs made anew; the
    calls built so far hold these tensors)."""

    def __init__(self, inp, fresh: Callable[[], object]) -> None:
        self.inp, self.fresh = inp, fresh
        self.seen = _fingerprint(inp)
        self.layout = _layout(inp)

    def written(self) -> bool:
        # an in-place change of an input's shape, strides or storage (`a.t_()`,
        # `b.unsqueeze_(0)`) is set back first: left, the inputs made again could not be
        # copied into A (the case "could not be measured", exit 3), or B stayed 3-D and
        # the next provider, Triton, failed on it (exit 1; a review)
        moved = _moved(_layout(self.inp), self.layout)
        if moved:
            with torch.no_grad():
                for t, (storage, size, stride, offset) in zip(_tensors(self.inp),
                                                              self.layout):
                    t.set_(storage, offset, size, stride)
        now = _fingerprint(self.inp)
        if now == self.seen and not moved:
            return False
        if not moved and [s for _, s in now] == [s for _, s in self.seen] and all(
                torch.equal(_bits(t), _bits(f))
                for t, f in zip(_tensors(self.inp), _tensors(self.fresh()))):
            self.seen = now   # a counter moved, nothing was written
            return False
        with torch.no_grad():
            for t, f in zip(_tensors(self.inp), _tensors(self.fresh())):
                t.copy_(f)
        self.seen = _fingerprint(self.inp)
        return True


def timed_again(guard: InputGuard, calls: dict, samples: dict, results: dict,
                measure_again: Callable[[dict], dict], what: str,
                ran: dict | None = None) -> dict:
    """The samples of a timing whose inputs a provider wrote into (on a later call than the
    two checked; every provider after it was timed on its garbage), `guard` having made
    them again: each provider timed (or failed while timed: one that wrote, then raised,
    left no samples; a review) called once, what its timed calls ran first (`ran`, from
    `measure`: under CUDA-graph timing its graph's replay; a graph alone that wrote was
    found by no one, and the whole case stopped: a review), and seen to leave them as
    they are; one that does not fails, "wrote into its inputs while timed", and the
    others are timed again without it (`measure_again`). MeasurementError (`what`: the
    case) where none is found, or the inputs change again: no figure of the case is of
    its inputs."""
    wrote = []
    for name, call in calls.items():
        for fn in dict.fromkeys(f for f in ((ran or {}).get(name), call) if f is not None):
            try:
                fn()
                if guard.inp.a.is_cuda:
                    torch.cuda.synchronize()
            except STOPS:
                raise
            except BaseException:   # noqa: BLE001 - its output is not judged here, its inputs are
                pass
            if guard.written():
                wrote.append(name)
                break
    if not wrote:
        raise MeasurementError(f"{what}: the inputs changed while timed, and no provider "
                               "wrote into them when called again alone: no figure is of "
                               "the case's inputs")
    for name in wrote:
        results[name] = ProviderResult(name, FAIL, message=(
            "wrote into its inputs (A, B or a scale) while timed: not timed, and the "
            "others were timed again on the inputs made again"))
    rest = {n: calls[n] for n in samples if n not in wrote}
    again = measure_again(rest) if rest else {}
    if guard.written():
        raise MeasurementError(f"{what}: the inputs changed again while timed without "
                               f"{', '.join(wrote)}: no figure is of the case's inputs")
    return again


def _tensors(inp) -> tuple:
    return tuple(t for t in (inp.a, inp.b, inp.scale_a, inp.scale_b) if t is not None)


def _layout(inp) -> tuple:
    """Each input's storage (held, to be set back), size, strides and offset."""
    return tuple((t.untyped_storage(), tuple(t.shape), t.stride(), t.storage_offset())
                 for t in _tensors(inp))


def _moved(now: tuple, was: tuple) -> bool:
    """Whether an input's layout differs (its storage compared by the memory it holds)."""
    return any(n[0].data_ptr() != w[0].data_ptr() or n[1:] != w[1:]
               for n, w in zip(now, was))


def _fingerprint(inp) -> tuple:
    """Each input's version counter and float64 sum."""
    out = []
    for t in _tensors(inp):
        try:
            total = t.sum(dtype=torch.float64)
        except (RuntimeError, TypeError):   # (a dtype sum does not take: fp8)
            total = t.double().sum()
        # (an inference tensor, made under torch.inference_mode, keeps no version counter:
        # a run under it failed every case once every case was fingerprinted; a review)
        out.append((None if t.is_inference() else t._version, total.item()))
    return tuple(out)


def _bits(t):
    """The tensor's elements as integers of their size: a bitwise comparison (NaN, -0)."""
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
                  [t.element_size()])
