"""The one place a case is measured: check accuracy, then time Triton against the vendor.

Every entry point (the CLI, `--devices` workers, the gate's re-measure, `baseline
calibrate`'s fresh processes, the asv suite, the pytest-benchmark tests, trials) builds
a RunContext (gemmgate/context.py) and calls `run_cases(ctx)` or `Runner(ctx).run_case`.

For each case: fresh seeded inputs in the case's layout, a float64 reference, each
provider's output poisoned with NaN and recomputed (so unwritten elements fail), the
error classified (pass / fail / downgraded), then interleaved timing of every provider
that could run, then each timed provider's error classified again, on a poisoned output:
its timed CUDA graph replayed, then the provider called (gemmgate/judging.py), and GPU
telemetry. The vendor's math flags are
pinned for the case.

A Runner is one process's live state for a context: the tuner (pins, cache) and the
kernel packages it calls (this tree's `kernels`, and the A/B reference commit's). It is
built from the context, never read from module globals.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import uuid
import zlib
from collections.abc import Callable
from dataclasses import replace

import torch

from gemmgate import reference, stats
from gemmgate.accuracy import FAIL, past_range
from gemmgate.autotune_pick import Picks
from gemmgate.context import MeasurementError, RunContext, load_function
from gemmgate.deadline import run_within
from gemmgate.env import environment, telemetry, tuning_table
from gemmgate.input_guard import InputGuard, timed_again
from gemmgate.inputs import make_inputs
from gemmgate.judging import after_timing, check, failed, judge_kept_less
from gemmgate.precision import PrecisionMode, flags_changed, math_flags, vendor_flags
from gemmgate.providers import (
    Builder,
    inductor_provider,
    kernel_call,
    takes_choose,
    vendor_fast_provider,
    vendor_provider,
)
from gemmgate.results import REFERENCE, CaseResult, ProviderResult
from gemmgate.shapes import Case
from gemmgate.slowdown import slowed
from gemmgate.stop_signal import STOPS
from gemmgate.timing import ProviderError, measure
from gemmgate.timing_policy import TimingPolicy
from gemmgate.tuning import Tuner


def case_seed(mode: str, case: Case) -> int:
    return zlib.crc32(f"{mode}/{case.id}".encode())


def load_reference(ctx: RunContext):
    """The reference commit's kernels package, or None without --ab-ref. ValueError
    (exit 2) when it cannot be used: it must import alone and take a `choose` hook."""
    if ctx.reference is None:
        return None
    _, pkg = reference.load(ctx.reference, ctx.repo)
    if "choose" not in inspect.signature(pkg.matmul).parameters:
        raise ValueError(f"kernels/ at {ctx.reference[:12]} has no choose= hook (it predates "
                         "the harness-free kernel API); pick a later commit to compare with")
    return pkg


def own_kernels():
    """This tree's `kernels` package. ValueError (exit 2) when it does not import: a PR's
    syntax error was a traceback and exit 1 (the regression code, which the nightly
    answers with a bisect), and under --devices "a worker died", exit 3 (a review).
    Imported on use, not at the top: on the CPU, make_context switched the Triton
    interpreter on, and TRITON_INTERPRET is read when the kernel is decorated."""
    try:
        import kernels
    except KeyboardInterrupt:   # (a stop: 130)
        raise
    except BaseException as e:  # noqa: BLE001 - whatever its import raised is the message
        # (a PR's sys.exit(0) at import ended `check` with exit 0: passed, no verdict, no
        # --json; a review)
        said = f"{e.msg} ({e.filename}:{e.lineno})" if isinstance(e, SyntaxError) else e
        raise ValueError(f"this tree's kernels/ cannot be imported: "
                         f"{type(e).__name__}: {said}") from e
    return kernels


def device_scope(device: str):
    """The case's GPU as the current device while it runs: Triton launches on the current
    device, not the tensors' (a run on `--devices 1` alone, in this process, launched
    every tile on GPU 0 and none ran, session 8). A no-op on the CPU."""
    if not device.startswith("cuda"):
        return contextlib.nullcontext()
    return torch.cuda.device(torch.device(device))


class Runner:
    """One process's live state for a run context; `run_case` measures one case."""

    def __init__(self, ctx: RunContext, triton=None, vendor: Builder = vendor_provider,
                 last_words: Callable[[], None] | None = None) -> None:
        """`triton`: a package with the kernels.matmul contract (default: this tree's
        kernels); `vendor`: the vendor's builder (tests substitute both); `last_words`:
        called before the process stops on a case stuck past its time limit
        (gemmgate/deadline.py; the CLI keeps the cases measured so far)."""
        if triton is None:
            triton = own_kernels()
        self.ctx = ctx
        self.tuner = Tuner(ctx.tuning)
        self.vendor = vendor
        self.last_words = last_words
        self.kernels = {"triton": triton}
        ref = load_reference(ctx)
        if ref is not None:
            self.kernels[REFERENCE] = ref

    def run_case(self, mode: PrecisionMode, case: Case) -> CaseResult:
        """One case, within the context's time limit (MeasurementError past it)."""
        self.ctx.chip.require_mode(mode.name)
        return run_within(self.ctx.case_timeout_s, f"{mode.name} {case.id}",
                          lambda: self._case(mode, case), self.last_words)

    def _case(self, mode: PrecisionMode, case: Case) -> CaseResult:
        ctx = self.ctx
        with device_scope(ctx.device), vendor_flags(mode):
            try:
                return self._run(mode, case)
            except MeasurementError:
                raise
            except Exception as e:   # outside a provider's own calls (`judging.check` keeps
                # those): the inputs, the reference, timing, telemetry. A traceback and
                # exit 1 said "regression"; an OOM's ValueError-like kin said "usage".
                raise MeasurementError(f"{mode.name} {case.id} could not be measured: "
                                       f"{type(e).__name__}: {e}") from e

    def _run(self, mode: PrecisionMode, case: Case) -> CaseResult:
        ctx, chip = self.ctx, self.ctx.chip
        def fresh_inputs():
            return make_inputs(case, mode, ctx.device, case_seed(mode.name, case),
                               chip.fp8_dtype)

        inp = fresh_inputs()
        ref, scale2 = inp.reference_and_scale2()
        top = past_range(ref, mode.output_dtype)
        if top is not None:   # every honest output is inf there: both sides "failed
            # accuracy" (exit 1, a regression) on a case no kernel can compute (a review)
            raise MeasurementError(
                f"{mode.name} {case.id}: the product reaches {top:.4g}, past {mode.name}'s "
                f"output type ({mode.output_dtype}) range: no output can hold it, so "
                "none is judged; use a smaller K")
        calls, results, tiles = {}, {}, {}
        # the gated pair and the A/B reference first, then the extras, each seen to leave
        # the inputs as they were (an extra that wrote into them made the reference fail
        # on its garbage, and the others were timed on it; a Triton that did so failed
        # the vendor's check: reviews, sessions 73 and 74)
        names = (*ctx.providers[:2], *((REFERENCE,) if REFERENCE in self.kernels else ()),
                 *ctx.providers[2:])
        guard, flags = InputGuard(inp, fresh_inputs), math_flags()
        for name in names:
            build, chooser = self._builder(name)
            call, res = check(name, build, inp, mode, ref, scale2)
            wrote, changed = guard.written(), flags_changed(flags)   # (each puts back)
            if wrote or changed:
                call, res = None, ProviderResult(name, FAIL, message=(
                    "wrote into its inputs (A, B or a scale): not timed, and the inputs "
                    "were made again for the rest" if wrote else
                    f"changed torch's matmul math flags ({changed}): not timed, and they "
                    "were set back for the rest"))
            results[name] = res
            if call is not None:
                calls[name] = call
            if chooser is not None and chooser.last is not None:
                tiles[name] = chooser.last   # the tile that kernel ran
        del ref
        flush = chip.flush_bytes
        injected = None
        if ctx.slowdown > 0 and "triton" in calls:
            try:   # (its timings name the Triton call "plain" and "wrapped")
                injected = _inject(calls, ctx.slowdown, ctx.policy, flush, ctx.device)
            except ProviderError as e:   # a Triton failing on a later call, as timing
                results["triton"] = failed("triton", e.error, "while timed: ")   # fails it
                del calls["triton"]   # (it stopped the run, exit 3, naming "plain": a review)
        timed: dict = {}   # what each provider's timed calls ran (under graphs, a replay)
        samples = _measured(calls, results, ctx.policy, flush, ctx.device, timed)
        if guard.written():   # timed on inputs a provider wrote into
            samples = timed_again(guard, calls, samples, results,
                                  lambda rest: _measured(rest, results, ctx.policy, flush,
                                                         ctx.device, timed),
                                  f"{mode.name} {case.id}", dict(timed))
        changed = flags_changed(flags)
        if changed:   # which of the interleaved calls did is not known; each later call
            # of the others computed otherwise than judged
            raise MeasurementError(f"{mode.name} {case.id}: a provider changed torch's "
                                   f"matmul math flags while timed ({changed})")
        after_timing({n: calls[n] for n in samples}, guard, mode, results, timed, flags)
        judge_kept_less(results, mode)
        for name, ts in samples.items():
            # TFLOP/s of the rounds' median (`median_ms`), which the gate judges
            res = replace(results[name], samples_ms=tuple(ts), block=ctx.policy.block)
            med = res.median_ms
            tf = case.flops / (med * 1e-3) / 1e12 if case.flops and med else None
            results[name] = replace(res, tflops=tf)
        tele = telemetry(ctx.device_index) if ctx.device != "cpu" else {}
        if injected is not None:
            tele["injected_slowdown"] = {"asked": ctx.slowdown, "sized": injected}
        if "triton" in tiles:  # which tile ran, and whether it was pinned, cached or tuned
            tele["tuning"] = tiles["triton"].to_json()
            tele["triton_config"] = tiles["triton"].name
        if REFERENCE in tiles:  # a different tile explains an A/B change
            tele["reference_config"] = tiles[REFERENCE].name
        if "inductor" in tiles:  # the template config that beat (or lost to) ours
            tele["inductor_config"] = tiles["inductor"].name
        return CaseResult(mode.name, case, results, chip.peak(mode.name), tele,
                          f"{ctx.device}/pid{os.getpid()}", ctx.policy.block)

    def _builder(self, name: str):
        """(builder(inp, mode) -> call, the kernel's recording chooser or None)."""
        if name == "vendor":
            if self.ctx.keep_copies:
                return self.vendor, None
            return (lambda inp, mode: self.vendor(inp, mode, keep_copies=False)), None
        if name == "vendor_fast":
            keep = self.ctx.keep_copies
            return (lambda inp, mode: vendor_fast_provider(inp, mode, keep)), None
        if name == "inductor":
            picks = Picks()   # which template its autotuning chose, for this case
            return (lambda inp, mode: inductor_provider(inp, mode, picks)), picks
        if name not in self.kernels:  # a module:function path (--providers)
            fn = load_function(name)
            chooser = self.tuner.chooser(name) if takes_choose(fn) else None
            return (lambda inp, mode: kernel_call(fn, chooser, inp, mode,
                                                  self.ctx.keep_copies)), chooser
        pkg = self.kernels[name]
        chooser = self.tuner.chooser(getattr(pkg, "kernel_hash", lambda: "")())

        def build(inp, mode):
            return kernel_call(pkg.matmul, chooser, inp, mode, self.ctx.keep_copies)

        return build, chooser


