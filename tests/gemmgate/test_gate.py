"""gemmgate/gate.py: compare_run on CaseResult objects with synthetic samples_ms and the
verdict policy (the noise level of the stored judgement: process, machine, advisory; A/B
decides). No timing, no torch work. The cases and baselines: tests/gemmgate/gate_cases.py;
the verdicts' words (table, summary, comment, annotations): test_gate_text.py.
"""

import random

import pytest

from gemmgate import baselines
from gemmgate.baseline_schema import from_json
from gemmgate.compare import DEFAULT_FLOOR, NOISE_FACTOR, aa_noise, scaled
from gemmgate.gate import compare_run, judge_case
from gemmgate.gate_levels import stored_level
from gemmgate.gate_text import GATE_HEAD, annotations, comment, markdown
from gemmgate.results import CaseResult, ProviderResult
from gemmgate.shapes import Case
from tests.gemmgate.gate_cases import (
    HOST,
    A,
    B,
    C,
    N,
    base_case,
    baseline,
    compare_json,
    mixed,
    one_verdict,
    result,
    times,
)

# --- verdicts ----------------------------------------------------------------------------

def test_unchanged_against_same_ratio():
    gate, v = one_verdict([result(A)], baseline(**{A.id: base_case(A, 0.9)}))
    assert v.key == f"fp32-{A.id}"
    assert v.verdict == "unchanged" and v.level == "process"
    assert abs(v.ratio.change) < 0.005 and v.ratio.tolerance == DEFAULT_FLOOR
    assert v.tflops.verdict == "unchanged"
    assert v.tflops.tolerance == 2 * DEFAULT_FLOOR              # TFLOP/s: twice the floor
    assert not gate.failed and gate.count("unchanged") == 1
    assert annotations(gate) == []


def test_regressed_against_higher_baseline_ratio():
    gate, v = one_verdict([result(A)], baseline(**{A.id: base_case(A, 0.95)}))   # ~5.3% drop
    assert v.verdict == "regressed"
    assert v.ratio.change == pytest.approx(0.9 / 0.95 - 1, abs=0.003)
    assert v.ratio.ci_high < 0
    assert gate.failed and gate.count("regressed") == 1


def test_improved_against_lower_baseline_ratio():
    gate, v = one_verdict([result(A)], baseline(**{A.id: base_case(A, 0.85)}))
    assert v.verdict == "improved" and v.ratio.ci_low > 0
    assert not gate.failed and gate.count("improved") == 1


def test_measured_noise_widens_tolerance():
    # 4% A/A noise -> tolerance 10% (factor 2.5): a 5.3% drop is within noise
    base = baseline(**{A.id: base_case(A, 0.95, noise_ratio=0.04)})
    gate, v = one_verdict([result(A)], base)
    assert v.ratio.tolerance == pytest.approx(scaled(0.04, NOISE_FACTOR))
    assert v.verdict == "unchanged" and not gate.failed


def test_floor_argument_is_used():
    gate, v = one_verdict([result(A)], baseline(**{A.id: base_case(A, 0.95)}), floor=0.10)
    assert v.ratio.tolerance == 0.10 and v.verdict == "unchanged"


@pytest.mark.parametrize("t_acc,v_acc", [("fail", "pass"), ("downgraded", "pass"),
                                         ("pass", "fail"), ("unsupported", "pass")])
def test_accuracy_failure_fails_the_gate(t_acc, v_acc):
    gate, v = one_verdict([result(A, t_acc=t_acc, v_acc=v_acc)], baseline(**{A.id: base_case(A)}))
    assert v.verdict == "failed" and v.note == "accuracy failure"
    assert v.ratio is None and v.tflops is None
    assert gate.failed and gate.count("failed") == 1
    assert annotations(gate) == [f"::error title=gemmgate accuracy::fp32-{A.id}: "
                                 "accuracy failure"]


@pytest.mark.parametrize("acc", ["fail", "downgraded", "unsupported", "pass"])
def test_an_extra_provider_changes_no_verdict(acc):
    # --providers inductor / module:function: shown beside, never judged
    base = baseline(**{A.id: base_case(A, 0.9)})
    plain = result(A)
    extra = ProviderResult("inductor", acc, 1e-7, "", times(5, 0.1))
    with_extra = CaseResult(plain.mode, plain.case, {**plain.providers, "inductor": extra})
    _, v0 = one_verdict([plain], base)
    _, v1 = one_verdict([with_extra], base)
    assert v0.verdict == "unchanged"
    assert (v1.verdict, v1.ratio, v1.tflops) == (v0.verdict, v0.ratio, v0.tflops)
    assert ("inductor (not gated)" in v1.note) == (acc in ("fail", "downgraded"))


