"""gemmgate/report.py: the run tables (rich and Markdown) and the run JSON, on synthetic
CaseResults (no timing, no torch work)."""

import io
import json

import pytest
from rich.console import Console

from gemmgate.report import markdown, print_tables
from gemmgate.results import CaseResult, ProviderResult, RunRecord
from gemmgate.shapes import Case

CASE = Case(64, 64, 64)


def _result(t_ms=(1.0, 1.0, 1.0), v_ms=(0.5, 0.5, 0.5), ref_ms=None, t_acc="pass",
            mode="fp32") -> CaseResult:
    provs = {"triton": ProviderResult("triton", t_acc, 1e-7 if t_acc == "pass" else 0.3,
                                      "" if t_acc == "pass" else "error 3e-1 > 1e-2", t_ms),
             "vendor": ProviderResult("vendor", "pass", 2e-7, "", v_ms)}
    if ref_ms is not None:
        provs["reference"] = ProviderResult("reference", "pass", 1e-7, "", ref_ms)
    return CaseResult(mode, CASE, provs)


def _printed(results) -> str:
    buf = io.StringIO()
    print_tables(results, Console(file=buf, width=200), title="cpu smoke")
    return buf.getvalue()


def test_tables_show_ratio_errors_status_and_no_ab_column_without_a_reference():
    out = _printed([_result()])
    assert "cpu smoke fp32" in out and "A/B" not in out
    assert "0.5" in out and "1.0e-07" in out and "pass" in out
    assert "geomean Triton/vendor speed ratio 0.500, 1/1 passed" in out


def test_a_reference_adds_the_ab_column_with_the_median_per_round_ratio():
    # rounds: reference/triton = 1.1, 1.2, 1.3 -> median 1.2 (the current kernel faster)
    r = _result(t_ms=(1.0, 1.0, 1.0), ref_ms=(1.1, 1.2, 1.3))
    out = _printed([r])
    assert "A/B" in out and "1.200" in out
    md = markdown([r], "run")
    head = next(line for line in md.splitlines() if line.startswith("| shape"))
    row = next(line for line in md.splitlines() if line.startswith("| m64"))
    cells = dict(zip((c.strip() for c in head.strip("|").split("|")),
                     (c.strip() for c in row.strip("|").split("|"))))
    assert cells["A/B"] == "1.200" and cells["status"] == "pass"
    # a reference that failed accuracy is no yardstick: the gate judges no A/B there, and
    # the table showed its figure beside "pass" (a review)
    r.providers["reference"] = ProviderResult("reference", "fail", 0.5, "wrong", (1.1,) * 3)
    row = next(line for line in markdown([r], "run").splitlines() if line.startswith("| m64"))
    assert "1.100" not in row and "ref fail" in row


def test_an_accuracy_failure_is_named_in_the_status():
    md = markdown([_result(t_acc="fail")])
    assert "FAIL triton: error 3e-1 &gt; 1e-2" in md and "0/1 passed" in md   # (GitHub
    # shows ">": a bare "<" began a tag)
    md = markdown([_result(t_acc="unsupported")])   # said "FAIL" and nothing after it
    assert "FAIL triton:" in md and "0/1 passed" in md


def test_a_failing_case_leaves_the_geomean_and_its_message_stays_in_one_cell():
    bad = _result(v_ms=(5.0, 5.0, 5.0), t_acc="fail")       # a wrong kernel, 5x "faster"
    bad = CaseResult(bad.mode, Case(32, 32, 32), {**bad.providers, "triton": ProviderResult(
        "triton", "fail", 0.3, "CompilationError: at 3:4:\n  acc += a | b\n  ^",
        (1.0, 1.0, 1.0))})
    md = markdown([_result(), bad])
    assert "geomean ratio 0.500, 1/2 passed" in md            # the passing case's alone
    row = next(line for line in md.splitlines() if line.startswith("| m32"))
    assert "CompilationError: at 3:4: acc += a \\| b ^" in row
    head = next(line for line in md.splitlines() if line.startswith("| shape"))
    assert row.count(" | ") == head.count(" | ")               # no cell added by the pipe


def test_run_json_round_trips_and_keeps_every_provider():
    data = json.loads(json.dumps(_rj({"chip": "cpu"}, [_result(ref_ms=(1.0, 1.0, 1.0))],
                                          "smoke")))
    assert data["schema"] == "gemmgate.run/1" and data["shapes"] == "smoke"
    (case,) = data["cases"]
    assert set(case["providers"]) == {"triton", "vendor", "reference"}
    assert data["summary"]["fp32"]["cases"] == 1


def _rj(env, results, shapes):
    return RunRecord(env, shapes, tuple(results)).to_json()


def _with_extras() -> CaseResult:
    r = _result(t_ms=(1.0, 1.0, 1.0))
    extra = {"inductor": ProviderResult("inductor", "unsupported",
                                        message="inductor provider needs a CUDA GPU"),
             "team.gemm:mm": ProviderResult("team.gemm:mm", "pass", 1e-7, "", (2.0, 2.0, 2.0),
                                            0.5)}
    return CaseResult(r.mode, r.case, {**r.providers, **extra})


