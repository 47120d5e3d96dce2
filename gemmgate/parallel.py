"""Spread a run over several devices: one worker process per device (`--devices 0,1`).

Work items (mode, case) go to a process pool whose workers each pin one device at start
(spawned processes: no CUDA context is inherited). Items are handed out one at a time, so
a slow device takes fewer of them; results come back in the original order. On the CPU
the "devices" are just worker processes (used to test the split without a GPU).
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed

from gemmgate.chips import Chip
from gemmgate.precision import PrecisionMode
from gemmgate.shapes import Case
from gemmgate.timing import TimingPolicy
from gemmgate.tuning import TuningSetup

_DEVICE: tuple[str, int] = ("cpu", 0)


def parse_devices(text: str | None) -> tuple[int, ...]:
    if not text:
        return (0,)
    try:
        ids = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise ValueError(f"--devices takes comma-separated device numbers, got {text!r}") \
            from None
    if not ids or min(ids) < 0 or len(set(ids)) != len(ids):
        raise ValueError(f"--devices needs distinct non-negative numbers, got {text!r}")
    return ids


def check_devices(ids: Sequence[int], device_type: str) -> None:
    if device_type == "cpu":
        return
    import torch

    n = torch.cuda.device_count()
    bad = [i for i in ids if i >= n]
    if bad:
        raise ValueError(f"--devices {','.join(map(str, bad))}: only {n} GPU(s) present")


def _init(counter, devices: Sequence[int], device_type: str, tuning_setup,
          reference: str | None) -> None:
    global _DEVICE
    from gemmgate import tuning
    from gemmgate.providers import use_reference

    tuning.configure(tuning_setup)
    use_reference(reference)
    with counter.get_lock():
        slot = counter.value
        counter.value += 1
    index = devices[slot % len(devices)]
    if device_type == "cpu":
        _DEVICE = ("cpu", index)
        return
    import torch

    torch.cuda.set_device(index)
    _DEVICE = (f"cuda:{index}", index)


def _item(chip: Chip, mode: PrecisionMode, case: Case, policy: TimingPolicy,
          slowdown: float):
    from gemmgate.precision import vendor_flags
    from gemmgate.run import run_case

    device, index = _DEVICE
    with vendor_flags(mode):
        return run_case(chip, mode, case, policy, device, index, slowdown)


def run_parallel(chip: Chip, modes: Sequence[PrecisionMode], cases: Sequence[Case],
                 policy: TimingPolicy, devices: Sequence[int],
                 on_case: Callable[[str], None] | None = None, slowdown: float = 0.0,
                 tuning_setup=None, reference: str | None = None):
    for m in modes:
        chip.require_mode(m.name)
    items = [(m, c) for m in modes for c in cases]
    ctx = mp.get_context("spawn")
    counter = ctx.Value("i", 0)
    results = [None] * len(items)
    with ProcessPoolExecutor(len(devices), mp_context=ctx, initializer=_init,
                             initargs=(counter, tuple(devices), chip.device_type,
                                       tuning_setup or TuningSetup(chip.id),
                                       reference)) as pool:
        futures = {pool.submit(_item, chip, m, c, policy, slowdown): i
                   for i, (m, c) in enumerate(items)}
        for fut in as_completed(futures):
            i = futures[fut]
            results[i] = fut.result()
            if on_case:
                on_case(f"{items[i][0].name} {items[i][1].id}")
    return results