def test_drift_is_not_a_regression():
    # clocks fall 8% over the run: both providers' times grow by the same factor per round
    rng = random.Random(7)
    d = [1 / (1 - 0.08 * i / (N - 1)) for i in range(N)]
    ts = tuple(1.0 * x * (1 + rng.gauss(0, 0.002)) for x in d)
    vs = tuple(0.9 * x * (1 + rng.gauss(0, 0.002)) for x in d)
    gate, v = one_verdict([result(A, t_samples=ts, v_samples=vs)], baseline(**{A.id: base_case(A)}))
    assert v.verdict == "unchanged"
    assert v.tflops.verdict == "regressed"
    assert "drift" in v.note and "not a regression" in v.note
    assert not gate.failed


def test_no_vendor_figure_gates_on_tflops():
    base = baseline(**{A.id: base_case(A), B.id: base_case(B)})
    slow = result(A, t_ms=1.2, v_acc="unsupported")               # 1/1.2: -17% TFLOP/s
    same = result(B, v_acc="unsupported", seed=10)
    gate = compare_json([slow, same], base)
    va, vb = gate.verdicts
    assert va.ratio is None and va.verdict == "regressed"
    unmeasured = "noise unmeasured: the floor (`baseline calibrate` measures it)"
    assert va.note == (f"stored: process-level -2.91%/+3.00%; {unmeasured}; no ratio: judged "
                       "on TFLOP/s")
    assert va.tflops.tolerance == 2 * DEFAULT_FLOOR and va.level == "process"
    assert vb.ratio is None and vb.verdict == "unchanged"
    assert gate.failed
    # the change, its CI and band: the annotation and the comment showed no figure, and
    # the comment's reason said "stored ratio" (a review); % escaped for GitHub
    (line,) = annotations(gate)
    assert line.startswith(f"::error title=gemmgate regression::fp32-{A.id}: Triton's "
                           "TFLOP/s -16.")
    assert "tolerance -2.91%25/+3.00%25); stored: process-level -2.91%25/+3.00%25" in line
    row = next(x for x in comment(gate, "cpu").splitlines() if f"fp32-{A.id}" in x)
    assert "TFLOP/s ↓ -16." in row and "Triton's stored TFLOP/s below the baseline" in row


def test_baseline_without_ratio_gates_on_tflops():
    base = baseline(**{A.id: base_case(A, ratio=None)})
    gate, v = one_verdict([result(A)], base)
    assert v.ratio is None and v.verdict == "unchanged"
    assert v.tflops.verdict == "unchanged" and v.note.endswith("no ratio: judged on TFLOP/s")


# --- missing / extra cases ---------------------------------------------------------------

def test_missing_and_extra_cases_listed_not_fatal():
    base = baseline(**{A.id: base_case(A), B.id: base_case(B)})
    gate = compare_json([result(A), result(C, seed=5)], base)
    assert [v.key for v in gate.verdicts] == [f"fp32-{A.id}"]    # the new case is not judged
    assert gate.missing == (f"fp32-{B.id}",)
    assert gate.extra == (f"fp32-{C.id}",)
    assert not gate.failed
    md = markdown(gate, "cpu")
    assert f"Not run (in the baseline): fp32-{B.id}" in md
    assert f"Not in the baseline (new cases): fp32-{C.id}" in md


def test_a_new_case_that_fails_accuracy_fails_the_gate():
    base = baseline(**{A.id: base_case(A)})
    gate = compare_json([result(A), result(C, seed=5, t_acc="fail")], base)
    assert [(v.key, v.verdict) for v in gate.verdicts] == [
        (f"fp32-{A.id}", "unchanged"), (f"fp32-{C.id}", "failed")]
    assert gate.verdicts[1].note == "accuracy failure (a case not in the baseline)"
    assert gate.extra == (f"fp32-{C.id}",) and gate.failed


def test_other_mode_is_extra():
    base = baseline(**{A.id: base_case(A)})
    gate = compare_json([result(A, mode="fp16")], base)
    assert gate.verdicts == () and gate.missing == (f"fp32-{A.id}",)
    assert gate.extra == (f"fp16-{A.id}",)


# --- markdown / annotations --------------------------------------------------------------

def test_case_verdict_to_json():
    gate = mixed()
    js = [v.to_json() for v in gate.verdicts]
    assert js[0]["id"] == f"fp32-{A.id}" and js[0]["verdict"] == "regressed"
    assert js[0]["ratio"]["verdict"] == "regressed" and js[0]["remeasured"] is False
    assert [j["level"] for j in js] == ["process"] * 3 + [""]   # no judgement: no level
    assert js[3]["ratio"] is None and js[3]["tflops"] is None


# --- a baseline the validator accepts must be usable by the gate -------------------------

def test_validated_baseline_with_null_noise_is_usable():
    data = baseline(**{A.id: base_case(A)})
    data["cases"][f"fp32-{A.id}"]["noise"] = None
    try:
        from_json(data)
    except baselines.BaselineError:
        return  # rejecting it up front is a fine fix too (it is: "noise is not an object")
    gate, v = one_verdict([result(A)], data)
    assert v.verdict == "unchanged" and v.ratio.tolerance == DEFAULT_FLOOR


