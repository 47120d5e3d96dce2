"""Run cases: check accuracy, then time Triton against the vendor, per precision mode.

For each case: fresh seeded inputs in the case's layout, a float64 reference, each
provider's output poisoned with NaN and recomputed (so unwritten elements fail), the
error classified (pass / fail / downgraded), then interleaved timing of every provider
that could run, and GPU telemetry. The vendor's math flags are pinned for the whole mode.
"""

from __future__ import annotations

import math
import os
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from gemmgate import stats
from gemmgate.accuracy import FAIL, PASS, Accuracy, classify, relative_error
from gemmgate.chips import Chip
from gemmgate.precision import PrecisionMode, vendor_flags
from gemmgate.shapes import Case
from gemmgate.timing import TimingPolicy, measure

PROVIDER_NAMES = ("triton", "vendor")
REFERENCE = "reference"   # the kernel at another commit, timed beside triton (A/B)
UNSUPPORTED = "unsupported"

@dataclass(frozen=True)
class ProviderResult:
    name: str
    accuracy: str                        # pass | fail | downgraded | unsupported
    error: float | None = None
    message: str = ""
    samples_ms: tuple[float, ...] = ()
    tflops: float | None = None

    @property
    def median_ms(self) -> float | None:
        return stats.median(self.samples_ms) if self.samples_ms else None

    def to_json(self) -> dict:
        d = {"accuracy": self.accuracy, "error": _num(self.error), "message": self.message,
             "median_ms": self.median_ms, "tflops": self.tflops, "n": len(self.samples_ms),
             "samples_ms": list(self.samples_ms)}
        d["quantiles_ms"] = stats.quantiles(self.samples_ms) if self.samples_ms else {}
        return d

@dataclass(frozen=True)
class CaseResult:
    mode: str
    case: Case
    providers: dict[str, ProviderResult]
    peak_tflops: float | None = None
    telemetry: dict = field(default_factory=dict)
    worker: str = ""                     # device and process that measured it

    @property
    def ratio_samples(self) -> tuple[float, ...]:
        """Per-round speed ratios vendor_time / triton_time (> 1: Triton faster)."""
        t, v = self.providers["triton"].samples_ms, self.providers["vendor"].samples_ms
        return tuple(vi / ti for ti, vi in zip(t, v) if ti > 0)

    @property
    def ab_samples(self) -> tuple[float, ...]:
        """Per-round reference_time / triton_time (A/B: > 1 means the current kernel is
        faster than the reference commit's); empty without a reference."""
        ref = self.providers.get(REFERENCE)
        if ref is None:
            return ()
        t = self.providers["triton"].samples_ms
        return tuple(ri / ti for ti, ri in zip(t, ref.samples_ms) if ti > 0)

    @property
    def ratio(self) -> float | None:
        t, v = self.providers["triton"].median_ms, self.providers["vendor"].median_ms
        return v / t if t and v else None

    @property
    def pct_peak(self) -> float | None:
        f = self.providers["triton"].tflops
        return 100.0 * f / self.peak_tflops if f and self.peak_tflops else None

    @property
    def passed(self) -> bool:
        judged = (p for n, p in self.providers.items() if n != REFERENCE)  # not under test
        return all(p.accuracy in (PASS, UNSUPPORTED) for p in judged) \
            and self.providers["triton"].accuracy == PASS

    @property
    def key(self) -> str:
        return f"{self.mode}-{self.case.id}"

    def to_json(self) -> dict:
        return {"id": self.key, "mode": self.mode, "m": self.case.m, "n": self.case.n,
                "k": self.case.k, "layout": self.case.layout_id, "passed": self.passed,
                "ratio": self.ratio, "pct_peak": self.pct_peak,
                "ratio_samples": list(self.ratio_samples),
                "providers": {k: p.to_json() for k, p in self.providers.items()},
                "telemetry": self.telemetry, "worker": self.worker}

def _num(x: float | None):
    return None if x is None else (x if math.isfinite(x) else str(x))

def case_seed(mode: str, case: Case) -> int:
    return zlib.crc32(f"{mode}/{case.id}".encode())

def _check(name: str, inp, mode: PrecisionMode, ref):
    """Build the provider, run it on a poisoned output, classify its error."""
    import torch

    from gemmgate.providers import Unsupported, build

    try:
        call = build(name, inp, mode)
        out = call()
        if out.is_floating_point() and out.numel():
            out.fill_(math.nan)  # poison: elements the next call does not write stay NaN
        out = call()
        if out.is_cuda:
            torch.cuda.synchronize()
    except Unsupported as e:
        return None, ProviderResult(name, UNSUPPORTED, message=str(e))
    except Exception as e:  # a compile or launch error fails this case, not the run
        return None, ProviderResult(name, FAIL, message=f"{type(e).__name__}: {e}"[:300])
    acc: Accuracy = classify(relative_error(out, ref), mode)
    return call, ProviderResult(name, acc.status, acc.error, acc.message)


