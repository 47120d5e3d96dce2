"""`gemmgate sweep`: one case across the values of one tile parameter.

The seeds' "rise then collapse": more pipeline stages (or larger blocks) hide more memory
latency, until shared memory or registers run out, occupancy collapses or the config no
longer compiles. A sweep shows where that happens for one case on one chip.

How: for each value, a RunContext whose TuningSetup forces that one field
(`force=((param, value),)`: the kernel's own tile with that field replaced, see
gemmgate/tuning.py), and the case runs through the one run path, `Runner.run_case`, the
vendor timed beside it as in every run. A value whose tile is invalid (the kernel's
TileConfig raises ValueError), or that fails to compile or launch (out of shared
memory), is a failed point with its message; the sweep goes on.

The sweepable parameters are the integer fields of the kernel's own TileConfig, read at
run time (so split_k exists where the kernel has it); every input is validated before
anything is measured (ValueError: exit 2).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from gemmgate import stats
from gemmgate.context import MeasurementError, RunContext, make_context
from gemmgate.precision import PrecisionMode, get_mode
from gemmgate.results import CaseResult
from gemmgate.run import Runner, environment_of, own_kernels
from gemmgate.shapes import SHAPE_TEXT, Case
from gemmgate.tuning import LATER_FIELDS

SCHEMA = "gemmgate.sweep/1"
OK, FAILED, IGNORED = "ok", "failed", "ignored"
_POW2 = (16, 32, 64, 128, 256)
DEFAULT_VALUES: dict[str, tuple[int, ...]] = {
    "num_stages": (1, 2, 3, 4, 5, 6, 7), "num_warps": (2, 4, 8),
    "block_m": _POW2, "block_n": _POW2, "block_k": _POW2,
    "group_m": (1, 2, 4, 8, 16, 32), "split_k": (1, 2, 4, 8, 16),
    "occupancy": (1, 2),   # the TMA tile's programs per SM (kernels/tile.py)
}
CSV_COLUMNS = ("value", "status", "config", "triton_ms", "vendor_ms", "triton_tflops",
               "vendor_tflops", "ratio", "triton_error", "message")


def parse_values(text: str | None, param: str) -> tuple[int, ...]:
    """'1,2,3' -> (1, 2, 3): distinct positive integers; None: the parameter's defaults."""
    if text is None:
        if param not in DEFAULT_VALUES:
            raise ValueError(f"--param {param} has no default values; give --values, "
                             "e.g. --values 1,2,4")
        return DEFAULT_VALUES[param]
    parts = [t.strip() for t in text.split(",")]
    if not any(parts):
        raise ValueError(f"--values {text!r} names no value; give e.g. --values 1,2,3")
    if not all(parts):   # as --shapes refuses an empty item: a typo, not a value to skip
        raise ValueError(f"--values {text!r} has an empty item; give e.g. --values 1,2,3")
    bad = [t for t in parts if not (t.isascii() and t.isdigit()) or int(t) < 1]
    if bad:
        raise ValueError(f"--values takes comma-separated positive integers; "
                         f"bad: {', '.join(bad)}")
    values = tuple(int(t) for t in parts)
    if len(set(values)) != len(values):
        raise ValueError(f"--values {text!r} repeats a value")
    return values


def parse_shape(text: str, layout: str = "rr") -> Case:
    """'4096x4096x4096' (M x N x K, each >= 1) in the given layout."""
    got = re.fullmatch(rf"\s*{SHAPE_TEXT}\s*", text or "", re.I)
    if not got:
        raise ValueError(f"--shape {text!r}: give M x N x K, e.g. --shape 4096x4096x4096")
    m, n, k = (int(g) for g in got.groups())
    if min(m, n, k) < 1:
        raise ValueError(f"--shape {text!r}: a sweep needs M, N and K >= 1")
    return Case(m, n, k, layout.strip().lower())   # as --shapes and shape files read it


def sweepable(tile_class) -> tuple[str, ...]:
    """The integer fields of a kernel's TileConfig dataclass, in declaration order."""
    if not dataclasses.is_dataclass(tile_class):
        return ()
    return tuple(f.name for f in dataclasses.fields(tile_class) if f.type in (int, "int"))