def _tile(block_m: int, stale: bool = False) -> dict:
    return {"key": "fp32 m64", "source": "pinned", "kernel": "k1", "stale": stale,
            "config": {"block_m": block_m, "block_n": 64, "block_k": 32, "group_m": 8,
                       "num_stages": 3, "num_warps": 4}}


def test_a_tile_other_than_the_baselines_is_named_in_the_note():
    from dataclasses import replace

    bc = base_case(A)
    bc["tuning"] = _tile(64)
    base = baseline(**{A.id: bc})
    same = replace(result(A), telemetry={"tuning": _tile(64)})
    level = ("stored: process-level -1.48%/+1.50%; noise unmeasured: the floor (`baseline "
             "calibrate` measures it)")
    assert one_verdict([same], base)[1].note == level
    other = replace(result(A), telemetry={"tuning": _tile(128) | {"source": "tuned"}})
    note = one_verdict([other], base)[1].note
    assert note == f"{level}; tile 128x64x32 g8 s3 w4 (tuned), baseline had 64x64x32 g8 s3 w4"
    stale = replace(result(A), telemetry={"tuning": _tile(64, stale=True)})
    assert one_verdict([stale], base)[1].note == f"{level}; tile pinned for an older kernel"


# --- A/B against a reference kernel ---------------------------------------------------------

def ab_result(case: Case, slower: float, seed=0, ratio_scale=1.0) -> CaseResult:
    """Triton `slower` x slower than the reference kernel, timed in the same rounds."""
    from dataclasses import replace

    r = result(case, t_ms=1.0 * slower, v_ms=0.9 * slower * ratio_scale, seed=seed)
    ref = ProviderResult("reference", "pass", 1e-7, "", times(seed + 7, 1.0))
    return replace(r, providers={**r.providers, "reference": ref})


@pytest.mark.parametrize("slower, verdict", [(1.0, "unchanged"), (9.0, "regressed"),
                                             (1.03, "regressed")])
def test_a_case_new_to_the_baseline_is_judged_by_ab_alone(slower, verdict):
    """A/B needs no stored figure: a PR that added a case to its set and slowed the kernel
    there 9x passed, the case listed as new, "accuracy only" (a review). At the floor."""
    base = baseline(**{B.id: base_case(B)})
    gate = compare_json([ab_result(A, slower), result(B, seed=2)], base)
    v = next(v for v in gate.verdicts if v.key == f"fp32-{A.id}")
    assert v.verdict == verdict and v.ab.tolerance == pytest.approx(DEFAULT_FLOOR)
    assert v.ratio is None and "A/B alone decides" in v.note
    assert gate.extra == (f"fp32-{A.id}",) and gate.failed is (verdict == "regressed")
    plain = compare_json([result(A), result(B, seed=2)], base)   # no --ab-ref: listed only
    assert [v.key for v in plain.verdicts] == [f"fp32-{B.id}"]


def test_ab_identical_kernels_are_unchanged_and_a_3pct_slowdown_is_regressed():
    base = baseline(**{A.id: base_case(A, noise_ratio=0.03)})  # stored tolerance 7.9%
    same = one_verdict([ab_result(A, 1.0)], base)[1]
    assert same.verdict == "unchanged" and abs(same.ab.change) < 0.005
    # 3% slower than the reference; the vendor slowed alike, so the stored ratio (noisy
    # case, tolerance 7.9%) sees nothing: A/B alone catches it
    slow = one_verdict([ab_result(A, 1.03)], base)[1]
    assert slow.ratio.verdict == "unchanged" and slow.ab.verdict == "regressed"
    assert slow.verdict == "regressed" and slow.note.startswith("A/B: slower than the reference")
    assert slow.ab.change == pytest.approx(1 / 1.03 - 1, abs=0.004)
    gate = compare_json([ab_result(A, 1.03)], base)
    (line,) = annotations(gate)
    assert "against the reference kernel in the same process" in line


@pytest.mark.parametrize("accuracy", ["fail", "downgraded"])
def test_a_reference_that_failed_accuracy_decides_nothing(accuracy):
    """A wrong, fast reference (one that skips work) made a fix "regressed", exit 1, where
    bisect calls the same case failed (a review): its A/B is not judged, its note says
    why, and the stored judgement decides."""
    from dataclasses import replace

    from gemmgate.bisect import judge_ab

    base = baseline(**{A.id: base_case(A, noise_ratio=0.03)})
    r = ab_result(A, 1.10)   # 10% slower than the reference...
    bad = replace(r.providers["reference"], accuracy=accuracy, message="error 3e-1 > 1e-2")
    r = replace(r, providers={**r.providers, "reference": bad})   # ...which was wrong
    gate, v = one_verdict([r], base)
    assert v.ab is None and v.verdict == v.ratio.verdict == "unchanged"
    assert not gate.failed and "A/B: the reference kernel failed" in v.note
    assert judge_ab(r, 0.015).verdict == "failed"