def _inject(calls: dict, slowdown: float, policy: TimingPolicy, flush: int,
            device: str) -> float:
    """Wrap the Triton call with `slowdown` x its own median time of extra device work.

    On a GPU it is a closed loop: the spin is sized, measured against the plain call,
    and rescaled, so the injected fraction holds whatever the clock did while sizing it.
    On the CPU the host busy-waits wall-clock time: sized once. Returns the fraction
    measured in the last sizing step (a spin kernel costs ~1 us at least, so on a 10 us
    kernel 3% asked is ~10-15% got)."""
    from gemmgate.slowdown import slowed

    quick = replace(policy, min_rounds=10, max_rounds=30, budget_s=0.2, target_rel_ci=0.003,
                    warmup_s=0.02)
    plain = calls["triton"]

    def medians(fns: dict) -> dict:
        got = measure(fns, quick, flush_bytes=flush, device=device)
        return {k: stats.median(v) for k, v in got.items()}

    extra = slowdown * medians({"plain": plain})["plain"]
    achieved = slowdown
    for _ in range(0 if device == "cpu" else 2):
        m = medians({"plain": plain, "wrapped": slowed(plain, extra, device)})
        achieved = m["wrapped"] / m["plain"] - 1
        if abs(achieved - slowdown) <= 0.1 * slowdown:
            break
        if achieved > 0:
            extra *= slowdown / achieved
    calls["triton"] = slowed(plain, extra, device)
    return achieved if device != "cpu" else slowdown


def run_case(chip: Chip, mode: PrecisionMode, case: Case, policy: TimingPolicy,
             device: str, device_index: int = 0, slowdown: float = 0.0) -> CaseResult:
    from gemmgate import tuning
    from gemmgate.env import telemetry
    from gemmgate.inputs import make_inputs
    from gemmgate.providers import PROVIDERS

    inp = make_inputs(case, mode, device, case_seed(mode.name, case), chip.fp8_dtype)
    ref = inp.reference()
    calls, results, chosen = {}, {}, {}
    for name in PROVIDER_NAMES + ((REFERENCE,) if REFERENCE in PROVIDERS else ()):
        tuning.forget_last()
        call, res = _check(name, inp, mode, ref)
        results[name] = res
        if call is not None:
            calls[name] = call
        chosen[name] = tuning.last_choice()  # the tile a Triton kernel ran (None: vendor)
    choice, ref_choice = chosen["triton"], chosen.get(REFERENCE)
    del ref
    flush = 2 * chip.llc_bytes
    injected = None
    if slowdown > 0 and "triton" in calls:
        injected = _inject(calls, slowdown, policy, flush, device)
    samples = measure(calls, policy, flush_bytes=flush, device=device)
    for name, ts in samples.items():
        med = stats.median(ts)
        tf = case.flops / (med * 1e-3) / 1e12 if case.flops and med > 0 else None
        results[name] = replace(results[name], samples_ms=tuple(ts), tflops=tf)
    tele = telemetry(device_index) if device != "cpu" else {}
    if injected is not None:
        tele["injected_slowdown"] = {"asked": slowdown, "sized": injected}
    if choice is not None:  # which tile ran, and whether it was pinned, cached or tuned
        tele["tuning"] = choice.to_json()
        tele["triton_config"] = tuning.config_name(choice.config)
    if ref_choice is not None:  # a different tile explains an A/B change
        tele["reference_config"] = tuning.config_name(ref_choice.config)
    return CaseResult(mode.name, case, results, chip.peak(mode.name), tele,
                      f"{device}/pid{os.getpid()}")


def run_cases(chip: Chip, modes: Sequence[PrecisionMode], cases: Sequence[Case],
              policy: TimingPolicy, device: str, device_index: int = 0,
              on_case: Callable[[str], None] | None = None,
              slowdown: float = 0.0, tuning_setup=None,
              reference: str | None = None) -> list[CaseResult]:
    """Every case in every mode; `on_case(label)` is called after each (progress bars).
    `tuning_setup` (gemmgate.tuning.TuningSetup): pinned and cached Triton tiles;
    `reference`: a commit whose kernel is timed beside the current one (A/B)."""
    from gemmgate import tuning
    from gemmgate.providers import use_reference

    tuning.configure(tuning_setup or tuning.TuningSetup(chip.id))
    use_reference(reference)
    out: list[CaseResult] = []
    for mode in modes:
        chip.require_mode(mode.name)
        with vendor_flags(mode):
            for case in cases:
                out.append(run_case(chip, mode, case, policy, device, device_index, slowdown))
                if on_case:
                    on_case(f"{mode.name} {case.id}")
    return out

def failures(results: Sequence[CaseResult]) -> list[CaseResult]:
    return [r for r in results if not r.passed]

def summary_by_mode(results: Sequence[CaseResult]) -> dict[str, dict]:
    """Geomean speed ratio and pass counts per mode."""
    by: dict[str, list[CaseResult]] = {}
    for r in results:
        by.setdefault(r.mode, []).append(r)
    out = {}
    for m, rs in by.items():
        g = stats.geomean([r.ratio for r in rs if r.ratio])
        out[m] = {"cases": len(rs), "passed": sum(r.passed for r in rs),
                  "geomean_ratio": None if math.isnan(g) else g}
    return out

__all__ = ["CaseResult", "ProviderResult", "run_cases", "run_case", "failures", "summary_by_mode"]
