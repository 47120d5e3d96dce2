"""gemmgate/gate_text.py: the gate's words from verdicts on synthetic samples
(tests/gemmgate/gate_cases.py): the Markdown summary and its table, the tolerance band,
the clock and software notes, the inconclusive reasons, the comment's cap and the GitHub
annotations. No timing, no torch work. The PR comment's layout: test_comment.py.
"""

from gemmgate.gate import CaseVerdict
from gemmgate.gate_text import annotations, markdown
from tests.gemmgate.gate_cases import (
    A,
    B,
    C,
    base_case,
    baseline,
    compare_json,
    mixed,
    one_verdict,
    result,
)


def test_markdown_counts_and_rows():
    gate = mixed()
    assert [v.verdict for v in gate.verdicts] == ["regressed", "unchanged", "improved",
                                                  "failed"]
    md = markdown(gate, "cpu")
    head = md.splitlines()[0]
    assert head.startswith("### gemmgate check on cpu: **FAILED**")
    assert ("1 regressed, 1 failed accuracy, 1 improved, 1 unchanged, 0 inconclusive"
            in head)
    for v in gate.verdicts:
        row = next(line for line in md.splitlines() if line.startswith(f"| {v.key} |"))
        assert f"| {v.verdict} |" in row
    regressed_row = next(line for line in md.splitlines() if f"fp32-{A.id} |" in line)
    assert f"{gate.verdicts[0].ratio.change:+.2%}" in regressed_row
    assert "Not run (in the baseline): fp32-m1-n1-k1" in md
    assert "Not in the baseline" not in md


def test_markdown_passed():
    gate, _ = one_verdict([result(A)], baseline(**{A.id: base_case(A)}))
    md = markdown(gate, "nvidia-h200")
    assert md.startswith("### gemmgate check on nvidia-h200: passed — 0 regressed, 0 failed "
                         "accuracy, 0 improved, 1 unchanged, 0 inconclusive")
    assert "Not run" not in md and md.endswith("\n")


def test_annotations_one_error_per_regression_or_failure():
    gate = mixed()
    lines = annotations(gate)
    assert len(lines) == 2
    reg, acc = lines
    assert reg.startswith(f"::error title=gemmgate regression::fp32-{A.id}: "
                          "Triton/vendor speed ratio -")
    assert "tolerance -1.48%25/+1.50%25" in reg
    assert acc == "::error title=gemmgate accuracy::fp32-m8-n8-k8: accuracy failure"
    assert all("\n" not in line for line in lines)


def test_clock_note_counts_cases_whose_clocks_were_held_down():
    from dataclasses import replace

    from gemmgate.gate_text import clock_note

    plain = result(A)
    capped = replace(result(B), telemetry={"clock_reasons": ["sw_power_cap"]})
    hot = replace(result(C), telemetry={"clock_reasons": ["sw_power_cap", "sw_thermal"]})
    idle = replace(result(A), telemetry={"clock_reasons": ["idle"]})  # not a hold-down
    assert clock_note([plain, idle]) == ""
    note = clock_note([plain, capped, hot, idle])
    assert note.startswith("Clocks were held down after 2 of 4 cases "
                           "(sw_power_cap 2, sw_thermal 1)")
    base = baseline(**{A.id: base_case(A)})
    md = markdown(compare_json([plain], base), "h200", None, note)
    assert note in md


def test_software_note_names_what_the_baseline_ran_on_that_this_run_does_not():
    from gemmgate.gate_text import software_note

    base = {"triton": "3.6.0", "torch": "2.11.0+cu130", "cuda": "13.0", "hip": None,
            "driver": "580.159.04", "python": "3.12.3", "commit": "a"}
    same = {**base, "python": "3.11.7", "commit": "b"}          # neither compiles kernels
    assert software_note(base, same) == ""
    assert software_note(base, {**base, "triton": None}) == ""   # not recorded: no claim
    note = software_note(base, {**base, "triton": "3.9.0", "driver": "590.1"})
    assert note.startswith("The baseline was measured on other software (triton 3.6.0 -> "
                           "3.9.0; driver 580.159.04 -> 590.1)")
    assert "--ab-ref" in note and "torch" not in note


def test_a_band_and_an_annotation_say_what_the_gate_applies():
    """The band is 1/(1+tol)-1 to +tol: "±10.0%" beside a -9.4% "regressed" read as inside
    it; and a note's newline ended an ::error, its next line read as a command (a review)."""
    from gemmgate.gate_text import _gh, band

    assert band(0.015) == "-1.48%/+1.50%" and band(0.10) == "-9.09%/+10.00%"
    assert band(1.01) == "-50.25%/+101.00%" and band(0.0) == "±0.00%"
    assert _gh("a 100% b\r\n::warning::x") == "a 100%25 b%0D%0A::warning::x"