def test_ab_tolerance_comes_from_the_calibrated_ab_noise():
    # H200: identical small kernels differed by up to 3.2% between processes; a baseline
    # calibrated with --ab-ref stores that spread, and A/B is judged against it
    noisy = base_case(A)
    noisy["noise"]["ab"] = 0.016                      # tolerance 2.5 x 1.6% = 4%
    v = one_verdict([ab_result(A, 1.03)], baseline(**{A.id: noisy}))[1]
    assert v.ab.tolerance == pytest.approx(scaled(0.016, NOISE_FACTOR))
    assert v.ab.verdict == "unchanged" and v.verdict == "unchanged"
    v = one_verdict([ab_result(A, 1.06)], baseline(**{A.id: noisy}))[1]
    assert v.ab.verdict == "regressed"
    quiet = base_case(A)
    quiet["noise"]["ab"] = 0.001                      # the floor wins
    v = one_verdict([ab_result(A, 1.03)], baseline(**{A.id: quiet}))[1]
    assert v.ab.tolerance == DEFAULT_FLOOR and v.ab.verdict == "regressed"


def test_a_reference_tile_other_than_the_current_is_named():
    from dataclasses import replace

    base = baseline(**{A.id: base_case(A)})
    r = ab_result(A, 1.0)
    same = replace(r, telemetry={"triton_config": "64x64x32 g8 s3 w4",
                                 "reference_config": "64x64x32 g8 s3 w4"})
    assert "reference kernel ran tile" not in one_verdict([same], base)[1].note
    other = replace(r, telemetry={"triton_config": "64x64x32 g8 s3 w4",
                                  "reference_config": "128x64x32 g8 s3 w4"})
    note = one_verdict([other], base)[1].note
    assert "A/B: the reference kernel ran tile 128x64x32 g8 s3 w4" in note


def test_ab_does_not_hide_what_the_stored_baseline_sees():
    # both kernels slowed alike (a Triton upgrade): A/B unchanged, the ratio still regressed
    base = baseline(**{A.id: base_case(A)})
    v = one_verdict([ab_result(A, 1.0, ratio_scale=0.9)], base)[1]
    assert v.ab.verdict == "unchanged" and v.ratio.verdict == "regressed"
    assert v.verdict == "regressed"


def test_ab_column_and_json():
    base = baseline(**{A.id: base_case(A)})
    gate = compare_json([ab_result(A, 1.0)], base)
    assert "A/B change" in markdown(gate, "cpu", "0123456789abcdef")
    assert "`0123456789ab`" in markdown(gate, "cpu", "0123456789abcdef")
    assert gate.verdicts[0].to_json()["ab"]["verdict"] == "unchanged"
    no_ab = compare_json([result(A)], base).verdicts[0]
    assert no_ab.ab is None and no_ab.to_json()["ab"] is None


# --- the verdict policy: the stored judgement's noise level ---------------------------------
# (gemmgate/gate.py module docstring). A baseline case calibrated on h1 (twice) and h2,
# process noise 0.4% (tolerance: the 1.5% floor), machine noise 3% (tolerance 7.9%); the
# run's ratio is ~5.3% below the stored 0.95: between the two tolerances.

TWO_HOSTS = ("h1", "h1", "h2")


def _levels_case(machine=0.03, ratio=0.95, **kw) -> dict:
    return base_case(A, ratio, noise_ratio=0.004, machines=TWO_HOSTS, machine=machine,
                     tflops_machine=0.04 if machine else None, **kw)


def test_stored_level_of_a_machine():
    case = from_json(baseline(**{A.id: _levels_case()})).cases[f"fp32-{A.id}"]
    assert stored_level(case, "h1") == stored_level(case, "h2") == "process"
    assert stored_level(case, "h3") == "machine"
    lone = from_json(baseline(**{A.id: _levels_case(machine=None)})).cases[f"fp32-{A.id}"]
    assert stored_level(lone, "h1") == "process" and stored_level(lone, "h3") == "advisory"


def test_judge_case_takes_the_machine_the_case_ran_on():
    case = from_json(baseline(**{A.id: _levels_case()})).cases[f"fp32-{A.id}"]
    assert judge_case(result(A), case, DEFAULT_FLOOR, "h1").level == "process"
    assert judge_case(result(A), case, DEFAULT_FLOOR, "h3").level == "machine"
    assert judge_case(result(A), case, DEFAULT_FLOOR).level == "machine"   # no machine named
    failed = judge_case(result(A, t_acc="fail"), case, DEFAULT_FLOOR, "h1")
    assert failed.verdict == "failed" and failed.level == ""


def test_on_a_calibration_machine_the_process_level_judges():
    base = baseline(**{A.id: _levels_case()})
    gate, v = one_verdict([result(A)], base, env={"host": "h2"})
    assert v.level == "process" and v.ratio.tolerance == DEFAULT_FLOOR
    # no process-level TFLOP/s noise stored: the pooled (machine) spread, never narrower
    assert v.tflops.tolerance == pytest.approx(scaled(0.04, NOISE_FACTOR))
    assert v.verdict == "regressed" and gate.failed
    assert v.note.startswith("stored: process-level -1.48%/+1.50%")