def check_param(param: str, tile_class) -> None:
    """ValueError unless `param` is a sweepable field of the kernel's tile."""
    fields = sweepable(tile_class)
    if param in fields:
        return
    hint = " (this kernel's tile has no split-K field)" if param == "split_k" else ""
    raise ValueError(f"unknown --param {param!r}{hint}; this kernel's tile "
                     f"({getattr(tile_class, '__name__', 'TileConfig')}) takes: "
                     f"{', '.join(fields) or 'nothing'}")


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: the case, the mode, and one run context per value."""
    param: str
    values: tuple[int, ...]
    mode: PrecisionMode
    case: Case
    contexts: tuple[RunContext, ...]

    @property
    def chip(self) -> str:
        return self.contexts[0].chip.id


def plan(param: str, shape: str, mode: str, values: str | None = None, *,
         chip: str | None = None, layout: str = "rr", budget_s: float | None = None,
         timing: str | None = None, tile_class=None,
         case_timeout: float = 0.0) -> SweepSpec:
    """Validate everything before any measuring (ValueError: exit 2). `tile_class`: the
    kernel's TileConfig (default: this tree's kernels.TileConfig); `case_timeout`: each
    value's time limit (RunContext.case_timeout_s)."""
    param = (param or "").strip()
    if not param:
        raise ValueError("--param names no parameter; e.g. --param num_stages")
    if "," in (mode or ""):
        raise ValueError(f"--mode takes one precision mode, got {mode!r}")
    m = get_mode((mode or "").strip())
    case = parse_shape(shape, layout)
    if values is None and param not in DEFAULT_VALUES:
        # an unknown parameter is the fault to name, not its missing --values: the chip
        # and mode checked first, and on the CPU the interpreter on before kernels loads
        make_context(chip, modes=m.name, timing=timing, cases=(case,),
                     cases_label=f"sweep {param}")
        check_param(param, tile_class or _tile_class())
    vals = parse_values(values, param)
    ctxs = tuple(make_context(chip, modes=m.name, timing=timing, budget_s=budget_s,
                              cases=(case,), cases_label=f"sweep {param}",
                              force=((param, v),), case_timeout=case_timeout)
                 for v in vals)
    check_param(param, tile_class or _tile_class())
    return SweepSpec(param, vals, m, case, ctxs)


def _tile_class():
    return own_kernels().TileConfig  # after make_context: on the CPU it switched the
    # interpreter on


@dataclass(frozen=True)
class SweepPoint:
    value: int
    status: str                 # ok | failed | ignored (the kernel did not take the tile)
    config: str                 # the tile that ran, e.g. '64x64x32 g8 s3 w4'; '' if none
    message: str
    result: CaseResult

    def _provider(self, name: str):
        return self.result.providers.get(name)

    @property
    def triton_ms(self) -> float | None:
        return self._provider("triton").median_ms

    @property
    def vendor_ms(self) -> float | None:
        return self._provider("vendor").median_ms

    @property
    def triton_tflops(self) -> float | None:
        return self._provider("triton").tflops

    @property
    def vendor_tflops(self) -> float | None:
        return self._provider("vendor").tflops

    @property
    def ratio(self) -> float | None:
        """vendor time / Triton time (> 1: Triton faster)."""
        return self.result.ratio

    def to_json(self) -> dict:
        t = self._provider("triton")
        return {"value": self.value, "status": self.status, "config": self.config,
                "message": self.message, "triton_ms": self.triton_ms,
                "vendor_ms": self.vendor_ms, "triton_tflops": self.triton_tflops,
                "vendor_tflops": self.vendor_tflops, "ratio": self.ratio,
                "triton_error": _finite(t.error), "triton_accuracy": t.accuracy,
                "vendor_accuracy": self._provider("vendor").accuracy,
                "tuning": self.result.telemetry.get("tuning")}


def point_of(param: str, value: int, r: CaseResult, device: str) -> SweepPoint:
    """Classify one value's case result: failed (invalid tile, compile/launch error, wrong
    result), ignored (the kernel ran a tile without the forced value), or ok."""
    t = r.providers["triton"]
    tile = r.telemetry.get("tuning") or {}
    config = r.telemetry.get("triton_config", "")
    if t.accuracy != "pass":
        return SweepPoint(value, FAILED, config, t.message or t.accuracy, r)
    # (a field at its old default, e.g. occupancy 1, is left out of the stored tile)
    took = tile.get("source") == "forced" and \
        (tile.get("config") or {}).get(param, LATER_FIELDS.get(param)) == value
    if not took:
        why = ("the kernel did not ask its chooser for a tile" if not tile else
               f"the kernel ran {config or 'another tile'} ({tile.get('source')})")
        if device == "cpu" and not tile:
            why += " (on the CPU, kernels/ runs its fixed interpreter tile)"
        return SweepPoint(value, IGNORED, config, f"{param}={value} not applied: {why}", r)
    # taken as the tile, yet not what ran: the interpreter has no stages or warps, and a
    # K split into whole BLOCK_K ranges may make fewer of them than asked
    why = _not_run(param, value, (tile.get("config") or {}), r.case.k, device, r.mode)
    if why:
        return SweepPoint(value, IGNORED, config, f"{param}={value} not applied: {why}", r)
    return SweepPoint(value, OK, config, _ran_as(tile.get("config") or {}, device, r.mode), r)


def _ran_as(tile: dict, device: str, mode: str) -> str:
    """A note where the tile ran in another kernel than its variant's: a `tma_ws` tile the
    warp-specialized kernel does not take (4 warps, a 32-deep K block) launches its tma
    form (kernels/matmul.py `_recipe`), and the row named tma_ws beside the 8-warp value
    that did run warp-specialized: two kernels compared as one parameter (a review)."""
    if device == "cpu" or tile.get("variant") != "tma_ws" or _ws_stages(tile, mode) is not None:
        return ""
    from kernels import matmul_ws
    from kernels.tile import TileConfig

    try:
        plain = matmul_ws.fallback(TileConfig(**tile)).variant
    except (TypeError, ValueError):
        return ""
    return f"ran as {plain}: the warp-specialized kernel does not take this tile"