def _measured(calls: dict, results: dict, policy: TimingPolicy, flush: int,
              device: str, timed: dict | None = None) -> dict:
    """`measure` of the checked calls (`timed`: what each one's timed calls ran). Where
    one raises while timed (a provider that fails on a later call), that one fails this
    case (`results` updated) and the others are timed again without it (`ProviderError`
    names it; anything else raised, each is timed alone once to find which; none found,
    it raises). The timing again starts outside the `except`: inside it, the raise's
    traceback held the first timing's frame, its captured graphs and flush buffer among
    its locals, alive through every timing after it (a review)."""
    try:
        return measure(calls, policy, flush_bytes=flush, device=device, timed=timed)
    except ProviderError as e:
        failures = {e.name: failed(e.name, e.error, "while timed: ")}
    except STOPS:
        raise
    except BaseException as first:   # noqa: BLE001 - each provider alone says whose
        failures = _whose(calls, policy, flush, device)
        if not failures:
            raise first
    results.update(failures)
    rest = {n: c for n, c in calls.items() if n not in failures}
    return _measured(rest, results, policy, flush, device, timed) if rest else {}


def _whose(calls: dict, policy: TimingPolicy, flush: int, device: str) -> dict:
    """{name: failed result} of the providers that raise when timed alone, briefly (only
    their messages kept: an exception holds its frames). A raise in a provider's own call
    (`ProviderError`: warm-up, capture, a timed call) is its; one outside the calls (the
    flush buffer, a synchronize) is the provider's only where some others time alone
    without it: raised for every one, it is the harness's or the device's (an out-of-
    memory flush buffer failed every provider's accuracy, exit 1; a review), and none
    is blamed (the caller raises: not measured, exit 3)."""
    quick = replace(policy, min_rounds=3, max_rounds=3, budget_s=0.05, warmup_s=0.0)
    bad, outside = {}, {}
    for name, call in calls.items():
        try:
            measure({name: call}, quick, flush_bytes=flush, device=device)
        except ProviderError as e:
            bad[name] = failed(name, e.error, "while timed: ")
        except STOPS:
            raise
        except BaseException as e:   # noqa: BLE001 - outside the calls: whose, below
            outside[name] = failed(name, e, "while timed: ")
    if len(outside) < len(calls):
        bad.update(outside)
    return bad


