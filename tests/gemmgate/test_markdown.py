"""gemmgate/markdown.py: table cells and rows that stay one table row, and the summaries
built from them (gate_text.markdown, gate_text.comment, report.markdown)."""

from gemmgate.compare import Judgement
from gemmgate.gate import CaseVerdict, GateResult
from gemmgate.gate_text import comment, markdown
from gemmgate.markdown import md_cell, md_row

NOTE = "A/B: the reference kernel failed (fail: CompilationError: at 3:4\n  x = a | b\n  ^)"


def test_a_cell_is_one_line_with_its_pipes_escaped():
    assert md_cell(NOTE) == ("A/B: the reference kernel failed (fail: CompilationError: at "
                             "3:4 x = a \\| b ^)")
    assert md_row(["a|b", 1, "x\ny"]) == "| a\\|b | 1 | x y |"


def _rows_of(md: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith("|")]


def test_a_multi_line_note_with_a_pipe_stays_one_row_in_the_summary_and_the_comment():
    """A reference kernel's compile error (several lines, a `|`) split the step
    summary's row and the comment's folded rows over three lines."""
    j = Judgement("unchanged", 0.0, -0.01, 0.01, 0.015)
    gate = GateResult((CaseVerdict("fp32-a", "unchanged", j, None, NOTE, level="process"),
                       CaseVerdict("fp32-b", "failed", None, None, NOTE)), (), ())
    for md in (markdown(gate, "cpu"), comment(gate, "cpu")):
        rows = _rows_of(md)
        cells = {r.count(" | ") for r in rows if "fp32-a" in r}
        assert len([r for r in rows if "fp32-a" in r]) == 1 and cells
        assert all(r.rstrip().endswith("|") for r in rows)
        assert "x = a \\| b" in md and "x = a | b" not in md


def test_a_provider_name_with_a_pipe_keeps_the_run_table_whole(synthetic_record):
    from dataclasses import replace

    from gemmgate import report
    from gemmgate.results import ProviderResult
    from gemmgate.shapes import Case

    rec = synthetic_record([("fp32", Case(32, 32, 32))])
    name = 'mod:fn<x"|y'
    (case,) = rec.cases
    t = case.providers["triton"]
    case = replace(case, providers={**case.providers, name: ProviderResult(
        name, "pass", t.error, "", t.samples_ms, t.tflops)})
    rows = _rows_of(report.markdown([case]))
    head, rule = rows[0], rows[1]
    assert head.replace("\\|", "").count("|") == rule.count("|")


def test_a_cell_shows_its_text_as_written_on_github():
    """A provider `mod:_mm_` came out in italics, a message holding `<class 'X'>` was
    dropped as an HTML tag, and a bisect's commit subject `<!--` hid the rest of the
    summary (a review): emphasis, code and HTML characters are escaped."""
    assert md_cell("mod:_mm_ a*b `c`") == "mod:\\_mm\\_ a\\*b \\`c\\`"
    assert md_cell("<class 'X'> & <!-- x") == "&lt;class 'X'&gt; &amp; &lt;!-- x"
    assert md_cell("a |\n b") == "a \\| b"


def test_a_backslash_in_a_cell_is_text_not_an_escape_of_the_escape():
    """A backslash before `_`, `*` or a backtick escaped the escape md_cell put there:
    a message holding "\\_x\\_" came out in italics on GitHub, one holding "\\`x\\`" as code,
    and "a\\|b" lost its backslash (a review, rendered with markdown-it's tables)."""
    assert md_cell("x \\_it\\_ y") == "x \\\\\\_it\\\\\\_ y"
    assert md_cell("a \\`c\\` b") == "a \\\\\\`c\\\\\\` b"
    assert md_cell("C:\\dir\\ | z") == "C:\\\\dir\\\\ \\| z"
    # every backslash doubled, every special escaped: none reaches GitHub unescaped
    cell = md_cell("\\_\\*\\`\\|")
    assert cell == "\\\\\\_\\\\\\*\\\\\\`\\\\\\|"