def test_on_another_machine_the_machine_level_judges_with_the_wider_tolerance():
    base = baseline(**{A.id: _levels_case()})
    gate, v = one_verdict([result(A)], base, env={"host": "h3"})
    assert v.level == "machine"
    assert v.ratio.tolerance == pytest.approx(scaled(0.03, NOISE_FACTOR))
    assert v.tflops.tolerance == pytest.approx(scaled(0.04, NOISE_FACTOR))    # TFLOP/s: same level
    assert v.ratio.change == pytest.approx(0.9 / 0.95 - 1, abs=0.003)   # beyond 1.5%, within 7.9%
    assert v.verdict == "unchanged" and not gate.failed
    assert v.note == "stored: machine-level -7.33%/+7.91%"
    # a change beyond the machine-level tolerance still regresses, and fails the gate
    gate, v = one_verdict([result(A)], baseline(**{A.id: _levels_case(ratio=1.0)}),
                   env={"host": "h3"})
    assert v.level == "machine" and v.verdict == "regressed" and gate.failed


def test_the_machine_is_host_and_gpu_another_gpu_of_the_same_host_is_another_machine():
    from dataclasses import replace

    base = baseline(**{A.id: base_case(A, 0.95, machines=("h1/GPU-a",) * 3)})
    on_a = replace(result(A), telemetry={"gpu_uuid": "GPU-a"})
    on_b = replace(result(A), telemetry={"gpu_uuid": "GPU-b"})
    assert one_verdict([on_a], base, env={"host": "h1"})[1].level == "process"
    assert one_verdict([on_b], base, env={"host": "h1"})[1].level == "advisory"
    assert one_verdict([on_a], base, env={"host": "h2"})[1].level == "advisory"


def test_advisory_a_stored_regression_alone_is_inconclusive_and_does_not_fail():
    base = baseline(**{A.id: _levels_case(machine=None)})
    gate, v = one_verdict([result(A)], base, env={"host": "h3"})
    assert v.level == "advisory"
    assert v.ratio.verdict == "regressed"                       # shown ...
    assert v.verdict == "inconclusive" and not gate.failed      # ... but decides nothing
    assert annotations(gate) == []
    assert v.note.startswith("stored: advisory-level -1.48%/+1.50%; stored judgement advisory: ")
    assert "not in the calibration" in v.note and "gemmgate baseline merge" in v.note
    assert gate.count("inconclusive") == 1
    # an advisory improvement is not reported as one either; agreement is "unchanged"
    v = one_verdict([result(A)], baseline(**{A.id: _levels_case(machine=None, ratio=0.85)}),
             env={"host": "h3"})[1]
    assert v.ratio.verdict == "improved" and v.verdict == "inconclusive"
    v = one_verdict([result(A)], baseline(**{A.id: _levels_case(machine=None, ratio=0.9)}),
             env={"host": "h3"})[1]
    assert v.verdict == "unchanged" and "advisory:" not in v.note
    assert v.note == "stored: advisory-level -1.48%/+1.50%"


def test_a_case_without_a_ratio_is_judged_at_its_tflops_machine_level():
    """A case with no stored ratio (the vendor unsupported) is judged on Triton's TFLOP/s:
    merged from three machines, its TFLOP/s machine noise was measured, yet on a fourth
    machine it was "advisory" ("machine noise is unmeasured") and Triton 2x slower passed."""
    from gemmgate.baseline_noise import from_runs

    tf = A.flops / 1e-3 / 1e12
    rng = random.Random(1)
    runs = [tf * (1 + rng.gauss(0, 0.01)) for _ in range(15)]
    noise = from_runs([], [], runs, [f"m{i // 5}" for i in range(15)], [], 15)
    case = {**base_case(A, None), "noise": noise.to_json()}
    assert noise.machine is None and noise.tflops_machine is not None
    slower = result(A, t_ms=2.0, v_acc="unsupported")
    gate, v = one_verdict([slower], baseline(**{A.id: case}), env={"host": "m9"})
    assert v.level == "machine" and v.tflops.verdict == "regressed"
    assert v.verdict == "regressed" and gate.failed and "unmeasured" not in v.note
    # with no machine-level figure at all it stays advisory
    alone = from_runs([], [], runs[:5], ["m0"] * 5, [], 5)
    _, v = one_verdict([slower], baseline(**{A.id: {**case, "noise": alone.to_json()}}),
                       env={"host": "m9"})
    assert v.level == "advisory" and v.verdict == "inconclusive"


def test_a_run_without_a_host_is_not_on_a_calibration_machine():
    base = baseline(**{A.id: base_case(A, 0.95)})
    v = compare_run([result(A)], from_json(base), DEFAULT_FLOOR).verdicts[0]   # no env
    assert v.level == "advisory" and v.verdict == "inconclusive"


