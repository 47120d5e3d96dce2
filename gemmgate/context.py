"""The run context: everything that decides what a run measures and how, built once from
the user's choices and passed explicitly to the one place that runs a case
(gemmgate/run.py). It is a frozen dataclass of plain values, so it pickles: `--devices`
workers and the fresh processes of `baseline calibrate` get the very same object.

`make_context` validates every choice before any work (ValueError: exit 2). The Triton
interpreter is switched on here when the chip is the CPU, before `kernels` is first
imported: TRITON_INTERPRET is read when a kernel is decorated.

Providers (`--providers`): "triton" and "vendor" always (the gate compares them), then
any of "inductor" and `module:function` paths, in the order given. A path is imported
here, so a bad one is exit 2 before any work; the Runner imports it again by name.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from gemmgate import env, interpreter
from gemmgate.chips import Chip, Selection, select_chip
from gemmgate.precision import PrecisionMode, get_mode, parse_modes
from gemmgate.results import GATED  # always run: the gate compares these two
from gemmgate.shapes import Case, check_fits, resolve
from gemmgate.stats import MAX_BLOCK
from gemmgate.timing_policy import TimingPolicy, cpu_policy
from gemmgate.tuning import TuningSetup

KNOWN_PROVIDERS = GATED + ("inductor", "vendor_fast")   # besides `module:function` paths
COPIES = ("kept", "per-call")             # --copies


class MeasurementError(RuntimeError):
    """The run could not be measured to its end: a worker process died, a calibration
    run failed. `gemmgate` exits 3 with the message, never 1 (a regression's code, which
    the nightly answers with a bisect) nor 2 (bad input)."""


# A time limit's largest (--case-timeout, trials --deadline): ~31 years. Past threading's
# TIMEOUT_MAX a wait overflows, and past a C int the case alarm's signal.alarm raised
# OverflowError, a traceback and exit 1 (5e9 s; a review).
MAX_LIMIT_S = 1e9

@dataclass(frozen=True)
class RunContext:
    selection: Selection
    modes: tuple[PrecisionMode, ...]
    shapes_label: str
    cases: tuple[Case, ...]
    policy: TimingPolicy
    device: str                          # "cuda:0" or "cpu": where this process measures
    devices: tuple[int, ...] = (0,)      # all devices of the run (--devices)
    tuning: TuningSetup = field(default_factory=TuningSetup)
    reference: str | None = None         # commit whose kernels/ is timed beside (A/B)
    repo: str = "."                      # the git repository the reference comes from
    slowdown: float = 0.0                # validation only: injected extra Triton time
    providers: tuple[str, ...] = GATED   # triton, vendor, then extras (--providers)
    # `--copies per-call`: the kernel makes its operand copies on every call, as a library
    # caller whose operands change every call (no `cache_copies`), and fp8's vendor its
    # operands' layout (providers.vendor_provider); kept (default): once a
    # case, as the tool's figures and baselines are measured
    keep_copies: bool = True
    case_timeout_s: float = 0.0          # --case-timeout: a case's limit (0: none; deadline.py)
    # the (mode name, case) pairs to run, where not every mode's every case: a check of a
    # baseline's own cases, each in the modes the baseline holds it in (a case added in
    # fp16 alone was run in every mode and listed as new; a review); None: all
    only: frozenset[tuple[str, Case]] | None = None

    def __post_init__(self) -> None:
        if not self.modes:
            raise ValueError("no precision mode to run")
        if not 0 <= self.case_timeout_s <= MAX_LIMIT_S:
            raise ValueError(f"--case-timeout {self.case_timeout_s}: give seconds >= 0 and "
                             f"up to {MAX_LIMIT_S:.0e} (0: no limit)")
        if self.providers[:2] != GATED:
            raise ValueError(f"providers must start with triton,vendor, got {self.providers}")
        if not 0 <= self.slowdown <= 10:
            raise ValueError(f"--inject-slowdown must be between 0 and 10, got {self.slowdown}")

    @property
    def chip(self) -> Chip:
        return self.selection.chip

    @property
    def device_index(self) -> int:
        return int(self.device.partition(":")[2] or 0)

    @property
    def items(self) -> list[tuple[PrecisionMode, Case]]:
        """Every (mode, case) of the run (of `only`, where set), modes in canonical order."""
        return [(m, c) for m in self.modes for c in self.cases
                if self.only is None or (m.name, c) in self.only]

    def on_device(self, index: int) -> RunContext:
        """This context for a worker that measures on device `index`."""
        if self.chip.device_type == "cpu":
            return self
        return replace(self, device=f"cuda:{index}")

    def with_cases(self, items: Sequence[tuple[PrecisionMode, Case]]) -> RunContext:
        """A context for some of this run's (mode, case) pairs (e.g. a re-measure)."""
        modes = tuple(m for m in self.modes if any(m == x for x, _ in items))
        cases = tuple(dict.fromkeys(c for _, c in items))
        return replace(self, modes=modes or self.modes, cases=cases)


