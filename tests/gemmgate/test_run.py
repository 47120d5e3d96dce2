"""gemmgate/run.py: the one place a case runs. Inputs a provider writes into while timed
(the writer failed, the rest timed again on inputs made again), failures that stay per
case, custom and extra providers, and the tile a kernel reports through its chooser, on
the CPU (interpreter) with small shapes. The verdicts themselves (poisoned outputs, the
judgment after timing): test_judging.py. No verdict here rests on timing."""

import json
import math
import types
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from gemmgate import stats
from gemmgate.context import MeasurementError, make_context
from gemmgate.execute import run_cases
from gemmgate.precision import MODES
from gemmgate.results import summary_by_mode
from gemmgate.run import Runner
from gemmgate.shapes import Case
from gemmgate.timing_policy import TimingPolicy
from tests.gemmgate.late_vendors import (
    acts_once_timed,
    turns_after_two_calls,
    with_graph,
    writes_a,
)


@pytest.fixture
def ctx():
    return make_context(chip="cpu", shapes="smoke", modes="fp32")




def test_a_provider_that_writes_its_inputs_while_timed_fails_and_the_rest_are_timed_again(
        ctx):
    """One that writes into A after its two checked calls had the others timed (and judged
    after timing) on its garbage: it fails, the inputs are made again, and the others are
    timed again on them and pass."""
    r = Runner(ctx, vendor=turns_after_two_calls(writes_a)).run_case(MODES["fp32"],
                                                                      Case(32, 32, 64))
    v, t = r.providers["vendor"], r.providers["triton"]
    assert v.accuracy == "fail" and not v.samples_ms
    assert v.message.startswith("wrote into its inputs (A, B or a scale) while timed")
    assert t.accuracy == "pass" and t.samples_ms and not r.passed


def test_an_extra_that_writes_its_inputs_while_timed_leaves_the_gated_pair_judged(custom):
    custom.WRITES.clear()
    ctx = _extras_ctx("custom_providers:writes_later")
    r = Runner(ctx).run_case(MODES["fp32"], Case(16, 16, 16))
    p = r.providers["custom_providers:writes_later"]
    assert p.accuracy == "fail" and "while timed" in p.message and not p.samples_ms
    assert r.gate_passed and r.providers["vendor"].samples_ms and r.ratio > 0


def test_inputs_changed_while_timed_by_no_provider_found_is_a_measurement_error(ctx):
    """A provider that wrote into its inputs on its third call alone is not found when
    each is called again: no figure of the case is of its inputs (exit 3, the case named)."""
    from gemmgate.context import MeasurementError

    def once(inp, mode):
        calls = []

        def call():
            calls.append(1)
            if len(calls) == 3:
                inp.b.add_(1.0)
            return inp.a @ inp.b
        return call

    with pytest.raises(MeasurementError, match="fp32 m16-n16-k16: the inputs changed while"):
        Runner(ctx, vendor=once).run_case(MODES["fp32"], Case(16, 16, 16))


def test_the_others_are_timed_again_on_the_inputs_made_again(custom):
    """Where the vendor wrote into A while timed, an extra's re-timed calls see the inputs
    its checked calls saw (the samples kept are of those calls, not of the first timing's
    garbage): its trailing calls on the fresh inputs are its culprit-search call, every
    re-timed call and the two judged after timing."""
    custom.SUMS.clear()
    ctx = _extras_ctx("custom_providers:observer")
    r = Runner(ctx, vendor=turns_after_two_calls(writes_a)).run_case(MODES["fp32"],
                                                                      Case(32, 32, 64))
    o = r.providers["custom_providers:observer"]
    assert r.providers["vendor"].message.startswith("wrote into its inputs")
    assert o.accuracy == "pass" and o.samples_ms
    fresh = custom.SUMS[0]
    assert any(x != fresh for x in custom.SUMS)   # the first timing saw the garbage
    tail = len(custom.SUMS) - max(i for i, x in enumerate(custom.SUMS) if x != fresh) - 1
    assert tail >= len(o.samples_ms) + 3


def test_a_provider_that_writes_its_inputs_then_raises_while_timed_is_found(custom):
    """One that wrote into B, then raised, left no samples and was not called again: "no
    provider wrote into them", exit 3, and the run stopped (a review); it is found among
    those that failed while timed."""
    custom.WRITES.clear()
    ctx = _extras_ctx("custom_providers:write_then_raise")
    r = Runner(ctx).run_case(MODES["fp32"], Case(16, 16, 16))
    p = r.providers["custom_providers:write_then_raise"]
    assert p.accuracy == "fail" and "while timed" in p.message and not p.samples_ms
    assert p.message.startswith("wrote into its inputs")
    assert r.gate_passed and r.providers["vendor"].samples_ms


def test_a_provider_that_writes_its_inputs_in_the_check_after_timing_fails_alone(
        custom, monkeypatch):
    """One that wrote into B in its calls judged after timing had every provider judged
    after it against a reference of other inputs (an honest extra failed; a review): it
    fails, and the inputs are made again for the rest."""
    vendor = acts_once_timed(monkeypatch, lambda inp: inp.b.add_(1.0))
    ctx = _extras_ctx("custom_providers:correct")
    r = Runner(ctx, vendor=vendor).run_case(MODES["fp32"], Case(16, 16, 16))
    v = r.providers["vendor"]
    assert v.accuracy == "fail" and v.samples_ms
    assert v.message == "wrote into its inputs (A, B or a scale) after its timed calls"
    assert r.providers["custom_providers:correct"].accuracy == "pass"
    assert r.providers["triton"].accuracy == "pass"