_SIZING_STEPS = 2   # an injected slowdown measured and rescaled at most this many times


def _inject(calls: dict, slowdown: float, policy: TimingPolicy, flush: int,
            device: str) -> float:
    """Wrap the Triton call with `slowdown` x its own median time of extra device work.

    A closed loop: the extra work (a spin kernel on a GPU, the host's busy-wait on the
    CPU) is sized, measured against the plain call, and rescaled, so the injected fraction
    holds whatever the clock did while sizing it. Returns the fraction measured in the
    last sizing step (a spin kernel costs ~1 us at least, so on a 10 us kernel 3% asked
    is ~10-15% got; on the CPU, sized once and said to be the fraction asked, 50% asked
    ran 9% to 82% on a loaded machine; a review)."""
    quick = replace(policy, min_rounds=10, max_rounds=30, budget_s=0.2, target_rel_ci=0.003,
                    warmup_s=0.02)
    plain = calls["triton"]

    def medians(fns: dict) -> dict:
        got = measure(fns, quick, flush_bytes=flush, device=device)
        return {k: stats.median(v) for k, v in got.items()}

    extra = slowdown * medians({"plain": plain})["plain"]
    for step in range(_SIZING_STEPS):
        m = medians({"plain": plain, "wrapped": slowed(plain, extra, device)})
        achieved = m["wrapped"] / m["plain"] - 1
        if abs(achieved - slowdown) <= 0.1 * slowdown or step == _SIZING_STEPS - 1:
            break   # the last spin measured is the one installed: its figure is reported
        if achieved > 0:
            extra *= slowdown / achieved
    calls["triton"] = slowed(plain, extra, device)
    return achieved


def environment_of(ctx: RunContext) -> dict:
    """The environment record of a run in this context (versions, device, commit, and
    the context's choices that change figures)."""
    env = environment(ctx.chip.id, ctx.policy.method, ctx.device_index,
                      ctx.devices if ctx.chip.device_type != "cpu" else ())
    env.update(devices=list(ctx.devices), block=ctx.policy.block, ab_ref=ctx.reference,
               inject_slowdown=ctx.slowdown, run_id=uuid.uuid4().hex[:16])
    if ctx.reference:   # its A/B is A/A noise where kernels/ is the reference's (merge)
        env["ab_kernels_same"] = reference.kernels_as_at(ctx.reference)
    if ctx.providers[2:]:  # extras (--providers); a baseline's runs never have any
        env["providers"] = list(ctx.providers)
    if not ctx.keep_copies:  # --copies per-call: operand copies timed in every call
        env["copies"] = "per-call"
    if ctx.chip.device_type != "cpu":   # the table the picks come from (none on the CPU)
        env["tuning_table"] = tuning_table(env["device_name"])
    return env
