"""gemmgate/report_page.py: the page written from a report's sources (index.html +
PNGs): synthetic runs (tests/conftest.py `synthetic_record`) and the committed baselines.
Checks files, references, PNG sizes, offline-ness; no pixels."""

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from gemmgate import report_page, report_sources
from gemmgate.results import ProviderResult
from gemmgate.shapes import Case
from tests.gemmgate.report_files import (
    CPU_BASE,
    ENV,
    ITEMS,
    trimmed_h200,
    with_failure_and_reference,
    write_run_file,
)


@pytest.fixture
def run_file(tmp_path, synthetic_record):
    return write_run_file(tmp_path, synthetic_record)


def test_a_chip_id_from_a_run_file_is_a_safe_name_and_id():
    assert report_page.slug('x"><img src=x onerror=alert(1)>') == "x___img_src_x_onerror_alert_1__"
    assert report_page.slug("nvidia/h100") == "nvidia_h100" and report_page.slug("") == "_"
    assert len(report_page.slug("c" * 300)) == 80


def _png_size(p: Path) -> tuple[int, int]:
    data = p.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", p
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_the_page_references_every_png_at_its_size_opens_offline_and_holds_each_view(
        tmp_path, run_file):
    out = tmp_path / "out"
    srcs = report_sources.load_sources([str(run_file)],
                                       [str(CPU_BASE), str(trimmed_h200(tmp_path))])
    images = report_page.write_report(srcs, out)
    html = (out / "index.html").read_text()
    tags = re.findall(r'<img src="([^"]+)" width="(\d+)" height="(\d+)"', html)
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert sorted(t[0] for t in tags) == pngs == sorted(i.file for i in images)
    for name, w, h in tags:
        assert _png_size(out / name) == (int(w), int(h))
        assert (out / name).stat().st_size > 5000
    assert not re.search(r"<script|https?://|src=\"//", html)     # no JS, nothing remote
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # no temp files
    names = {_bare(n) for n in pngs}
    for kind in ("heatmap", "tflops", "roofline", "errors"):
        assert f"s1-cpu-fp32-{kind}.png" in names               # the run, per mode
        assert f"s2-nvidia-h200-fp32-{kind}.png" in names       # the H200 baseline
    assert {"history-c0-cpu-fp32.png", "cross-fp32.png"} <= names
    # fp16: the baseline alone measured it (the run is fp32 only), so no history: drawn
    # over both, no case was common to all and its geomean was NaN (session 60's review)
    assert "history-c0-cpu-fp16.png" not in names
    assert not any(n.startswith("cross-fp16") for n in names)   # fp16: the CPU only
    assert "1 failing accuracy: 64×128×64" in html
    assert "<td>64×32×96 cr</td>" in html and "<td>32×64×48 rc+p5</td>" in html
    assert "History" in html and "Cross-chip" in html


def test_a_baseline_only_report_then_a_run_only_report_over_it(tmp_path, run_file):
    out = tmp_path / "o"
    images = report_page.write_report(report_sources.load_sources([], [str(CPU_BASE)]), out)
    assert sorted(_bare(i.file) for i in images) == sorted(
        f"s1-cpu-{m}-{k}.png" for m in ("fp32", "fp16")
        for k in ("heatmap", "tflops", "roofline", "errors"))
    images = report_page.write_report(report_sources.load_sources([str(run_file)], []), out)
    assert len(images) == 4
    html = (out / "index.html").read_text()
    assert "History" not in html and html.count("<img") == 4 and "baselines/" not in html
    assert sorted(p.name for p in out.glob("*.png")) == sorted(i.file for i in images)
    # (the baseline report's 8 figures are gone with the page that named them)


def _bare(name: str) -> str:
    """A report PNG's name without its token (`report_page.token`)."""
    assert re.fullmatch(r"r[0-9a-f]{8}-.+\.png", name), name
    return name[10:]


def _page_files(out: Path) -> dict[str, bytes]:
    """index.html and every file it names, by name."""
    html = (out / "index.html").read_text()
    return {"index.html": html.encode(),
            **{f: (out / f).read_bytes() for f in re.findall(r'<img src="([^"]+)"', html)}}