@pytest.mark.parametrize("stored_ratio, slower, stored, ab, verdict", [
    # advisory stored side: A/B decides
    (0.95, 1.03, "regressed", "regressed", "regressed"),
    (0.95, 1.00, "regressed", "unchanged", "unchanged"),
    (0.85, 1.00, "improved", "unchanged", "unchanged"),
    (0.90, 0.95, "unchanged", "improved", "improved"),
    # the advisory side decides nothing, a stored regression included: A/B improved stands
    (0.95, 0.95, "regressed", "improved", "improved"),
])
def test_advisory_with_ab_the_ab_verdict_decides(stored_ratio, slower, stored, ab, verdict):
    base = baseline(**{A.id: _levels_case(machine=None, ratio=stored_ratio)})
    gate, v = one_verdict([ab_result(A, slower)], base, env={"host": "h3"})
    assert (v.level, v.ratio.verdict, v.ab.verdict) == ("advisory", stored, ab)
    assert v.verdict == verdict and gate.failed == (verdict == "regressed")


@pytest.mark.parametrize("stored_ratio, slower, stored, ab, at_process, at_machine", [
    (0.90, 0.95, "unchanged", "improved", "improved", "improved"),
    # on a calibrated GPU the stored side decides too: improved only if not regressed
    (0.98, 0.95, "regressed", "improved", "regressed", "improved"),
    # on another GPU, A/B measured the kernels side by side: a machine-level stored
    # regression is this machine's offset (or older than the reference), not gated
    (0.98, 1.00, "regressed", "unchanged", "regressed", "unchanged"),
    (0.80, 1.00, "improved", "unchanged", "unchanged", "unchanged"),  # A/B says "improved"
    (0.90, 1.03, "unchanged", "regressed", "regressed", "regressed"),
    (0.80, 1.03, "improved", "regressed", "regressed", "regressed"),
])
def test_with_ab_the_stored_side_decides_only_on_a_calibrated_gpu(
        stored_ratio, slower, stored, ab, at_process, at_machine):
    base = baseline(**{A.id: _levels_case(ratio=stored_ratio)})
    for host, level, verdict in (("h1", "process", at_process), ("h3", "machine", at_machine)):
        gate, v = one_verdict([ab_result(A, slower)], base, env={"host": host})
        assert (v.level, v.ratio.verdict, v.ab.verdict) == (level, stored, ab)
        assert v.verdict == verdict and gate.failed == (verdict == "regressed")
        not_gated = level == "machine" and stored != "unchanged"
        assert ("stored judgement not gated" in v.note) == not_gated


@pytest.mark.parametrize("host, level", [("h1", "process"), ("h3", "machine")])
def test_improved_obeys_the_same_tolerance_as_regressed(host, level):
    """Symmetric: a change of +x and of -x get the same tolerance; inside it both are
    unchanged, beyond it one is improved and the other regressed."""
    def judged(change):
        case = base_case(A, 0.9 / (1 + change), noise_ratio=0.02, machines=TWO_HOSTS,
                         machine=0.02)                        # both levels: tolerance 5%
        return one_verdict([result(A)], baseline(**{A.id: case}), env={"host": host})[1]

    inside = [judged(+0.04), judged(-0.04)]
    beyond = [judged(+0.07), judged(-0.07)]
    assert {v.level for v in inside + beyond} == {level}
    tol = scaled(0.02, NOISE_FACTOR)   # 5.18%
    assert [v.ratio.tolerance for v in inside + beyond] == [pytest.approx(tol)] * 4
    assert [v.verdict for v in inside] == ["unchanged", "unchanged"]
    assert [v.verdict for v in beyond] == ["improved", "regressed"]


def test_ab_improved_obeys_the_same_tolerance_as_ab_regressed():
    case = base_case(A)
    case["noise"].update(ab=0.02, ab_runs=[1.0, 1.02, 1.0, 0.99, 1.01])   # tolerance 5%
    base = baseline(**{A.id: case})
    got = {change: one_verdict([ab_result(A, 1 / (1 + change))], base)[1]
           for change in (0.04, -0.04, 0.07, -0.07)}
    assert [v.ab.tolerance for v in got.values()] == [pytest.approx(scaled(0.02, NOISE_FACTOR))] * 4
    assert [got[c].verdict for c in (0.04, -0.04, 0.07, -0.07)] == [
        "unchanged", "unchanged", "improved", "regressed"]


def test_the_level_is_in_the_json_the_note_and_the_gate_table():
    base = baseline(**{A.id: _levels_case(), B.id: base_case(B, machines=TWO_HOSTS),
                       C.id: base_case(C)})
    gate = compare_json([result(A), result(B, seed=2), result(C, seed=3)], base,
                    env={"host": "h3"})
    by = {v.key: v for v in gate.verdicts}
    assert [by[f"fp32-{c.id}"].level for c in (A, B, C)] == ["machine", "advisory", "advisory"]
    assert by[f"fp32-{A.id}"].to_json()["level"] == "machine"
    assert "stored: machine-level -7.33%/+7.91%" in by[f"fp32-{A.id}"].note
    assert GATE_HEAD.index("level") == GATE_HEAD.index("tolerance") + 1
    md = markdown(gate, "cpu").splitlines()
    head = next(line for line in md if line.startswith("| case |"))
    cols = [c.strip() for c in head.strip("|").split("|")]
    assert "level" in cols
    for c, level in ((A, "machine"), (B, "advisory")):
        row = next(line for line in md if line.startswith(f"| fp32-{c.id} |"))
        cells = dict(zip(cols, (x.strip() for x in row.strip("|").split("|"))))
        assert cells["level"] == level