def test_extra_providers_get_their_tflops_ratio_and_status_columns():
    r = _with_extras()
    md = markdown([r], "run")
    head = next(line for line in md.splitlines() if line.startswith("| shape"))
    row = next(line for line in md.splitlines() if line.startswith("| m64"))
    cells = dict(zip((c.strip() for c in head.strip("|").split("|")),
                     (c.strip() for c in row.strip("|").split("|"))))
    assert cells["ratio"] == "0.5"                               # vendor, as before
    assert cells["team.gemm:mm TFLOP/s"] == "0.5" and cells["ratio vs team.gemm:mm"] == "2"
    assert cells["inductor TFLOP/s"] == "unsupported" and cells["ratio vs inductor"] == "—"
    assert cells["status"] == "pass"
    assert "geomean ratio 0.500, vs inductor —, vs team.gemm:mm 2.000, 1/1 passed" in md
    out = _printed([r])
    assert "vs team.gemm:mm 2.000" in out and "unsupported" in out


def test_the_run_json_has_every_ratio_and_each_extras_geomean():
    data = _rj({"chip": "cpu"}, [_with_extras()], "smoke")
    (case,) = data["cases"]
    assert case["ratio"] == 0.5
    assert case["ratios"] == {"vendor": 0.5, "inductor": None, "team.gemm:mm": 2.0}
    geo = data["summary"]["fp32"]["geomean_ratios"]
    assert geo["inductor"] is None and geo["team.gemm:mm"] == pytest.approx(2.0)
    again = RunRecord.from_json(json.loads(json.dumps(data))).cases[0]
    assert again.extras == ("inductor", "team.gemm:mm")


def test_without_extras_nothing_changes():
    r = _result()
    md = markdown([r])
    assert "ratio vs" not in md and "geomean_ratios" not in _rj({}, [r], "s")["summary"]["fp32"]


def _fp8(k: int, t_excess, v_excess) -> CaseResult:
    ms = (1.0, 1.0, 1.0)
    return CaseResult("fp8", Case(256, 256, k), {
        "triton": ProviderResult("triton", "pass", 2e-3, "", ms, excess=t_excess),
        "vendor": ProviderResult("vendor", "pass", 1.7e-3, "", ms, excess=v_excess)})


def test_a_sum_kept_below_the_others_is_noted_never_judged():
    """fp8's fast accumulation (Triton) beside cuBLAS's fp32 sums: noted with its range
    and K; cases within 3x of the vendor's, or under 1e-4, are not counted."""
    rs = [_fp8(1024, 5.5e-4, 2e-5), _fp8(11008, 2.4e-3, 3e-5), _fp8(253, 9e-5, 1e-6),
          _fp8(4096, 3.0e-4, 2e-4), _fp8(2048, None, 1e-5)]
    out = _printed(rs)
    assert ("note: triton's error beyond the output's own rounding is over 3x vendor's in "
            "2 of 5 cases (5.5e-04 to 2.4e-03, K 1024 to 11008)") in " ".join(out.split())
    assert "vendor's error beyond" not in out
    assert all(r.passed for r in rs)
    md = markdown(rs)
    assert "note: triton's error beyond" in md and "2 of 5 cases" in md


def test_the_note_says_fp16_judges_what_fp8_does_not():
    """The note said "not judged" of every mode, where fp16 downgrades a side whose
    excess is above its floor and over 3x the other's (`judging.judge_kept_less`; a
    review)."""
    from dataclasses import replace as swap
    fp8 = " ".join(_printed([_fp8(1024, 5.5e-4, 2e-5)]).split())
    assert "(not judged; docs/GATE.md)" in fp8
    fp16 = swap(_fp8(1024, 5.5e-4, 2e-5), mode="fp16")
    out = " ".join(_printed([fp16]).split())
    assert "(judged in fp16 above 2.2e-04 (downgraded); docs/GATE.md)" in out


def test_no_note_where_both_sides_keep_alike():
    out = _printed([_fp8(8192, 3.5e-4, 3.4e-4), _result()])
    assert "note:" not in out


def test_a_provider_more_precise_than_its_mode_is_noted():
    """tf32 at IEEE fp32 precision (a vendor whose tf32 switch did not take: ROCm's
    HIPBLASLT_ALLOW_TF32 unset) passed unseen: the check flags only too much error, and
    the ratio then compared tf32 with fp32."""
    r = _result(mode="tf32")
    r = CaseResult("tf32", CASE, {**r.providers, "triton": ProviderResult(
        "triton", "pass", 3e-4, "", (1.0, 1.0, 1.0))})   # vendor's 2e-7: fp32's precision
    out = _printed([r])
    assert "note: vendor's error is under 2e-05 in 1 of 1 tf32 cases" in out
    assert "triton's error is under" not in out
    assert "vendor's error is under" in markdown([r])
    assert "error is under" not in _printed([_result()])    # fp32: nothing to note