def test_an_inconclusive_case_gives_its_own_reason():
    """One text ("beyond the tolerance, but advisory or the CI reaches the baseline") was
    said of every cause, most of them absent (a review)."""
    from gemmgate.compare import Judgement
    from gemmgate.gate_text import _unsure

    def case(j, level="process"):
        return CaseVerdict("k", "inconclusive", j, None, "", level=level)

    within = Judgement("inconclusive", 0.0, -0.04, 0.01, 0.03)
    beyond = Judgement("inconclusive", -0.05, -0.09, 0.01, 0.03)
    few = Judgement("inconclusive", -0.5, -0.5, -0.5, 0.015)
    stored = Judgement("regressed", -0.05, -0.06, -0.04, 0.015)
    assert _unsure(case(within)).startswith("within the tolerance, but its CI reaches -4.00%")
    assert _unsure(case(beyond)) == "beyond the tolerance, but the CI reaches the baseline"
    assert _unsure(case(few)).startswith("too few rounds for a 95% CI")
    assert _unsure(case(stored, "advisory")).startswith("beyond the tolerance at the advisory")


def test_a_comment_past_github_s_limit_is_cut_saying_so():
    """420 verdicts made 91,594 characters, which GitHub refuses (a review)."""
    from gemmgate.gate_text import COMMENT_MAX, _capped

    lines = [f"| row {i} | " + "x" * 200 for i in range(1000)]
    text = _capped(lines, [], "", [])
    assert len(text) <= COMMENT_MAX and text.startswith("| row 0 |")
    assert "more line(s) left out (GitHub's comment limit)" in text
    assert _capped(["short"], [], "", []) == "short\n"


def test_a_cut_comment_closes_its_fold_and_keeps_the_missing_cases():
    """Cut, the fold was left open around the notice and the "Not run" list was lost (a
    review: 3 regressed, 600 unchanged, one missing case)."""
    from gemmgate.gate import GateResult
    from gemmgate.gate_text import COMMENT_MAX, comment

    verdicts = tuple(CaseVerdict(f"fp32-m{i}-n1-k1", "regressed" if i < 3 else "unchanged",
                                 None, None, "x" * 80) for i in range(600))
    keys = tuple(f"fp8-m{i}-n1-k1" for i in range(2000))
    text = comment(GateResult(verdicts, ("fp8-m1-n1-k1",), keys), "cpu")
    assert len(text) <= COMMENT_MAX
    assert text.count("<details>") == text.count("</details>") == 1
    assert text.index("</details>") < text.index("more line(s) left out")
    assert "Not run (in the baseline): fp8-m1-n1-k1" in text
    assert "Not in the baseline (new cases): fp8-m0-n1-k1, " in text and "more\n" in text
    assert all(f"fp32-m{i}-n1-k1" in text for i in range(3))   # the changed cases first


def test_a_cut_comment_keeps_its_notes():
    """The notes (an injected slowdown, other software, held-down clocks) followed the
    changed cases, and a comment cut at GitHub's limit lost them first: 400 injected
    regressions read as real ones (a review)."""
    from gemmgate.compare import Judgement
    from gemmgate.gate import GateResult
    from gemmgate.gate_text import COMMENT_MAX, comment, injected_note

    j = Judgement("regressed", -0.5, -0.55, -0.45, 0.015)
    verdicts = tuple(CaseVerdict(f"fp32-m{i}-n64-k64", "regressed", j, None, "x" * 80,
                                 ab=j, level="process") for i in range(400))
    note = injected_note(0.5)
    text = comment(GateResult(verdicts, ("fp8-m1-n1-k1",), ()), "cpu", "a" * 40, note)
    assert len(text) <= COMMENT_MAX and "more line(s) left out" in text
    assert note in text and "Not run (in the baseline): fp8-m1-n1-k1" in text
    assert comment(GateResult(verdicts[:2], (), ()), "cpu", None, note).count(note) == 1


def test_a_note_from_the_baseline_s_provenance_is_text_in_the_summary_and_comment():
    """A PR's edit of baselines/*.json put a raw </details>, a heading and an <img> into
    the bot's comment through the software note (a review)."""
    from gemmgate.gate_text import comment, software_note

    hostile = "2.0`\n\n</details>\n\n# PWNED <img src=x onerror=alert(1)> | a |"
    note = software_note({"torch": hostile}, {"torch": "2.13.0"})
    gate = mixed()
    for text in (markdown(gate, "cpu", None, note), comment(gate, "cpu", None, note)):
        assert not any(line.startswith("# PWNED") for line in text.splitlines())
        assert "<img" not in text
        assert text.count("</details>") == text.count("<details>")
        assert any("PWNED" in line and "&lt;img" in line for line in text.splitlines())


def test_a_comment_with_an_overlong_note_keeps_its_heading_and_the_limit():
    """A baseline's provenance of 70,000 characters (torch's version, as a PR may edit
    baselines/*.json) made the software note longer than the limit: the comment came out
    at 70,375 characters, which GitHub refuses, and without its heading (a review)."""
    from gemmgate.gate_text import COMMENT_MAX, comment, software_note

    note = software_note({"torch": "x" * 70_000}, {"torch": "2.13.0"})
    text = comment(mixed(), "cpu", None, note)
    assert len(text) <= COMMENT_MAX
    assert text.startswith("### gemmgate check on cpu: **FAILED**")
    assert "The baseline was measured on other software (torch xxx" in text
    assert "fp32-m8-n8-k8" in text                       # the changed cases are kept
