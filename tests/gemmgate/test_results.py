"""gemmgate/results.py: the speed ratio a run reports and a baseline stores is the figure
the gate judges (the median of the per-round ratios), on synthetic samples."""

import json
import math
import re
from pathlib import Path

import pytest

from gemmgate import baselines, stats
from gemmgate.gate import judge_case
from gemmgate.results import (
    REFERENCE,
    CaseResult,
    ProviderResult,
    ResultsError,
    RunRecord,
    summary_by_mode,
)
from gemmgate.shapes import Case

# Rounds in two clock states (a GPU under its power cap moves between clocks inside a
# run): both providers 1.3x slower in the second state; Triton with its own jitter.
STATE = (1.0, 1.0, 1.3, 1.3, 1.3) * 6
JITTER = (1.00, 1.04, 0.96, 1.00, 1.02) * 6
HOST = "ci-host"


def _result(ref: bool = False) -> CaseResult:
    t = tuple(s * j for s, j in zip(STATE, JITTER))
    provs = {"triton": ProviderResult("triton", "pass", 1e-7, "", t),
             "vendor": ProviderResult("vendor", "pass", 1e-7, "", tuple(0.9 * s for s in STATE))}
    if ref:
        provs[REFERENCE] = ProviderResult(REFERENCE, "pass", 1e-7, "", tuple(STATE))
    return CaseResult("fp32", Case(64, 64, 64), provs)


def test_the_ratio_is_the_median_of_the_paired_rounds_not_the_ratio_of_medians():
    r = _result(ref=True)
    assert r.ratio == pytest.approx(0.9, rel=1e-12) == stats.median(r.ratio_samples)
    medians = r.providers["vendor"].median_ms / r.providers["triton"].median_ms
    assert medians == pytest.approx(0.9375, rel=1e-12)   # the other estimator: 4% off
    assert r.to_json()["ratio"] == r.ratio and r.to_json()["ratios"]["vendor"] == r.ratio
    assert r.ab_median == pytest.approx(1.0) and r.ratio_to(REFERENCE) == r.ab_median


def test_a_baseline_of_runs_judges_an_unchanged_run_unchanged():
    runs = [RunRecord({"chip": "cpu", "host": HOST}, "t", (_result(),)) for _ in range(3)]
    base = baselines.build(runs, "cpu", "t").cases["fp32-m64-n64-k64"]
    # (a 3% floor: Triton's ±4% jitter puts the median's CI at -2%, past a 1.5% band's
    # -1.48%, which is inconclusive: no slowdown past the tolerance ruled out)
    v = judge_case(_result(), base, 0.03, HOST)
    assert v.level == "process" and v.ratio.change == pytest.approx(0.0, abs=1e-12)
    assert v.verdict == "unchanged"
    assert judge_case(_result(), base, 0.015, HOST).verdict == "inconclusive"


def test_a_blocked_run_pairs_its_rounds_not_its_calls():
    """--block 3: each provider's three calls in a row are one round; the ratio, the A/B
    and the gate's TFLOP/s samples are one a round (their medians), and a run file's
    environment carries the block back in."""
    t = (1.0, 1.1, 0.9, 2.0, 2.2, 1.8)            # two rounds at two clocks
    v = (0.9, 0.95, 1.0, 1.8, 2.0, 1.9)
    r = CaseResult("fp32", Case(64, 64, 64), {
        "triton": ProviderResult("triton", "pass", 1e-7, "", t),
        "vendor": ProviderResult("vendor", "pass", 1e-7, "", v)}, block=3)
    assert r.round_ms("triton") == [1.0, 2.0]
    assert r.ratio_samples == pytest.approx((0.95, 0.95))
    assert CaseResult(r.mode, r.case, r.providers).ratio_samples != r.ratio_samples
    record = RunRecord({"chip": "cpu", "block": 3}, "t", (r,))
    again = RunRecord.from_json(json.loads(json.dumps(record.to_json())))
    assert again.cases[0].block == 3 and again.cases[0].ratio_samples == r.ratio_samples
    assert RunRecord.from_json({**record.to_json(), "environment": {}}).cases[0].block == 1
    for bad in (0, 1001, 2.0, True, "3"):
        with pytest.raises(ResultsError, match="environment.block"):
            RunRecord.from_json({**record.to_json(), "environment": {"block": bad}})