def test_inputs_changed_again_while_timed_again_is_a_measurement_error(custom, monkeypatch):
    """The vendor wrote into A while timed and is found; an extra then writes into B while
    the others are timed again: no figure is of the case's inputs (exit 3)."""
    from gemmgate import run as run_mod
    from gemmgate.context import MeasurementError

    timings = []
    real = run_mod._measured

    def counted(*a):
        timings.append(1)
        return real(*a)

    monkeypatch.setattr(run_mod, "_measured", counted)
    custom.WRITES.clear()

    def extra(a, b, **kw):
        if len(timings) > 1:   # the timing again
            b.add_(1.0)
        return a @ b

    monkeypatch.setattr(custom, "writes_later", extra)
    ctx = _extras_ctx("custom_providers:writes_later")
    with pytest.raises(MeasurementError,
                       match="m16-n16-k16: the inputs changed again while timed without vendor"):
        Runner(ctx, vendor=turns_after_two_calls(writes_a)).run_case(MODES["fp32"],
                                                                      Case(16, 16, 16))


def test_a_run_under_inference_mode_is_judged(ctx):
    """Inference tensors keep no version counter: a run under torch.inference_mode failed
    every case once every case's inputs were fingerprinted (a review)."""
    with torch.inference_mode():
        r = Runner(ctx).run_case(MODES["fp32"], Case(16, 16, 16))
    assert r.passed and r.providers["triton"].samples_ms


def _metadata_only(inp, out):
    inp.b.unsqueeze_(0)
    inp.b.squeeze_(0)


def _swaps_two(inp, out):
    with torch.no_grad():
        inp.b[[0, 1]] = inp.b[[1, 0]].clone()


@pytest.mark.parametrize("touch, wrote", [(_metadata_only, False), (_swaps_two, True)])
def test_a_write_is_told_by_values_not_a_version_counter_alone(ctx, touch, wrote):
    """An in-place metadata change (`unsqueeze_` then `squeeze_`) moves B's version counter
    and writes nothing: it was "wrote into its inputs", untimed (a review). A swap of two
    rows keeps B's sum and moves its counter: the values, compared bit for bit with the
    inputs made again, tell it."""
    r = Runner(ctx, vendor=turns_after_two_calls(touch)).run_case(MODES["fp32"],
                                                                  Case(16, 16, 16))
    v = r.providers["vendor"]
    if wrote:
        assert v.accuracy == "fail" and v.message.startswith("wrote into its inputs")
    else:
        assert v.accuracy == "pass" and v.samples_ms and r.passed


def test_a_triton_that_writes_its_inputs_in_its_checked_calls_fails_alone(ctx):
    """The gated pair was not seen to leave its inputs as they were in its two checked
    calls: a Triton that wrote into A failed the vendor's check on its garbage (a review).
    It fails, named the writer, and the vendor is checked and timed on the inputs made
    again."""
    def matmul(a, b, *, out=None, **kw):
        c = torch.matmul(a, b, out=out)
        a.mul_(2.0)
        return c

    writer = types.SimpleNamespace(matmul=matmul)
    r = Runner(ctx, triton=writer).run_case(MODES["fp32"], Case(16, 16, 16))
    t, v = r.providers["triton"], r.providers["vendor"]
    assert t.accuracy == "fail" and t.message.startswith("wrote into its inputs")
    assert v.accuracy == "pass" and v.samples_ms and not r.passed


def test_ratio_and_summary():
    ctx = make_context(chip="cpu", shapes="smoke", modes="fp16")
    r = Runner(ctx).run_case(MODES["fp16"], Case(32, 32, 32))
    assert r.passed and r.ratio > 0
    assert len(r.ratio_samples) == len(r.providers["triton"].samples_ms)
    s = summary_by_mode([r])
    assert s["fp16"]["cases"] == 1 and math.isclose(s["fp16"]["geomean_ratio"], r.ratio)


def test_a_blocked_run_states_its_rounds_as_the_gate_judges_them():
    """--block 3: the case carries its block; its TFLOP/s is of the rounds' median (what
    the gate judges, one sample a round), so a baseline built from the run and the run
    itself agree (with the calls' median instead, a run judged against its own
    calibration came out 5.7% "regressed" where the calls of a block differed; a review)."""
    ctx = make_context(chip="cpu", shapes="smoke", modes="fp32", block=3)
    r = Runner(ctx).run_case(MODES["fp32"], Case(16, 16, 16))
    t = r.providers["triton"]
    assert r.block == 3 and len(t.samples_ms) == 3 * len(r.round_ms("triton"))
    assert len(r.ratio_samples) == len(r.round_ms("triton"))
    med = stats.median(stats.block_medians(t.samples_ms, 3))
    assert t.tflops == pytest.approx(r.case.flops / (med * 1e-3) / 1e12, rel=1e-12)