def test_a_report_stopped_part_way_leaves_the_earlier_page_whole(tmp_path, run_file,
                                                                 monkeypatch):
    """A report stopped while drawing (Ctrl-C, an error) redrew the earlier page's PNGs,
    same names, with the new inputs' figures, under the old index.html (a review): the
    folder looked like the old report, drawn from other data. Now the earlier page and
    every figure it names are left as they were; the next whole report removes the
    stopped one's figures and the earlier page's."""
    out = tmp_path / "o"
    report_page.write_report(report_sources.load_sources([str(run_file)], []), out)
    before = _page_files(out)
    real, saved = report_page._Writer.save, []

    def stop_after_three(self, fig, name, alt):
        if len(saved) == 3:
            raise KeyboardInterrupt
        saved.append(name)
        return real(self, fig, name, alt)

    monkeypatch.setattr(report_page._Writer, "save", stop_after_three)
    with pytest.raises(KeyboardInterrupt):
        report_page.write_report(report_sources.load_sources([], [str(CPU_BASE)]), out)
    assert _page_files(out) == before and len(saved) == 3
    monkeypatch.setattr(report_page._Writer, "save", real)
    images = report_page.write_report(report_sources.load_sources([], [str(CPU_BASE)]), out)
    assert sorted(p.name for p in out.glob("*.png")) == sorted(i.file for i in images)
    assert not set(before) & {i.file for i in images}


def test_other_pngs_in_the_folder_are_left_alone(tmp_path, run_file):
    out = tmp_path / "o"
    out.mkdir()
    (out / "notes.png").write_bytes(b"mine")
    (out / "r1234-x.png").write_bytes(b"mine too")   # not a token's 8 digits
    report_page.write_report(report_sources.load_sources([str(run_file)], []), out)
    report_page.write_report(report_sources.load_sources([], [str(CPU_BASE)]), out)
    assert (out / "notes.png").read_bytes() == b"mine"
    assert (out / "r1234-x.png").read_bytes() == b"mine too"


def test_a_provider_without_figures_is_left_out(tmp_path, synthetic_record):
    rec = synthetic_record(ITEMS[:1], environment=ENV)
    c = rec.cases[0]
    v = ProviderResult("vendor", "unsupported", None, "no fp8 here")
    rec = replace(rec, cases=(replace(c, providers={**c.providers, "vendor": v}),))
    (src,) = [report_sources.from_run("r.json", rec)]
    assert set(src.points[0].tflops) == {"triton"} and src.points[0].ratio is None


def test_an_extra_providers_failure_is_not_the_cases(run_file, synthetic_record):
    """The page marked a case failed (FAIL hatching, out of the geomean) where only an
    extra provider (--providers module:function) failed; the gate and the console judge
    Triton and the vendor alone."""
    rec = synthetic_record(ITEMS[:2], environment=ENV)
    cases = tuple(replace(c, providers={**c.providers, "mod:wrong": ProviderResult(
        "mod:wrong", "fail", 1.0, "off by one")}) for c in rec.cases)
    points = [report_sources.point_of_result(c) for c in cases]
    assert not any(p.failed for p in points) and all(not c.passed for c in cases)
    # but it is said, apart, and its bars marked: a wrong extra stood as the tallest bar,
    # "0 failing accuracy" on the page (a review)
    assert all(p.failed_by == ("mod:wrong",) for p in points)
    src = report_sources.Source("r.json", "run", "cpu", "2026-12-07", "abc", tuple(points))
    html = "".join(report_page._mode_section(report_page._Writer(run_file.parent), src, 0,
                                             points[0].mode))
    assert f"Failing accuracy beside them (not gated; bars hatched): mod:wrong in " \
           f"{len(points)} of {len(points)}" in html