@pytest.mark.parametrize("field", ["chip", "commit", "date", "host", "timing", "run_id",
                                   "device_name"])
@pytest.mark.parametrize("bad", [5, ["cpu"], {"a": 1}, True])
def test_a_run_s_environment_text_of_another_type_is_refused_naming_it(field, bad):
    """Merges and baselines read these as text: a chip of 5 raised a bare TypeError in a
    merge's sort, a commit of 7 one that named the merge's output file (a review)."""
    record = RunRecord({"chip": "cpu", "commit": "abc"}, "t", (_result(),)).to_json()
    assert RunRecord.from_json(record).environment["commit"] == "abc"
    with pytest.raises(ResultsError, match=rf"<run>: environment.{field} is .*not a string"):
        RunRecord.from_json({**record, "environment": {**record["environment"], field: bad}})


@pytest.mark.parametrize("bad", [5, "text", {"uuid": "u-1"}, [5]])
def test_a_run_s_gpu_records_of_another_type_are_refused_naming_them(bad):
    """`environment.gpus` is read by a baseline's machine records: 5 was "'int' object is
    not iterable", naming no file (a review); null is none, as a CPU run has none."""
    from gemmgate.baselines import build

    record = RunRecord({"chip": "cpu"}, "t", (_result(),)).to_json()
    nulled = RunRecord.from_json({**record, "environment": {"chip": "cpu", "gpus": None}})
    assert build([nulled], "cpu", "t").cases
    with pytest.raises(ResultsError, match=r"<run>: environment.gpus is .*not a list of GPU"):
        RunRecord.from_json({**record, "environment": {"chip": "cpu", "gpus": bad}})


def test_a_blocked_case_s_median_is_the_rounds_median_everywhere():
    """--block 2, Triton's calls 1 5 | 1 5 | 4 4: the rounds are 3, 3, 4, so its median is
    3 ms, as its TFLOP/s and the gate take it; over the six calls it was 4, and baselines,
    tuning tables and sweeps stored that one (a review)."""
    t = (1.0, 5.0, 1.0, 5.0, 4.0, 4.0)
    r = CaseResult("fp32", Case(64, 64, 64), {
        "triton": ProviderResult("triton", "pass", 1e-7, "", t),
        "vendor": ProviderResult("vendor", "pass", 1e-7, "", (2.0,) * 6)}, block=2)
    tri = r.providers["triton"]
    assert tri.block == 2 and tri.median_ms == 3.0 and r.round_ms("triton") == [3.0, 3.0, 4.0]
    assert ProviderResult("triton", "pass", 1e-7, "", t).median_ms == 4.0   # a lone call a round
    d = json.loads(json.dumps(RunRecord({"chip": "cpu", "block": 2}, "t", (r,)).to_json()))
    assert d["cases"][0]["providers"]["triton"]["median_ms"] == 3.0
    again = RunRecord.from_json(d).cases[0]
    assert again.providers["triton"].median_ms == 3.0 and again == r


def test_no_paired_rounds_no_ratio():
    r = _result()
    lone = CaseResult(r.mode, r.case, {**r.providers, "vendor": ProviderResult(
        "vendor", "unsupported", None, "", ())})
    assert lone.ratio is None and lone.ratio_samples == () and lone.to_json()["ratio"] is None



@pytest.mark.parametrize("case", [Case(0, 64, 64), Case(64, 0, 64), Case(0, 0, 0)])
def test_an_empty_output_has_no_ratio_and_stays_out_of_the_geomean(case):
    """Both sides time a call that computes nothing: no speed ratio, no A/B, and the
    mode's geomean is over the cases that compute something."""
    r = _result(ref=True)
    empty = CaseResult(r.mode, case, r.providers)
    assert empty.ratio is None and empty.ratio_samples == () and empty.ab_median is None
    assert summary_by_mode((r, empty))["fp32"]["geomean_ratio"] == pytest.approx(r.ratio)
    k0 = CaseResult(r.mode, Case(64, 64, 0), r.providers)   # K zero: an output to zero
    assert k0.ratio == pytest.approx(r.ratio)