def test_provider_error_fails_the_case_not_the_run(ctx):
    # A kernel that cannot even launch (compile error, CUDA error...) is a failed case
    # with the error named; the other provider is still checked and timed.
    def matmul(a, b, **kw):
        raise RuntimeError("triton compile failed: out of registers")

    broken = types.SimpleNamespace(matmul=matmul)
    r = Runner(ctx, triton=broken).run_case(MODES["fp32"], Case(16, 16, 16))
    t = r.providers["triton"]
    assert t.accuracy == "fail" and "out of registers" in t.message and not t.samples_ms
    assert r.providers["vendor"].accuracy == "pass" and r.providers["vendor"].samples_ms
    assert not r.passed and r.ratio is None


def test_a_failure_outside_the_providers_is_a_measurement_error_naming_the_case(
        ctx, monkeypatch, capsys, tmp_path):
    """Out of memory making the inputs (or the float64 reference) was a traceback and
    exit 1, which says "regression"; it is exit 3 (could not measure), the case named."""
    from gemmgate import run as run_mod
    from gemmgate.cli import main
    from gemmgate.context import MeasurementError

    def oom(*a, **k):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    real = run_mod.make_inputs
    monkeypatch.setattr(run_mod, "make_inputs", lambda case, *a, **k: (
        oom() if case.m == 16 else real(case, *a, **k)))
    with pytest.raises(MeasurementError, match="fp32 m16-n16-k16 could not be measured: "
                                               "OutOfMemoryError: CUDA out of memory"):
        Runner(ctx).run_case(MODES["fp32"], Case(16, 16, 16))
    # the cases measured before it are kept in --json, marked incomplete
    out = tmp_path / "run.json"
    assert main(["run", "--chip", "cpu", "--shapes", "8x8x8,16x16x16,24x8x8", "--modes", "fp32",
                 "--json", str(out)]) == 3
    err = capsys.readouterr().err.replace("\n", " ")
    assert "could not be measured" in err and "wrote the 1 case(s) measured before" in err
    data = json.loads(out.read_text())
    assert [c["id"] for c in data["cases"]] == ["fp32-m8-n8-k8"]
    assert "m16-n16-k16 could not be measured" in data["environment"]["incomplete"]
    # and it calibrates nothing
    from gemmgate.cli_merge import _calibration_run

    with pytest.raises(ValueError, match="a run that stopped part way .* cannot calibrate"):
        _calibration_run(str(out), [])


def test_a_dot_product_case_is_judged_against_a_typical_products_size(ctx):
    """1x1x8976 (the harness's own seed): the honest CPU BLAS's fp32 error against the one
    sum's own size was 2.2e-5, over fp32's 2e-5 band, on every run."""
    r = Runner(ctx).run_case(MODES["fp32"], Case(1, 1, 8976))
    assert r.providers["vendor"].accuracy == "pass" and r.passed, r.providers


def test_the_tile_a_kernel_chose_comes_back_through_its_chooser(ctx):
    # A kernel that asks its chooser (as the GPU path does) reports the tile it ran in
    # the case's telemetry: no module global carries it.
    import kernels
    from kernels.tile import TileConfig

    tiles = (TileConfig(64, 32, 32, 4, 2, 4), TileConfig(32, 32, 32, 4, 1, 4))

    def matmul(a, b, *, choose=None, **kw):
        choose("fp32 test-key", tiles, lambda cfg: pytest.fail("tuned on the measured path"))
        return kernels.matmul(a, b, **kw)

    fake = types.SimpleNamespace(matmul=matmul, kernel_hash=lambda: "abc")
    r = Runner(ctx, triton=fake).run_case(MODES["fp32"], Case(16, 16, 16))
    assert r.passed
    tile = r.telemetry["tuning"]
    # no tuning by default: the kernel's own choice (its first candidate) runs
    assert tile["source"] == "kernel" and tile["kernel"] == "abc"
    assert tile["config"]["block_m"] == 64
    assert r.telemetry["triton_config"].startswith(f"{tile['config']['block_m']}x")


def test_run_cases_runs_every_item_in_order(ctx):
    items = [(MODES["fp32"], Case(16, 16, 16)), (MODES["fp32"], Case(8, 24, 16))]
    seen = []
    got = run_cases(ctx, items, on_case=seen.append)
    assert [r.case for r in got] == [c for _, c in items]
    assert seen == got


def test_the_context_pickles_for_workers_and_fresh_processes(ctx):
    import pickle

    again = pickle.loads(pickle.dumps(ctx))
    assert again == ctx


# --- --providers: extras are checked and timed like the others, judged apart ---------------

HERE = Path(__file__).parent  # custom_providers.py: GEMMs to name as module:function