# --- found while writing these tests (fixed since) ------------------------------------------

def _built(runs: list[tuple[str, float, str]]) -> dict:
    """The file's JSON of baselines.build() over one run per (host, Triton ms, vendor)
    entry, case A; vendor "-" is unsupported (no speed ratio: judged on TFLOP/s)."""
    from dataclasses import replace

    from gemmgate.results import RunRecord

    records = []
    for i, (host, t_ms, vendor) in enumerate(runs):
        r = result(A, t_ms=t_ms, seed=20 + i,
                   v_acc="unsupported" if vendor == "-" else "pass")
        t = r.providers["triton"]
        tf = A.flops / (t.median_ms * 1e-3) / 1e12
        r = replace(r, providers={**r.providers, "triton": replace(t, tflops=tf)})
        records.append(RunRecord({"chip": "cpu", "host": host}, "s", (r,)))
    return baselines.build(records, "cpu", "s").to_json()


def test_a_case_without_a_vendor_figure_is_judged_at_process_level_where_calibrated():
    base = _built([(HOST, 1.0, "-"), (HOST, 1.005, "-"), (HOST, 0.995, "-")])
    v = one_verdict([result(A, t_ms=1.2, v_acc="unsupported")], base)[1]   # -17% TFLOP/s
    assert v.level == "process" and v.verdict == "regressed"


@pytest.mark.parametrize("host, t_ms", [("h1", 1.0), ("h2", 1.04)])
def test_process_level_without_process_noise_is_not_narrower_than_the_runs_spread(host, t_ms):
    base = _built([("h1", 1.0, "v"), ("h2", 1.04, "v")])       # ratio 0.9 and ~0.865
    n = base["cases"][f"fp32-{A.id}"]["noise"]
    assert n["ratio"] is None and n["machine"] > 0.015
    # A/A: each host measures what it measured in the calibration, ~2% off the pooled
    # median; now h1 says "improved" and h2 "regressed" (the gate fails), at the floor
    v = one_verdict([result(A, t_ms=t_ms)], base, env={"host": host})[1]
    assert v.level == "process"
    assert v.ratio.tolerance >= NOISE_FACTOR * n["machine"]
    assert v.verdict == "unchanged"


def test_an_update_on_another_machine_does_not_make_its_figures_process_level_elsewhere():
    calibrated = from_json(_built([("h1", 1.0, "v"), ("h1", 1.002, "v"), ("h1", 0.998, "v")]))
    updated = from_json(_built([("h2", 1.0, "v")]))
    written = baselines.carry_noise(updated, calibrated).to_json()
    v = one_verdict([result(A)], written, env={"host": "h1"})[1]
    assert v.level != "process"


def test_on_a_calibration_machine_the_gate_compares_with_that_machines_own_runs():
    """H200, 2026-11-30: a baseline merged from two hosts has a pooled median that the
    other host pulls away; host Z measured bf16 1000^3 4.6% above it in all 30 A/A checks.
    At process level the gate compares with Z's own calibration runs."""
    data = base_case(A, 0.9, noise_ratio=0.004, machines=("h1", "h1", "h1", "h2", "h2"),
                     machine=0.03)
    data["noise"]["ratio_runs"] = [0.86, 0.86, 0.86, 0.9, 0.9]   # pooled median 0.86
    base = baseline(**{A.id: data})
    _, v = one_verdict([result(A)], base, env={"host": "h2"})          # h2 measures 0.9 again
    assert v.level == "process" and v.verdict == "unchanged"
    assert abs(v.ratio.change) < 0.005
    _, v = one_verdict([result(A)], base, env={"host": "h1"})          # h1 ran 0.86: +4.7%
    assert v.level == "process" and v.verdict == "improved"
    _, v = one_verdict([result(A)], base, env={"host": "h9"})          # elsewhere: pooled, wide
    assert v.level == "machine" and v.verdict == "unchanged"


def test_a_case_with_no_figure_on_either_side_is_inconclusive_not_unchanged():
    bc = base_case(A, ratio=None)
    bc["providers"]["triton"]["tflops"] = None          # nothing stored to compare with
    gate, v = one_verdict([result(A, t_ms=2.0)], baseline(**{A.id: bc}))
    assert v.verdict == "inconclusive" and v.ratio is None and v.tflops is None
    assert "not judged: no speed ratio or Triton TFLOP/s" in v.note


def test_a_zero_sample_is_left_out_of_the_tflops_figure_not_a_crash():
    ts = (0.0, *times(0, 1.0)[1:])
    gate, v = one_verdict([result(A, t_samples=ts)], baseline(**{A.id: base_case(A)}))
    assert v.verdict == "unchanged" and v.tflops.verdict == "unchanged"