def parse_devices(text: str | None) -> tuple[int, ...]:
    if text is None:
        return (0,)
    parts = text.split(",")
    if len(parts) > 1 and not parts[-1].strip():   # a trailing comma, as --modes takes one
        parts.pop()
    # ASCII digits only, as shapes and --values take them (int() took '١' as 1 and '1_0'
    # as 10; a review)
    if not all(t.strip().isascii() and t.strip().isdigit() for t in parts):
        raise ValueError(f"--devices takes comma-separated device numbers, got {text!r}")
    ids = tuple(int(t) for t in parts)
    if not ids or min(ids) < 0 or len(set(ids)) != len(ids):
        raise ValueError(f"--devices needs distinct non-negative numbers, got {text!r}")
    return ids


def first_device(args) -> int:
    """The first of a command's `--devices` (0 where it has none): the device whose chip
    the command's baseline and tuning table are (`select_chip`'s `device`)."""
    return parse_devices(getattr(args, "devices", None))[0]


def check_devices(ids: Sequence[int], device_type: str) -> None:
    if device_type == "cpu":
        if max(ids) >= (os.cpu_count() or 1) * 4:
            raise ValueError(f"--devices {max(ids)}: on the CPU a device is a worker process; "
                             "use small numbers")
        return
    import torch

    n = torch.cuda.device_count()
    bad = [i for i in ids if i >= n]
    if bad:
        raise ValueError(f"--devices {','.join(map(str, bad))}: only {n} GPU(s) present "
                         f"(valid: {','.join(map(str, range(n))) or 'none'})")
    # one run is one chip: its profile, baseline and tuning table are the first device's
    kinds = {i: _kind(torch, i) for i in ids} if len(ids) > 1 else {}
    if len({k for k in kinds.values() if k is not None}) > 1:
        raise ValueError("--devices " + ",".join(map(str, ids)) + ": the devices differ ("
                         + "; ".join(f"{i}: {k[0]!r}, {k[1]} SMs" for i, k in kinds.items()
                                     if k is not None)
                         + "): one run measures one chip; run each kind on its own")


def _kind(torch, index: int) -> tuple[str, int] | None:
    """A GPU's name and SMs, None where torch cannot say."""
    from gemmgate.chips import device_units

    try:
        return torch.cuda.get_device_name(index), device_units(torch, index)
    except Exception:  # noqa: BLE001 - a best-effort query (a CPU build asserts)
        return None


def load_function(path: str):
    """The function a `module:function` provider names; ValueError naming the path when
    it cannot be imported or is not callable. The current directory is searched last,
    as `python -m` would, so a team's own module is found without installing it."""
    module, _, attr = path.partition(":")
    if not module or not attr:
        raise ValueError(f"--providers {path!r}: a custom provider is module:function")
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    try:
        fn = importlib.import_module(module)
        for part in attr.split("."):
            fn = getattr(fn, part)
    except KeyboardInterrupt:   # (a stop: 130)
        raise
    except BaseException as e:  # ImportError, AttributeError, the module's own exit or its
        # own BaseException (which was a traceback and exit 1, the regression code, as a
        # provider's call raising one was before it failed the case: a review)
        raise ValueError(f"--providers {path}: cannot import it "
                         f"({type(e).__name__}: {e})") from None
    if not callable(fn):
        raise ValueError(f"--providers {path}: {type(fn).__name__} is not callable")
    return fn


def check_signature(path: str, fn, scaled: bool) -> None:
    """ValueError naming the path where `fn` cannot be called as the harness calls a
    custom provider: `fn(a, b, precision=..., out=...)`, plus `scale_a=`, `scale_b=` for
    a scaled mode (fp8). Found here, not as a failure of every case (exit 1, which says
    the kernel is wrong)."""
    import inspect

    kw = dict(precision=None, out=None, **(dict(scale_a=None, scale_b=None) if scaled else {}))
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):   # a builtin (torch:matmul) was called as it is and
        raise ValueError(              # failed every case, exit 1: the kernel "wrong"
            f"--providers {path}: its signature cannot be read (a builtin?), so the "
            f"harness cannot check it takes f(a, b, {', '.join(f'{k}=...' for k in kw)}): "
            "wrap it in a Python function with the kernels.matmul contract") from None
    try:
        sig.bind(None, None, **kw)
    except TypeError as e:
        raise ValueError(f"--providers {path}: {fn.__name__}{sig} cannot be called as "
                         f"f(a, b, {', '.join(f'{k}=...' for k in kw)}) ({e}): the "
                         "kernels.matmul contract") from None


def parse_providers(text: str | None, scaled: bool = False) -> tuple[str, ...]:
    """'triton,vendor,inductor' -> ("triton", "vendor", "inductor"): triton and vendor
    first whatever the order given, then the extras in order, duplicates dropped.
    `scaled`: a mode of the run takes scales (fp8), which a custom provider must take."""
    if text is None:
        return GATED
    names = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    for n in names:
        if ":" in n:
            check_signature(n, load_function(n), scaled)
        elif n not in KNOWN_PROVIDERS:
            raise ValueError(f"unknown provider {n!r}; known providers: "
                             f"{', '.join(KNOWN_PROVIDERS)}, or a module:function path")
    missing = [n for n in GATED if n not in names]
    if missing:
        raise ValueError(f"--providers needs {' and '.join(missing)} (the gate compares "
                         f"triton with vendor); e.g. --providers triton,vendor,inductor")
    return GATED + tuple(n for n in names if n not in GATED)