def _run_json() -> dict:
    return json.loads(json.dumps(RunRecord({"chip": "cpu"}, "t", (_result(),)).to_json()))


@pytest.mark.parametrize("edit, said", [
    (lambda d: d["cases"].append(dict(d["cases"][0])), "repeats case fp32-m64-n64-k64"),
    (lambda d: d["cases"][0]["providers"]["triton"].update(error=-1.0), "not a relative error"),
    (lambda d: d["cases"][0]["providers"]["triton"].update(tflops=-5),
     "not a number from 0 to 1e+06"),
    (lambda d: d["cases"][0]["providers"]["triton"].update(tflops=1e300),
     "tflops is 1e+300, not a number from 0 to 1e+06"),
    (lambda d: d["cases"][0]["providers"]["triton"].update(samples_ms=[1e-200] * 6),
     "triton.samples_ms is not a list of times in ms (0, or 1e-06 to 1e+07)"),
    (lambda d: d["cases"][0]["providers"]["vendor"].update(samples_ms=[1e200] * 6),
     "vendor.samples_ms is not a list of times in ms"),
    (lambda d: d["cases"][0].update(peak_tflops="x"), "peak_tflops is 'x'"),
    (lambda d: d["cases"][0].update(m=10**400), "not an integer in [0, 2**40)"),
    (lambda d: d["cases"][0]["providers"]["vendor"].update(message=5), "message is not text"),
    # a merge of it was a KeyError traceback, exit 1 (a review)
    (lambda d: d["cases"][0].update(telemetry={"tuning": {"key": "k"}}),
     "telemetry.tuning is not a tile record"),
    (lambda d: d["cases"][0].update(telemetry={"tuning": "64x64"}),
     "telemetry.tuning is not a tile record"),
])
def test_a_run_file_that_would_mislead_a_report_is_refused_naming_the_field(edit, said):
    data = _run_json()
    edit(data)
    with pytest.raises(ResultsError, match=re.escape(said)):
        RunRecord.from_json(data, "r.json")


def test_a_null_message_reads_as_none_given_and_the_run_round_trips():
    data = _run_json()
    data["cases"][0]["providers"]["vendor"]["message"] = None
    rec = RunRecord.from_json(data, "r.json")
    assert rec.cases[0].providers["vendor"].message == ""
    assert RunRecord.from_json(_run_json(), "r.json").to_json() == _run_json()


def test_an_integer_past_pythons_digit_limit_is_a_clear_error(tmp_path):
    p = tmp_path / "r.json"
    p.write_text(json.dumps(_run_json()).replace('"m": 64', '"m": ' + "9" * 5000))
    with pytest.raises(ResultsError, match="is not JSON"):
        RunRecord.load(p)


@pytest.mark.parametrize("excess", [None, 0.0, 3.5e-4])
def test_a_providers_excess_round_trips_and_older_runs_have_none(excess):
    block = None if excess is None else 2 * excess
    p = ProviderResult("triton", "pass", 1.66e-3, "", (0.1, 0.2), 5.0, excess,
                       block_excess=block, element=None if excess is None else 4 * excess)
    d = p.to_json()
    assert ProviderResult.from_json("triton", d, "w") == p
    del d["excess"], d["block_excess"], d["element"]   # a run before session 58 (block:
    back = ProviderResult.from_json("triton", d, "w")   # session 70, element: 79)
    assert back.excess is None and back.block_excess is None and back.element is None


@pytest.mark.parametrize("field", ["excess", "block_excess", "element"])
def test_a_negative_excess_is_refused(field):
    d = ProviderResult("triton", "pass", 1e-3, "", (0.1,), 1.0, 1e-4).to_json()
    d[field] = -1.0
    with pytest.raises(ResultsError, match=field):
        ProviderResult.from_json("triton", d, "w")