@pytest.mark.parametrize("runs, factor", [(3, 5.55), (4, 3.43), (5, NOISE_FACTOR)])
def test_a_process_tolerance_is_scaled_for_the_runs_behind_it(runs, factor):
    """Three runs' spread is a poorer estimate of the noise than five's: its factor holds
    the false-alarm rate five runs give at NOISE_FACTOR (compare.RUNS_FACTOR)."""
    ratios = [0.9, 0.9 * 1.02] + [0.9] * (runs - 2)
    bc = base_case(A, noise_ratio=aa_noise(ratios), machines=(HOST,) * runs)
    bc["noise"]["ratio_runs"] = ratios
    v = one_verdict([result(A)], baseline(**{A.id: bc}))[1]
    assert v.ratio.tolerance == pytest.approx(scaled(aa_noise(ratios), factor), rel=1e-9)
    assert (f"({runs} runs: x{factor:g} the spread in log space)" in v.note) == (runs < 5)
    bc["noise"]["ratio"] = 0.015            # a figure its runs do not give: carried over
    bc["noise"]["runs"] = runs              # (`baseline update`): the calibration's count
    v = one_verdict([result(A)], baseline(**{A.id: bc}))[1]
    assert v.ratio.tolerance == pytest.approx(scaled(0.015, factor))
    bc["noise"]["runs"] = 10                # the count stored with it, where there is one
    bc["noise"]["behind"] = {"ratio": runs}
    v = one_verdict([result(A)], baseline(**{A.id: bc}))[1]
    assert v.ratio.tolerance == pytest.approx(scaled(0.015, factor))


@pytest.mark.parametrize("m, n", [(0, 64), (64, 0), (0, 0)])
def test_an_empty_output_is_empty_not_inconclusive(m, n):
    # M or N zero: both sides time a call that computes nothing, no ratio is kept; the
    # case was "inconclusive" on every check (a changed case in every PR comment)
    e = Case(m, n, 64)
    gate, v = one_verdict([result(e)], baseline(**{e.id: base_case(e, None)}))
    assert v.verdict == "empty" and "nothing to time" in v.note
    assert v.ratio is None and v.tflops is None and not gate.failed
    assert "1 empty (nothing to time)" in markdown(gate, "cpu")
    assert "No case changed." in comment(gate, "cpu")
    assert annotations(gate) == []


def test_an_empty_output_that_fails_accuracy_fails():
    e = Case(0, 64, 64)
    gate, v = one_verdict([result(e, t_acc="fail")], baseline(**{e.id: base_case(e, None)}))
    assert v.verdict == "failed" and gate.failed


def test_against_one_run_s_figure_the_tolerance_takes_the_one_run_factor():
    """After `baseline update` the figure compared with is its one run, the spread the
    calibration's 5 runs: the 5-run factor passed twice the false alarms it is set for
    (a review). At process level the factor is ONE_RUN_FACTOR's; 5 runs of its own, 2.5."""
    from gemmgate.compare import ONE_RUN_FACTOR

    bc = base_case(A, noise_ratio=0.015, machines=(HOST,))
    bc["noise"].update(ratio_runs=[0.9], runs=1, behind={"ratio": 5})
    v = one_verdict([result(A)], baseline(**{A.id: bc}))[1]
    assert v.level == "process"
    assert v.ratio.tolerance == pytest.approx(scaled(0.015, ONE_RUN_FACTOR[5]))
    assert "(5 runs: x3.21 the spread in log space)" in v.note
    bc["noise"].update(ratio_runs=[0.9] * 5, run_machines=[HOST] * 5, runs=5, behind={})
    v = one_verdict([result(A)], baseline(**{A.id: bc}))[1]
    assert v.ratio.tolerance == pytest.approx(scaled(0.015, NOISE_FACTOR))


def test_at_machine_level_one_runs_figure_takes_the_one_run_factor_too():
    """An update on machine F stores its one run, the merge's machine-level spread kept:
    a check on machine G compares with that run, not the machines' pooled median, and the
    5-machine factor passed 2.4% of A/A checks (a review's Monte Carlo; 1.1% with the
    one-run factor). A pooled figure of several runs keeps the machines' factor."""
    from gemmgate.compare import ONE_RUN_FACTOR, RUNS_FACTOR

    bc = base_case(A, machines=("f",), machine=0.01)
    bc["noise"].update(runs=1, behind={"machine": 3})
    v = one_verdict([result(A)], baseline(**{A.id: bc}), env={"host": "g"})[1]
    assert v.level == "machine"
    assert v.ratio.tolerance == pytest.approx(scaled(0.01, ONE_RUN_FACTOR[3]))
    bc = base_case(A, machines=("a", "b", "c"), machine=0.01)
    bc["noise"].update(behind={"machine": 3})
    v = one_verdict([result(A)], baseline(**{A.id: bc}), env={"host": "g"})[1]
    assert v.ratio.tolerance == pytest.approx(scaled(0.01, RUNS_FACTOR[3]))