INTERPRETER_IGNORES = ("num_stages", "num_warps")   # the CPU's interpreter runs neither


def _not_run(param: str, value: int, tile: dict, k: int, device: str, mode: str = "") -> str:
    """Why a forced value the chooser handed back did not shape the launch, or ""."""
    if device == "cpu" and param in INTERPRETER_IGNORES:
        return "the Triton interpreter (CPU) runs no stages and no warps"
    variant = tile.get("variant", "tiled")
    if device != "cpu" and param == "occupancy" and mode == "fp32" \
            and variant in ("tma", "tma_hybrid", "tma_ws"):
        # (IEEE fp32 on the FMA units: kernels/matmul_tma.programs_per_sm, which the
        # warp-specialized tile's tma form and the hybrid's head launch through too; a GPU
        # sweep said "ok" for 1 and 2, both launched alike; a review)
        return ("IEEE fp32's persistent TMA grid runs as many programs per SM as shared "
                "memory holds, whatever the tile's occupancy")
    if device != "cpu" and param == "num_stages" and variant == "tma_ws":
        ran = _ws_stages(tile, mode)   # (a bf16 3072 x 3072 x 4096 sweep on an H200 said
        if ran is not None and ran != value:   # "ok" for 5, 6 and 7: each ran 4; a review)
            return (f"the warp-specialized kernel runs as many stages as shared memory "
                    f"holds: {ran}")
    if param == "split_k" and value > 1:
        from kernels.tile import cdiv, k_range  # the split-K launches' one rule

        ranges = cdiv(k, k_range(k, value, int(tile.get("block_k") or 1))) if k else 1
        if ranges < value:
            return (f"K={k} in whole BLOCK_K={tile.get('block_k')} blocks makes "
                    f"{ranges} range(s)")
    return ""


def _ws_stages(tile: dict, mode: str) -> int | None:
    """The stages kernels/matmul_ws.py launches a `tma_ws` tile with, where that kernel
    runs it (`ws_forms.fits`; else its tma form runs, at its own stages); None otherwise."""
    from kernels import ws_forms
    from kernels.tile import TileConfig

    try:
        cfg = TileConfig(**tile)
    except (TypeError, ValueError):
        return None
    elem = 1 if mode == "fp8" else 2
    return ws_forms.stages(cfg, elem) if ws_forms.fits(cfg, elem) else None


@dataclass(frozen=True)
class Sweep:
    spec: SweepSpec
    points: tuple[SweepPoint, ...]
    environment: dict

    @property
    def vendor_tflops(self) -> float | None:
        """The vendor's median TFLOP/s over the points (it is timed beside every value)."""
        xs = [p.vendor_tflops for p in self.points if p.vendor_tflops]
        return stats.median(xs) if xs else None

    @property
    def best(self) -> SweepPoint | None:
        ok = [p for p in self.points if p.status == OK and p.triton_tflops]
        return max(ok, key=lambda p: p.triton_tflops) if ok else None

    def to_json(self) -> dict:
        s, best = self.spec, self.best
        return {"schema": SCHEMA, "environment": self.environment, "chip": s.chip,
                "mode": s.mode.name, "case": {"id": s.case.id, "m": s.case.m, "n": s.case.n,
                                              "k": s.case.k, "layout": s.case.layout_id},
                "param": s.param, "values": list(s.values),
                "vendor_tflops": self.vendor_tflops,
                "best": best.value if best else None,
                "points": [p.to_json() for p in self.points]}

    def csv_text(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow((self.spec.param,) + CSV_COLUMNS[1:])
        for p in self.points:
            d = p.to_json()
            w.writerow(["" if d[c] is None else d[c] for c in CSV_COLUMNS])
        return buf.getvalue()


def run_sweep(spec: SweepSpec, triton=None,
              on_point: Callable[[SweepPoint], None] | None = None) -> Sweep:
    """Run the case once per value through Runner.run_case; a fresh Runner (and so a
    fresh Tuner) per value. `triton`: a kernels-like package (tests substitute one)."""
    points = []
    for value, ctx in zip(spec.values, spec.contexts):
        try:
            r = Runner(ctx, triton=triton).run_case(spec.mode, spec.case)
        except MeasurementError as e:   # (past --case-timeout: the value was not said)
            raise MeasurementError(f"{spec.param}={value}: {e} ({len(points)} value(s) "
                                   "measured before it)") from e
        point = point_of(spec.param, value, r, ctx.device)
        points.append(point)
        if on_point is not None:
            on_point(point)
    return Sweep(spec, tuple(points), environment_of(spec.contexts[0]))


def _finite(x: float | None):
    return x if x is None or math.isfinite(x) else str(x)