@pytest.mark.parametrize("edit, said", [
    # an integer past a float's range (JSON reads 400 digits as an int, not inf): an
    # OverflowError traceback, exit 1, in every number field (a review)
    (lambda d: d["cases"][0]["providers"]["triton"]["samples_ms"].__setitem__(0, 10**400),
     "triton.samples_ms is not a list of times"),
    (lambda d: d["cases"][0]["providers"]["triton"].update(tflops=10**400), "triton.tflops"),
    (lambda d: d["cases"][0]["providers"]["vendor"].update(error=10**400), "vendor.error"),
    (lambda d: d["cases"][0]["providers"]["triton"].update(element=10**400), "element"),
    (lambda d: d["cases"][0].update(peak_tflops=10**400), "peak_tflops"),
    (lambda d: d["environment"].update(inject_slowdown=10**400),
     "environment.inject_slowdown"),
    # read as none by `report` (a slowed check its headline) where merge/trials refuse it
    (lambda d: d["environment"].update(inject_slowdown="0.5"),
     "environment.inject_slowdown is '0.5', not a number from 0 to 10"),
    (lambda d: d["environment"].update(inject_slowdown=-1), "inject_slowdown is -1"),
    # a TFLOP/s figure where nothing could measure one (run.py writes null there)
    (lambda d: (d["cases"][0].update(m=0),
                d["cases"][0]["providers"]["triton"].update(tflops=0.5)),
     "triton.tflops is 0.5 where the case computes no FLOPs"),
    (lambda d: d["cases"][0]["providers"]["vendor"].update(samples_ms=[], tflops=0.5),
     "vendor.tflops is 0.5 where nothing was timed"),
    # int() reads "1_6" as 16 and "１" as 1: a case the file does not name
    (lambda d: d["cases"][0].update(layout="rr+p1_6"), "the pad after +p is not"),
    (lambda d: d["cases"][0].update(layout="rr+p\uff11"), "the pad after +p is not"),
])
def test_a_hand_edited_number_is_a_named_error_not_a_traceback(edit, said):
    data = _run_json()
    edit(data)
    with pytest.raises(ResultsError, match=re.escape(said)):
        RunRecord.from_json(data, "r.json")


def test_a_huge_integer_in_a_run_file_is_exit_2_naming_it(tmp_path, capsys):
    from gemmgate.cli import main

    p = tmp_path / "r.json"
    p.write_text(json.dumps(_run_json()).replace('"tflops": null', '"tflops": 1'
                                                 + "0" * 400, 1))
    assert main(["report", str(p), "-o", str(tmp_path / "out")]) == 2
    assert "triton.tflops is 1000" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()



def test_a_nan_in_a_field_no_check_reads_is_exit_2_naming_file_and_field(tmp_path, capsys):
    """gemmgate writes no NaN (allow_nan=False); a hand-edited one in a field the run's
    checks do not read reached `baseline merge`'s write of the baseline: exit 2 with "Out
    of range float values are not JSON compliant: nan", naming neither file nor field."""
    from gemmgate.cli import main

    data = _run_json()
    data["environment"].update(machine_id=float("nan"), commit=None)
    run = tmp_path / "r.json"
    run.write_text(json.dumps(data))
    out, base = tmp_path / "out.json", Path(__file__).parents[2] / "baselines" / "cpu.json"
    assert main(["baseline", "merge", "--output", str(out), str(base), str(run)]) == 2
    assert f"run file {run}: environment.machine_id is NaN" in capsys.readouterr().err
    assert not out.exists()
    data["environment"]["machine_id"] = "m1"   # anywhere, named by its path
    data["cases"][0]["telemetry"]["tuning"] = {"key": "k", "config": {"block_m": -math.inf}}
    run.write_text(json.dumps(data))
    with pytest.raises(ResultsError, match=re.escape(
            f"{run}: cases[0].telemetry.tuning.config.block_m is NaN or Infinity")):
        RunRecord.load(run)
