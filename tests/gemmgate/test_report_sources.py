"""gemmgate/report_sources.py: runs and baselines into typed rows (plots.Point) and
which source each chip's figures show: synthetic runs (tests/conftest.py
`synthetic_record`) and the committed baselines. Reads files; draws nothing."""

import math

import pytest

from gemmgate import report_sources
from gemmgate.chips import CHIPS
from tests.gemmgate.report_files import CPU_BASE, H200_BASE, trimmed_h200, write_run_file


@pytest.fixture
def run_file(tmp_path, synthetic_record):
    return write_run_file(tmp_path, synthetic_record)


def test_a_run_becomes_points_with_its_failure_errors_and_providers(run_file):
    (src,) = report_sources.load_sources([str(run_file)], [])
    assert (src.kind, src.chip, src.date[:10], src.commit[:7]) == ("run", "cpu", "2026-12-01",
                                                                   "c0ffee1")
    assert src.modes == ["fp32"] and len(src.points) == 5
    by = {p.label: p for p in src.points}
    bad = by["64×128×64"]
    assert bad.failed and bad.errors["triton"] == math.inf
    assert [p.label for p in src.points if p.failed] == ["64×128×64"]
    assert set(by["64×64×64"].tflops) == {"triton", "vendor", "reference"}
    assert by["64×64×64"].ratio == pytest.approx(0.9)
    assert by["32×64×48 rc+p5"].layout == "rc+p5"
    assert (bad.in_bytes, bad.out_bytes) == (4, 4)


def test_committed_baselines_become_points():
    cpu, h200 = report_sources.load_sources([], [str(CPU_BASE), str(H200_BASE)])
    assert cpu.kind == "baseline" and cpu.chip == "cpu" and cpu.modes == ["fp32", "fp16"]
    assert h200.chip == "nvidia-h200"
    assert h200.modes == ["fp32", "tf32", "bf16", "fp16", "fp8", "tf32x3"]
    assert not any(p.failed for p in cpu.points + h200.points)
    fp8 = next(p for p in h200.points if p.mode == "fp8")
    assert (fp8.in_bytes, fp8.out_bytes) == (1, 2)
    assert all(p.tflops.get("triton") for p in h200.points)


def test_ceilings_come_from_the_chip_table():
    h200 = CHIPS["nvidia-h200"]
    for mode in h200.modes:
        assert report_sources.ceilings("nvidia-h200", mode) == (h200.peak(mode), h200.mem_bw_gbs)
    assert report_sources.ceilings("cpu", "fp32") == (None, None)
    assert report_sources.ceilings("no-such-chip", "fp32") == (None, None)


_A_POINT = (object(),)   # (a source's points, not read here)


def _src(kind, chip, date, points=_A_POINT):
    return report_sources.Source(f"{kind}-{chip}-{date}", kind, chip, date, "", points)


def test_subjects_are_each_chips_newest_run_else_its_newest_baseline():
    srcs = [_src("run", "cpu", "2026-11-01"), _src("run", "cpu", "2026-12-01"),
            _src("baseline", "cpu", "2026-12-05"), _src("baseline", "nvidia-h200", "2026-11-01"),
            _src("baseline", "nvidia-h200", "2026-11-30")]
    assert [s.path for s in report_sources.subjects(srcs)] == [
        "run-cpu-2026-12-01", "baseline-nvidia-h200-2026-11-30"]


def test_an_empty_newer_run_does_not_hide_a_chips_cases():
    full = report_sources.Source("full", "run", "cpu", "2026-11-01", "", (object(),))
    empty = report_sources.Source("empty", "run", "cpu", "2026-12-01", "", ())
    assert [s.path for s in report_sources.subjects([full, empty])] == ["full"]


def test_a_run_stopped_before_its_first_case_does_not_hide_the_baseline():
    """A chip's only run, stopped before its first case (a cancelled CI job), was the
    chip's subject: a page of no figures, the baseline beside it never drawn (a review)."""
    empty = _src("run", "cpu", "2026-12-06", points=())
    base = _src("baseline", "cpu", "2026-12-01")
    assert [s.path for s in report_sources.subjects([empty, base])] == [base.path]


def test_a_copy_of_a_baseline_is_refused(tmp_path):
    """A copied baseline drew its history a step that never was (runs were refused so;
    baselines were not: a review)."""
    one = trimmed_h200(tmp_path)
    two = tmp_path / "copy.json"
    two.write_text(one.read_text())
    with pytest.raises(ValueError, match="copy.json holds the same calibration as the "
                                         "baseline .*nvidia-h200.json"):
        report_sources.load_sources([], [str(one), str(two)])
    assert len(report_sources.load_sources([], [str(one)])) == 1


def test_dates_of_other_offsets_are_ordered_by_the_instant():
    """ISO dates were ordered as text: 18:30-05:00 (23:30 UTC) came before 22:00+00:00,
    the older run the chip's headline and the history's last step, labelled 18:30 (a
    review)."""
    older = _src("run", "nvidia-h100", "2026-12-07T22:00:00+00:00")
    newer = _src("run", "nvidia-h100", "2026-12-07T18:30:00-05:00")
    assert [s.path for s in report_sources.subjects([older, newer])] == [newer.path]
    assert sorted([newer, older], key=lambda s: s.when) == [older, newer]
    assert newer.label == "run 2026-12-07 23:30 ?"
    odd = [_src("run", "cpu", d) for d in ("", "yesterday", "9999-12-31T23:00:00-05:00")]
    assert [s.label for s in odd] == ["run ? ?", "run yesterday ?",
                                      "run 9999-12-31 23:00 ?"]
    assert sorted(odd + [older], key=lambda s: s.when)[-1] is older