@pytest.fixture
def custom(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    import custom_providers

    custom_providers.SEEN.clear()
    return custom_providers


def _extras_ctx(*names: str):
    return make_context(chip="cpu", shapes="smoke", modes="fp32",
                        providers=",".join(("triton", "vendor") + names))


def test_a_provider_without_fp8s_scales_runs_the_other_modes(custom):
    """The scales are passed in a scaled mode only (they were passed always: a GEMM
    without them failed every case)."""
    ctx = _extras_ctx("custom_providers:unscaled")
    r = Runner(ctx).run_case(MODES["fp32"], Case(16, 24, 32))
    assert r.providers["custom_providers:unscaled"].accuracy == "pass" and r.passed


def test_a_correct_custom_provider_passes_and_has_its_ratio(custom):
    ctx = _extras_ctx("custom_providers:correct", "custom_providers:hooked")
    r = Runner(ctx).run_case(MODES["fp32"], Case(16, 24, 32))
    assert list(r.providers) == ["triton", "vendor", "custom_providers:correct",
                                 "custom_providers:hooked"]
    assert r.extras == ("custom_providers:correct", "custom_providers:hooked")
    p = r.providers["custom_providers:correct"]
    assert p.accuracy == "pass" and p.error < 1e-6 and p.samples_ms and p.tflops
    ratio = r.ratio_to("custom_providers:correct")  # its time / Triton's, as `ratio`
    rounds = zip(r.providers["triton"].samples_ms, p.samples_ms)   # paired by round
    assert ratio == stats.median([o / t for t, o in rounds])
    assert r.to_json()["ratios"]["custom_providers:correct"] == ratio
    assert r.passed and r.gate_passed
    # a `choose` parameter gets the run's recording chooser; one without gets none
    assert custom.SEEN and all(c is not None for c in custom.SEEN)


def test_a_wrong_custom_provider_fails_accuracy_but_not_the_gated_pair(custom):
    ctx = _extras_ctx("custom_providers:wrong")
    r = Runner(ctx).run_case(MODES["fp32"], Case(16, 16, 16))
    p = r.providers["custom_providers:wrong"]
    assert p.accuracy == "fail" and p.error > 1e-2
    assert not r.passed                      # the run reports it (exit 1) ...
    assert r.gate_passed                     # ... the gate judges triton vs vendor only


@pytest.mark.parametrize("name, said", [
    ("bad_shape", "ValueError: output shape (3, 3) != reference (16, 16)"),
    ("exits", "SystemExit: 0"),
    ("flaky", "while timed: RuntimeError: flaky after two calls"),
    ("wide", "TypeError: output dtype torch.float64, the mode's is torch.float32")])
def test_a_custom_provider_that_breaks_fails_its_case_not_the_run(custom, name, said):
    """A wrong shape or dtype, an exit, or a raise on a later call (while timed): that
    provider's accuracy failure, with the message; Triton and the vendor are measured as
    ever."""
    custom.CALLS.clear()
    ctx = _extras_ctx(f"custom_providers:{name}")
    r = Runner(ctx).run_case(MODES["fp32"], Case(16, 16, 16))
    p = r.providers[f"custom_providers:{name}"]
    assert p.accuracy == "fail" and said in p.message and not p.samples_ms
    assert r.gate_passed and r.ratio > 0 and not r.passed


def test_a_provider_that_fails_now_and_then_while_timed_fails_alone(custom):
    """One that raised on every 12th call was not found again by timing each provider
    alone for 3 rounds, and the whole case failed, exit 3 (a review): the timing loop now
    names the provider that raised."""
    custom.FLAKY_N.clear()
    ctx = _extras_ctx("custom_providers:now_and_then")
    r = Runner(ctx).run_case(MODES["fp32"], Case(16, 16, 16))
    p = r.providers["custom_providers:now_and_then"]
    assert p.accuracy == "fail" and "while timed: RuntimeError: transient failure" in p.message
    assert r.gate_passed and r.ratio > 0 and r.providers["triton"].samples_ms


def test_a_tuning_cache_that_cannot_be_saved_is_no_accuracy_verdict(tmp_path):
    """A save of the tuning cache that failed inside the kernel's choose hook (another job
    rewrote it as another schema, a full disk, a lock past 10 minutes) was Triton's
    accuracy "fail", exit 1: a regression's code (a review). It is the cache's error."""
    from gemmgate import judging
    from gemmgate.tuning import TuningError, save_cache

    bad = tmp_path / "cpu.json"
    bad.write_text(json.dumps({"schema": "gemmgate.tuning", "version": 2}))

    def build(inp, mode):
        save_cache(bad, "cpu", {"k": {}})   # what a search's choice ends in
        raise AssertionError("not reached")

    with pytest.raises(TuningError, match="cpu.json"):
        judging.check("triton", build, None, MODES["fp32"], None)
    blocked = tmp_path / "file"
    blocked.write_text("x")
    with pytest.raises(TuningError, match="cannot save the tuning cache"):
        save_cache(blocked / "cpu.json", "cpu", {"k": {}})   # its folder is a file


def test_inductor_on_the_cpu_is_unsupported_not_a_failure():
    ctx = _extras_ctx("inductor")
    r = Runner(ctx).run_case(MODES["fp32"], Case(16, 16, 16))
    p = r.providers["inductor"]
    assert p.accuracy == "unsupported" and "needs a CUDA GPU" in p.message
    assert not p.samples_ms and r.ratio_to("inductor") is None
    assert r.passed and r.ratio > 0


def test_inductors_pick_is_in_the_cases_telemetry(monkeypatch):
    from gemmgate import run
    from gemmgate.autotune_pick import Pick

    def fake(inp, mode, picks):   # inductor on the CPU: its autotuning's pick recorded
        picks.seen.append(Pick("triton_mm 64x32x128 g8 s5 w4"))
        return lambda: inp.a @ inp.b

    monkeypatch.setattr(run, "inductor_provider", fake)
    r = Runner(_extras_ctx("inductor")).run_case(MODES["fp32"], Case(16, 16, 16))
    assert r.providers["inductor"].accuracy == "pass"
    assert r.telemetry["inductor_config"] == "triton_mm 64x32x128 g8 s5 w4"
    assert r.to_json()["telemetry"]["inductor_config"] == "triton_mm 64x32x128 g8 s5 w4"


def test_device_scope_is_a_no_op_on_the_cpu_and_names_the_case_gpu():
    from gemmgate.run import device_scope

    with device_scope("cpu"):
        pass
    scope = device_scope("cuda:1")  # built without touching CUDA
    assert isinstance(scope, torch.cuda.device) and scope.idx == 1


@pytest.mark.gpu
def test_gpu_a_run_on_the_last_gpu_alone_launches_there():
    """Session 8, two H200s: `gemmgate tune --devices 1` ran in-process with CUDA's current
    device 0, Triton launched every tile there, and none ran ("no candidate config ran").
    On one GPU this is device 0 (the plain path); on two it is the case that failed."""
    last = torch.cuda.device_count() - 1
    c = make_context(shapes="smoke", modes="fp16", budget_s=0.05, devices=str(last))
    [res] = run_cases(c, [(MODES["fp16"], Case(256, 256, 256))])
    assert res.providers["triton"].accuracy == "pass", res.providers["triton"].message
    assert torch.cuda.current_device() == 0


@pytest.mark.parametrize("copies,asked", [("kept", True), ("per-call", False)])
def test_the_vendor_is_asked_to_keep_its_layouts_as_the_kernel_is(copies, asked):
    seen = []

    def vendor(inp, mode, keep_copies=True):
        seen.append(keep_copies)
        return lambda: inp.a @ inp.b

    ctx = make_context(chip="cpu", shapes="smoke", modes="fp32", copies=copies)
    assert Runner(ctx, vendor=vendor).run_case(MODES["fp32"], Case(16, 16, 16)).passed
    assert seen and set(seen) == {asked}


def _injecting(monkeypatch, got_ms):
    """gemmgate.run's `_inject` on a stand-in device: `slowed` marks the call with the
    extra work asked, and `measure` gives each call got_ms(that extra) for every sample.
    Returns a runner of `_inject(calls, slowdown, device)` -> (fraction, installed)."""
    import gemmgate.run as run_mod

    def slowed(plain, extra, device):
        def call():
            return plain()
        call.extra = extra
        return call

    def measure(fns, policy, *, flush_bytes, device, timed=None):
        return {name: [got_ms(getattr(fn, "extra", 0.0))] * 3 for name, fn in fns.items()}

    monkeypatch.setattr(run_mod, "slowed", slowed)
    monkeypatch.setattr(run_mod, "measure", measure)

    def inject(slowdown, device):
        calls = {"triton": lambda: None}
        got = run_mod._inject(calls, slowdown, TimingPolicy(), 0, device)
        return got, calls["triton"].extra
    return inject


def test_an_injected_slowdown_reports_the_spin_it_installs(monkeypatch):
    """On a GPU the spin is sized, measured and rescaled; after the last measurement it
    was rescaled once more and installed unmeasured, so the telemetry's `sized` described
    the spin before it. A stand-in device: the wrapped call's extra time grows as the
    square of the spin asked, so no step lands within 10%."""
    got, installed = _injecting(monkeypatch, lambda extra: 1.0 + (extra * 10) ** 2)(
        0.5, "cuda:0")
    assert got == pytest.approx((installed * 10) ** 2)   # what the installed spin gives


@pytest.mark.parametrize("device", ["cuda:0", "cpu"])
def test_the_injected_fraction_reported_is_the_one_measured_on_the_cpu_too(monkeypatch,
                                                                          device):
    """On the CPU the busy-wait was sized once and reported as the fraction asked (50%
    asked ran 9-82% on a loaded machine; a review): it is the same closed loop as a GPU's
    now, its last measured step reported. A stand-in: the extra work gives 60% of what
    it is sized for."""
    got, installed = _injecting(monkeypatch, lambda extra: 1.0 + 0.6 * extra)(0.5, device)
    assert got == pytest.approx(0.6 * installed) and got == pytest.approx(0.5)
    assert installed == pytest.approx(0.5 / 0.6)   # rescaled to what was asked


def test_after_a_provider_fails_while_timed_the_others_timed_callables_are_handed_back():
    """`_measured` times the rest again without the one that raised: what their timed
    calls ran is of that timing, none of the failed one's (its graph would be replayed
    and judged after timing though it failed)."""
    from gemmgate.run import _measured
    from gemmgate.timing_policy import TimingPolicy

    n = [0]

    def late():
        n[0] += 1
        if n[0] > 4:
            raise RuntimeError("late")
        return torch.zeros(1)

    def ok():
        return torch.ones(1)

    timed, results = {}, {}
    policy = TimingPolicy(method="wall", warmup=1, min_rounds=6, max_rounds=6, budget_s=5)
    got = _measured({"late": late, "ok": ok}, results, policy, 64, "cpu", timed)
    assert set(got) == {"ok"} and timed == {"ok": ok} and results["late"].accuracy == "fail"


class _OwnStop(BaseException):
    """A provider's own BaseException (not a stop of the case's: KeyboardInterrupt,
    CaseTimeout, GeneratorExit)."""


def _raises_from_its_third_call(error):
    def vendor(inp, mode):
        n = []

        def call():
            n.append(1)
            if len(n) > 2:
                raise error
            return inp.a @ inp.b
        return call
    return vendor


@pytest.mark.parametrize("error", [_OwnStop("its own"), GeneratorExit("its own")],
                         ids=["its_own_class", "generator_exit"])
def test_a_providers_own_base_exception_while_timed_fails_it_alone(ctx, error):
    """Timing caught Exception and SystemExit only: a provider's own BaseException on a
    timed call crashed the run, exit 1, no --json (a review), where the same in its
    checked calls failed its case; GeneratorExit, taken for a stop, did so after that
    (a review). It fails while timed; the other is timed."""
    r = Runner(ctx, vendor=_raises_from_its_third_call(error)).run_case(
        MODES["fp32"], Case(16, 16, 16))
    v = r.providers["vendor"]
    assert v.accuracy == "fail" and v.message == f"while timed: {type(error).__name__}: its own"
    assert r.providers["triton"].accuracy == "pass" and r.providers["triton"].samples_ms


def test_a_stop_while_timed_is_no_providers_failure(ctx):
    """The case's stops pass through timing: Ctrl-C (SIGTERM is one) stops the run, the
    case's time limit is the case's measurement error."""
    from gemmgate.deadline import CaseTimeout

    with pytest.raises(KeyboardInterrupt):
        Runner(ctx, vendor=_raises_from_its_third_call(KeyboardInterrupt())).run_case(
            MODES["fp32"], Case(16, 16, 16))
    with pytest.raises(MeasurementError, match="ran past the case time limit"):
        Runner(ctx, vendor=_raises_from_its_third_call(CaseTimeout())).run_case(
            MODES["fp32"], Case(16, 16, 16))


def test_a_triton_failing_while_a_slowdown_is_sized_fails_alone():
    """The injected slowdown is sized by timing the Triton call ("plain", "wrapped"): a
    Triton failing on a later call stopped the run there (exit 3: "ProviderError: plain:
    ..."; a review), where without injection it fails while timed."""
    def matmul(a, b, *, out=None, **kw):
        calls.append(1)
        if len(calls) > 2:
            raise RuntimeError("from its third call")
        return torch.matmul(a, b, out=out)

    calls = []
    c = make_context(chip="cpu", shapes="smoke", modes="fp32", slowdown=0.05)
    r = Runner(c, triton=types.SimpleNamespace(matmul=matmul)).run_case(MODES["fp32"],
                                                                        Case(16, 16, 16))
    t = r.providers["triton"]
    assert t.accuracy == "fail" and t.message == "while timed: RuntimeError: from its third call"
    assert r.providers["vendor"].samples_ms and "injected_slowdown" not in r.telemetry


class _Replay:
    """`timing.graphed`'s replay on the CPU: a call's `graph` where it has one (what its
    capture would record), else the call; returns what it returned when "captured"."""

    live = None   # the replays alive (a weakref.WeakSet, per test)

    def __init__(self, fn, warmup):
        for _ in range(max(warmup, 1)):
            fn()
        self.fn = getattr(fn, "graph", fn)
        self.out = self.fn()
        _Replay.live.add(self)

    def __call__(self):
        self.fn()
        return self.out


@pytest.fixture
def device_graphs(monkeypatch):
    """timing's CUDA-graph path itself (`_measure_device`) on the CPU: torch.cuda's
    synchronize, events, stream and spin stood in for, `graphed` made `_Replay`; the
    context's timing "graph". Yields the context."""
    import time
    import weakref

    from gemmgate import timing

    class Event:
        def __init__(self, enable_timing=True):
            self.t = 0.0

        def record(self, stream=None):
            self.t = time.perf_counter()

        def elapsed_time(self, end):
            return (end.t - self.t) * 1e3

    for name, fake in (("synchronize", lambda *a, **k: None), ("Event", Event),
                       ("current_stream", lambda *a, **k: None),
                       ("_sleep", lambda *a, **k: None)):
        monkeypatch.setattr(torch.cuda, name, fake)
    _Replay.live = weakref.WeakSet()
    monkeypatch.setattr(timing, "graphed", _Replay)
    c = make_context(chip="cpu", shapes="smoke", modes="fp32")
    yield replace(c, policy=replace(c.policy, method="graph", warmup_s=0.0, batch=1))


def test_a_graph_alone_that_writes_its_inputs_fails_and_the_rest_are_timed_again(
        device_graphs):
    """Under graph timing the search for the writer called the eager calls only: a vendor
    whose graph alone wrote into A was found by no one, and the whole case stopped
    (MeasurementError, exit 3; a review). Its graph is called first now."""
    def writes_a_in_its_graph(inp, out):
        torch.matmul(inp.a, inp.b, out=out)
        inp.a.mul_(2.0)
        return out

    r = Runner(device_graphs, vendor=with_graph(writes_a_in_its_graph)).run_case(MODES["fp32"],
                                                                   Case(16, 16, 16))
    v, t = r.providers["vendor"], r.providers["triton"]
    assert v.accuracy == "fail" and v.message.startswith("wrote into its inputs (A, B or a "
                                                         "scale) while timed"), v.message
    assert t.accuracy == "pass" and t.samples_ms and r.gate_passed is False


def test_a_timing_that_failed_holds_no_graph_while_the_rest_are_timed_again(
        device_graphs, monkeypatch):
    """The rest were timed again inside the `except` of the first timing's failure: its
    traceback kept that timing's frame alive, its captured graphs (each a memory pool on
    a GPU) and flush buffer among its locals (a review). None is alive now when the rest
    are captured again."""
    import gc

    def fails_on_its_sixth_replay(inp, out):
        replays.append(1)
        if len(replays) > 5:
            raise RuntimeError("replay 6")
        return torch.matmul(inp.a, inp.b, out=out)

    replays, alive = [], []
    init = _Replay.__init__

    def counted(self, fn, warmup):
        gc.collect()
        alive.append(len(_Replay.live))
        init(self, fn, warmup)

    monkeypatch.setattr(_Replay, "__init__", counted)
    r = Runner(device_graphs, vendor=with_graph(fails_on_its_sixth_replay)).run_case(
        MODES["fp32"], Case(16, 16, 16))
    assert r.providers["vendor"].message == "while timed: RuntimeError: replay 6"
    assert r.providers["triton"].samples_ms
    assert alive == [0, 1, 0], alive   # triton's, the vendor's; then triton's alone again


def test_a_provider_that_changes_the_math_flags_fails_and_they_are_set_back(custom):
    """One provider setting tf32 made the next one's fp32 (cuBLAS-like: it reads the flag)
    "downgraded" and its timings tf32's (a review): the provider that changed them fails,
    untimed, the flags are set back, and the next one is judged and timed as asked."""
    import torch

    before = torch.backends.cuda.matmul.fp32_precision
    ctx = _extras_ctx("custom_providers:sets_tf32", "custom_providers:like_cublas")
    r = Runner(ctx).run_case(MODES["fp32"], Case(32, 32, 64))
    bad, reader = (r.providers[f"custom_providers:{n}"] for n in ("sets_tf32", "like_cublas"))
    assert bad.accuracy == "fail" and not bad.samples_ms
    assert bad.message.startswith("changed torch's matmul math flags "
                                  "(cuda.matmul.fp32_precision 'ieee' -> 'tf32')")
    assert reader.accuracy == "pass" and reader.samples_ms and r.gate_passed
    assert torch.backends.cuda.matmul.fp32_precision == before


def test_a_provider_that_sets_a_parent_flag_fails_and_it_is_set_back(custom):
    """torch.backends.fp32_precision showed through oneDNN's matmul flag ("none": its
    parent's), which was "set back" to "none", the parent still tf32: the check after
    timing said a timed provider had changed the flags, and the run stopped (exit 3; a
    review). The provider fails in every case, each measured, the parent set back."""
    import torch

    if not hasattr(torch.backends, "fp32_precision"):
        pytest.skip("this torch has no global fp32_precision")
    before = torch.backends.fp32_precision
    ctx = _extras_ctx("custom_providers:sets_global_tf32")
    runner = Runner(ctx)
    for case in (Case(16, 16, 16), Case(24, 24, 24)):
        r = runner.run_case(MODES["fp32"], case)
        bad = r.providers["custom_providers:sets_global_tf32"]
        assert bad.accuracy == "fail" and not bad.samples_ms
        assert bad.message.startswith("changed torch's matmul math flags (fp32_precision "
                                      f"{before!r} -> 'tf32'"), bad.message
        assert r.gate_passed and torch.backends.fp32_precision == before


def test_math_flags_changed_in_the_check_after_timing_fail_that_provider(custom):
    """The calls judged after timing were not watched: the provider that set tf32 there
    passed, and the one judged after it, reading the flag, was "downgraded" (a review)."""
    import torch

    before = torch.backends.cuda.matmul.fp32_precision
    ctx = _extras_ctx("custom_providers:sets_tf32_after_timing", "custom_providers:like_cublas")
    r = Runner(ctx).run_case(MODES["fp32"], Case(16, 16, 16))
    bad, reader = (r.providers[f"custom_providers:{n}"]
                   for n in ("sets_tf32_after_timing", "like_cublas"))
    assert bad.accuracy == "fail" and bad.message.startswith(
        "changed torch's matmul math flags after its timed calls "
        "(cuda.matmul.fp32_precision 'ieee' -> 'tf32')"), bad.message
    assert reader.accuracy == "pass" and r.gate_passed
    assert torch.backends.cuda.matmul.fp32_precision == before


def test_math_flags_changed_while_timed_are_a_measurement_error(custom):
    """A change while timed cannot be put on one of the interleaved calls: no figure of
    the case is of the mode asked (exit 3, the case and the flag named)."""
    import torch

    from gemmgate.context import MeasurementError

    custom.TIMED_CALLS.clear()
    before = torch.backends.cuda.matmul.fp32_precision
    ctx = _extras_ctx("custom_providers:sets_tf32_when_timed")
    with pytest.raises(MeasurementError, match="fp32 m16-n16-k16: a provider changed torch's "
                       "matmul math flags while timed \\(cuda.matmul.fp32_precision"):
        Runner(ctx).run_case(MODES["fp32"], Case(16, 16, 16))
    assert torch.backends.cuda.matmul.fp32_precision == before


@pytest.mark.parametrize("provider", ["transposes_a", "unsqueezes_b"])
def test_a_provider_that_changes_its_inputs_layout_fails_alone(custom, provider):
    """A's shape changed in place: the inputs made again could not be copied into it, and
    the case "could not be measured" (exit 3); B left 3-D failed Triton, called after it
    (exit 1, Triton's; a review). Its layout is set back; it alone fails."""
    ctx = _extras_ctx(f"custom_providers:{provider}")
    r = Runner(ctx).run_case(MODES["fp32"], Case(16, 24, 32))
    p = r.providers[f"custom_providers:{provider}"]
    assert p.accuracy == "fail" and "wrote into its inputs" in p.message
    assert r.gate_passed and r.providers["triton"].samples_ms


def test_an_output_that_is_a_view_of_the_inputs_fails_as_such(custom):
    """It was poisoned with NaN through its alias, A with it, and said to have "wrote into
    its inputs" (a review): refused before the poison, the inputs untouched."""
    ctx = _extras_ctx("custom_providers:returns_a")
    r = Runner(ctx).run_case(MODES["fp32"], Case(16, 16, 16))
    p = r.providers["custom_providers:returns_a"]
    assert p.accuracy == "fail" and "returned a view of its inputs" in p.message
    assert r.gate_passed and "wrote into its inputs" not in p.message


def test_a_timing_failure_outside_every_provider_s_call_is_not_theirs(ctx, monkeypatch):
    """The flush buffer out of memory (2 x L2, outside any call) failed every provider's
    accuracy, exit 1 (a review): raised for each alone, it is the harness's, and the case
    is not measured (exit 3, the case named)."""
    from gemmgate import timing
    from gemmgate.context import MeasurementError

    def no_memory(flush_bytes, device="cpu"):
        raise torch.OutOfMemoryError("out of memory. Tried to allocate 64 MiB")

    monkeypatch.setattr(timing, "flush_buffer", no_memory)
    with pytest.raises(MeasurementError, match="fp32 m16-n16-k16 could not be measured: "
                       "OutOfMemoryError"):
        Runner(ctx).run_case(MODES["fp32"], Case(16, 16, 16))


def test_a_failure_outside_the_calls_that_one_provider_alone_meets_is_its(ctx, monkeypatch):
    """One raised outside the calls (an asynchronous fault seen at a synchronize) only
    while one provider is timed is that provider's; the others are timed again."""
    from gemmgate import timing

    real = timing._measure_wall

    def faulty(fns, policy, flush_bytes):
        if "vendor" in fns:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return real(fns, policy, flush_bytes)

    monkeypatch.setattr(timing, "_measure_wall", faulty)
    r = Runner(ctx).run_case(MODES["fp32"], Case(16, 16, 16))
    v, t = r.providers["vendor"], r.providers["triton"]
    assert v.accuracy == "fail" and "illegal memory access" in v.message
    assert t.accuracy == "pass" and t.samples_ms


def test_a_product_past_the_output_types_range_is_not_an_accuracy_failure(monkeypatch):
    """Every honest fp16 output of a product past 65,504 is inf (standard-normal inputs
    reach it at K ~ 2^30: 1 x 1 x 2^31 fits an 80 GB GPU and fails 16% of the time):
    both sides "failed accuracy", exit 1, a regression. The case is not measured."""
    from gemmgate import run as run_mod
    from gemmgate.inputs import GemmInputs

    real = run_mod.make_inputs
    monkeypatch.setattr(run_mod, "make_inputs", lambda case, mode, *a, **k: GemmInputs(
        *(x * 64 for x in (lambda i: (i.a, i.b))(real(case, mode, *a, **k)))))
    ctx = make_context(chip="cpu", shapes="smoke", modes="fp16")
    with pytest.raises(MeasurementError, match="fp16 m16-n16-k256: the product reaches "
                                               ".* past fp16's output type"):
        Runner(ctx).run_case(MODES["fp16"], Case(16, 16, 256))


@pytest.mark.parametrize("init, said", [("import sys\nsys.exit(0)\n", "SystemExit: 0"),
                                         ("raise SystemExit(4)\n", "SystemExit: 4")])
def test_a_kernels_package_whose_import_exits_is_a_value_error(init, said, tmp_path,
                                                               monkeypatch):
    """own_kernels caught Exception only: a PR whose kernels/ import calls sys.exit(0)
    ended `check` with exit 0 (passed), no verdict and no --json (a review, on the CPU)."""
    import sys

    from gemmgate.run import own_kernels

    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "__init__.py").write_text(init)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "kernels", raising=False)
    with pytest.raises(ValueError, match=f"kernels/ cannot be imported: {said}"):
        own_kernels()
