"""Turning command-line choices into a run: chip, device, modes, shapes, timing policy.

Kept apart from cli.py (parsing and printing) and run.py (measuring). The Triton
interpreter is switched on here, before `kernels` is first imported, when the chip is
the CPU: TRITON_INTERPRET is read when a kernel is decorated.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from gemmgate.chips import Chip, Selection, select_chip
from gemmgate.precision import PrecisionMode, get_mode, parse_modes
from gemmgate.shapes import Case, resolve
from gemmgate.timing import TimingPolicy, cpu_policy
from gemmgate.tuning import TuningSetup

# Modes the interpreter computes wrongly (pinned by tests/kernels/test_interpreter_defects.py):
# they stay selectable on the CPU, but are not run by default.
INTERPRETER_DEFECTS = {"bf16": "tl.dot on bf16 inputs returns garbage in the interpreter"}


@dataclass(frozen=True)
class Session:
    selection: Selection
    modes: tuple[PrecisionMode, ...]
    shapes_label: str
    cases: tuple[Case, ...]
    policy: TimingPolicy
    device: str
    devices: tuple[int, ...] = (0,)
    tuning: TuningSetup = TuningSetup()

    @property
    def chip(self) -> Chip:
        return self.selection.chip


def default_modes(chip: Chip) -> tuple[str, ...]:
    if chip.device_type == "cpu":
        return tuple(m for m in chip.modes if m not in INTERPRETER_DEFECTS)
    return chip.modes


def make_session(chip: str | None = None, shapes: str | None = None, modes: str | None = None,
                 timing: str | None = None, budget_s: float | None = None,
                 devices: str | None = None, pins_from: str | None = None,
                 retune: bool = False, block: int | None = None) -> Session:
    """Validate every choice up front (ValueError on bad input, before any work)."""
    from gemmgate.parallel import check_devices, parse_devices

    sel = select_chip(chip)
    c = sel.chip
    device_ids = parse_devices(devices)
    check_devices(device_ids, c.device_type)
    mode_list = parse_modes(modes) if modes else tuple(get_mode(m) for m in default_modes(c))
    for m in mode_list:
        c.require_mode(m.name)
    label, cases = resolve(shapes or ("smoke" if c.device_type == "cpu" else "pr"))
    if c.device_type == "cpu":
        if timing not in (None, "wall"):
            raise ValueError(f"--timing {timing} needs a GPU; the CPU path times wall clock")
        os.environ["TRITON_INTERPRET"] = "1"
        policy = cpu_policy()
        device = "cpu"
    else:
        policy = TimingPolicy(method=timing or "graph")
        device = f"cuda:{device_ids[0]}"
    from dataclasses import replace

    if budget_s is not None:
        policy = replace(policy, budget_s=budget_s)
    if block is not None:
        policy = replace(policy, block=block)
    tuning = TuningSetup(c.id, pins_from=str(pins_from) if pins_from else None, retune=retune)
    return Session(sel, mode_list, label, cases, policy, device, device_ids, tuning)