def _bytes(dtype_name: str) -> int:
    return 1 if dtype_name.startswith("float8") else 4 if dtype_name == "float32" else 2


def _check_memory(cases: Sequence[Case], modes: Sequence[PrecisionMode], device: str) -> None:
    """Every case fits the device's free memory (host RAM on the CPU), before any work."""
    if device == "cpu":
        limit, where = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "of host RAM"
    else:
        free = env.free_memory(int(device.partition(":")[2] or 0))
        if free is None:
            import torch

            free = torch.cuda.mem_get_info(device)[0]
        limit, where = free, f"free on {device}"
    for m in modes:
        check_fits(cases, _bytes(m.input_dtype), _bytes(m.output_dtype), limit, where)


def make_context(chip: str | None = None, shapes: str | None = None, modes: str | None = None,
                 timing: str | None = None, budget_s: float | None = None,
                 devices: str | None = None, pins_from: str | None = None,
                 retune: bool = False, block: int | None = None,
                 reference: str | None = None, slowdown: float = 0.0,
                 cases: Sequence[Case] | None = None,
                 cases_label: str = "named cases",
                 force: Sequence[tuple[str, object]] = (),
                 providers: str | None = None, copies: str = "kept",
                 case_timeout: float = 0.0) -> RunContext:
    """Validate every choice up front (ValueError on bad input, before any work).
    `cases` (e.g. bisect's named cases) replaces `shapes`. `force`: (field, value) pairs
    that override the kernel's own tile (`gemmgate sweep`; the kernel's TileConfig
    validates the values when the tile is made). `providers`: --providers, as text.
    `copies`: --copies, "kept" or "per-call" (`RunContext.keep_copies`). `case_timeout`:
    seconds a case may take before the run stops (0: no limit; gemmgate/deadline.py)."""
    if copies not in COPIES:
        raise ValueError(f"--copies {copies!r}: give one of {', '.join(COPIES)}")
    device_ids = parse_devices(devices)
    sel = select_chip(chip, device_ids[0])
    c = sel.chip
    check_devices(device_ids, c.device_type)
    if modes is not None and not modes.strip(", "):
        raise ValueError(f"--modes {modes!r} names no mode; give e.g. --modes bf16,fp8")
    mode_list = parse_modes(modes) if modes else tuple(get_mode(m) for m in c.modes)
    for m in mode_list:
        c.require_mode(m.name)
    if cases is not None:
        label, cases = cases_label, tuple(dict.fromkeys(cases))
        if not cases:
            raise ValueError("no cases to run")
    else:
        if shapes is not None and not str(shapes).strip():
            raise ValueError("--shapes is empty: give a set name, a shape file or shapes")
        label, cases = resolve(shapes or ("smoke" if c.device_type == "cpu" else "pr"))
        # each case once: a case listed twice would be measured twice, and a baseline
        # would count its two medians as two runs (process noise from one process)
        cases = tuple(dict.fromkeys(cases))
    if c.device_type == "cpu":
        if retune:
            raise ValueError("--retune needs a GPU: on the CPU the Triton interpreter runs "
                             "one fixed tile (kernels.configs.INTERPRETER_CONFIG), so there is "
                             "nothing to tune")
        if timing not in (None, "wall"):
            raise ValueError(f"--timing {timing} needs a GPU; the CPU path times wall clock")
        interpreter.enable()
        policy, device = cpu_policy(), "cpu"
    else:
        policy, device = TimingPolicy(method=timing or "graph"), f"cuda:{device_ids[0]}"
    if budget_s is not None:
        if not budget_s > 0:
            raise ValueError(f"--budget must be > 0 seconds, got {budget_s}")
        policy = replace(policy, budget_s=budget_s)
    if block is not None:
        if not 1 <= block <= MAX_BLOCK:
            raise ValueError(f"--block must be 1 to {MAX_BLOCK}, got {block}")
        policy = replace(policy, block=block)
    # every device a case may run on (`--devices 0,1` asked only cuda:0; a review)
    for d in ("cpu",) if device == "cpu" else (f"cuda:{i}" for i in device_ids):
        _check_memory(cases, mode_list, d)
    # after TRITON_INTERPRET is set: a custom provider's module may import `kernels`
    provider_names = parse_providers(providers, any(m.scaled for m in mode_list))
    force = tuple(force)
    if not all(isinstance(f, tuple) and len(f) == 2 and isinstance(f[0], str) for f in force):
        raise ValueError(f"force takes (field, value) pairs, got {force!r}")
    tuning = TuningSetup(c.id, pins_from=str(pins_from) if pins_from else None, retune=retune,
                         force=force)
    return RunContext(sel, mode_list, label, cases, policy, device, device_ids, tuning,
                      reference=reference, slowdown=slowdown, providers=provider_names,
                      keep_copies=copies == "kept", case_timeout_s=case_timeout)