def test_the_cross_chip_figure_leaves_out_failed_cases(tmp_path, run_file):
    """A wrong answer's speed was plotted beside the others, unmarked."""
    from gemmgate import plots_history

    (src,) = report_sources.load_sources([str(run_file)], [])
    base = report_sources.load_sources([], [str(CPU_BASE)])[0]
    fig = plots_history.cross_chip([report_page._series(src), report_page._series(base)],
                                   "fp32")
    right = fig.axes[1]
    drawn = sum(len(c.get_offsets()) for c in right.collections)
    want = sum(1 for p in src.points if p.mode == "fp32" and not p.failed and p.ratio) + \
        sum(1 for p in base.points if p.mode == "fp32" and not p.failed and p.ratio)
    assert drawn == want and any(p.failed for p in src.points)


def test_a_run_that_stopped_early_is_said_so_and_kept_out_of_history(tmp_path, run_file,
                                                                    synthetic_record):
    """`environment.incomplete` (a run stopped by --case-timeout, a dead worker) was drawn
    as the chip's current run without a word, and shrank the history's common cases."""
    part = tmp_path / "part.json"
    rec = synthetic_record(ITEMS[:1], environment={**ENV, "date": "2026-12-02T10:00:00+00:00",
                                                   "incomplete": "a case was stuck"})
    part.write_text(json.dumps(rec.to_json()))
    srcs = report_sources.load_sources([str(run_file), str(part)], [str(CPU_BASE)])
    assert [s.incomplete for s in srcs] == ["", "a case was stuck", ""]
    (subject,) = report_sources.subjects(srcs)
    assert subject.path == str(run_file)              # the newest complete run
    report_page.write_report(srcs, tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text()
    assert "<td>a case was stuck</td>" in page
    assert "history over 2 runs/baselines" in page    # the run and the baseline, not 3


def test_a_slowed_check_is_no_headline_nor_history_and_software_is_shown(tmp_path, run_file,
                                                                       synthetic_record):
    """A newer check with --inject-slowdown 0.5 on other software became the chip's
    headline and a history step, the page naming neither (a review). It is left out of
    both and said; the file table names each file's torch, triton, timing and block, and a
    history over mixed software says so."""
    slowed = tmp_path / "slowed.json"
    rec = synthetic_record(ITEMS, environment={**ENV, "date": "2026-12-03T10:00:00+00:00",
                                               "inject_slowdown": 0.5, "torch": "2.9.0"})
    slowed.write_text(json.dumps(rec.to_json()))
    other = tmp_path / "other.json"
    rec = synthetic_record(ITEMS, environment={**ENV, "date": "2026-12-02T10:00:00+00:00",
                                               "triton": "3.6.0"})
    other.write_text(json.dumps(rec.to_json()))
    srcs = report_sources.load_sources([str(run_file), str(slowed), str(other)], [])
    assert [s.injected for s in srcs] == [0.0, 0.5, 0.0]
    (subject,) = report_sources.subjects(srcs)
    assert subject.path == str(other)   # the newest run not slowed on purpose
    report_page.write_report(srcs, tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text()
    assert "<th>measured with</th>" in page and "<td>0.5</td>" in page
    assert "triton 3.6.0" in page and "history over 2 runs/baselines; measured with 2" in page
    (only,) = report_sources.subjects([srcs[1]])   # every run slowed: shown, and said so
    report_page.write_report([srcs[1]], tmp_path / "out2")
    assert "This check was slowed on purpose" in (tmp_path / "out2" / "index.html").read_text()


def test_two_runs_of_one_commit_and_day_are_told_apart_in_the_history():
    """Both were "cpu run 2026-12-07 cdbfdc0" on the history's axis (a review): the label
    has the minute, and where even that matches, the file's name."""
    a = report_sources.Source("/x/r1.json", "run", "cpu", "2026-12-07T09:13:00", "cdbfdc0aa",
                           (object(),))
    b = replace(a, path="/x/r2.json", date="2026-12-07T10:40:00")
    c = replace(a, path="/x/r3.json")
    assert a.label == "run 2026-12-07 09:13 cdbfdc0"
    names = [s.label for s in report_page._named_apart([a, b, c])]
    assert names == ["cpu run 2026-12-07 09:13 cdbfdc0 (r1.json)",
                     "cpu run 2026-12-07 10:40 cdbfdc0",
                     "cpu run 2026-12-07 09:13 cdbfdc0 (r3.json)"]


def test_a_case_without_a_ratio_is_named_and_the_geomeans_count_is_its_own(tmp_path,
                                                                           synthetic_record):
    """An empty output (M or N 0, as `tail` holds) has no speed ratio: the page said "over
    the 5 passing" of a geomean over 4, and without a failure nothing at all."""
    items = [*ITEMS, ("fp32", Case(0, 8, 8))]
    rec = with_failure_and_reference(synthetic_record(items, environment=ENV))
    p = tmp_path / "run.json"
    p.write_text(json.dumps(rec.to_json()))
    report_page.write_report(report_sources.load_sources([str(p)], []), tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text()
    assert "6 cases, 1 failing accuracy" in page
    assert "1 without a speed ratio" in page and "0×8×8" in page
    assert "over the 4 passing" in page and "over the 5 passing" not in page


def test_a_run_with_copies_per_call_says_so_and_a_history_beside_kept_copies_too():
    """`--copies per-call` times the operand copies in every call (trials and calibrate
    refuse it beside kept copies' figures): the file table said the same "measured with"
    for both, and a history mixing them said nothing (a review)."""
    kept = report_sources.software_of({"torch": "2.13", "triton": "3.9", "timing": "graph"})
    per_call = report_sources.software_of({"torch": "2.13", "triton": "3.9", "timing": "graph",
                                        "copies": "per-call"})
    assert kept != per_call and "copies per call" in per_call


def test_an_ab_runs_reference_is_named_on_the_page(tmp_path, run_file, synthetic_record):
    """An `--ab-ref` run's "reference" bars were drawn, and the page never said which
    kernel they are (a review)."""
    rec = with_failure_and_reference(synthetic_record(ITEMS, environment={
        **ENV, "ab_ref": "711b7a3f80982e1aa24145d29483b46b84a58333"}))
    p = tmp_path / "ab.json"
    p.write_text(json.dumps(rec.to_json()))
    report_page.write_report(report_sources.load_sources([str(p)], []), tmp_path / "out")
    assert "reference: the kernel at 711b7a3f8098" in (tmp_path / "out" / "index.html").read_text()


def test_a_provider_unsupported_in_every_case_is_said_not_dropped(tmp_path,
                                                                   synthetic_record):
    """inductor on the CPU is unsupported in every case: it drew nothing and the page
    never named it, where the terminal's table said "unsupported" (a review)."""
    from gemmgate.results import ProviderResult

    rec = synthetic_record(ITEMS, environment=ENV)
    rec = replace(rec, cases=tuple(replace(c, providers={
        **c.providers, "inductor": ProviderResult("inductor", "unsupported",
                                                  message="no GPU")}) for c in rec.cases))
    p = tmp_path / "ind.json"
    p.write_text(json.dumps(rec.to_json()))
    report_page.write_report(report_sources.load_sources([str(p)], []), tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text()
    assert f"Unsupported here (nothing drawn for it): inductor in {len(ITEMS)} of " \
        f"{len(ITEMS)}." in page


def test_a_cross_chip_view_of_no_shared_mode_says_so(tmp_path):
    """Two chips of no common mode: the page had a "Cross-chip" heading over nothing, and
    no word why (a review)."""
    from gemmgate.plots import Point
    cpu = report_sources.Source("a.json", "run", "cpu", "2026-12-01", "", (
        Point("fp32", 16, 16, 16, "rr", 1.0, {"triton": 1.0}),))
    h100 = report_sources.Source("b.json", "run", "nvidia-h100", "2026-12-01", "", (
        Point("fp16", 16, 16, 16, "rr", 1.0, {"triton": 1.0}),))
    w = report_page._Writer(tmp_path)
    page = "".join(report_page._cross(w, [cpu, h100]))
    assert not w.images and "Cross-chip" in page
    assert "No mode was measured on two of these chips" in page
    assert "cpu: fp32; nvidia-h100: fp16" in page
