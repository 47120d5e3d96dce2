"""`gemmgate check --comment PATH` (gate_text.comment): the PR comment lists the cases that
changed with arrows, percentages and the verdict policy's reason, then folds the rest.
Verdicts from synthetic timing (tests/conftest.py `synthetic_timing`), never wall clock."""

import json

import pytest

from gemmgate.cli import main
from gemmgate.compare import Judgement
from gemmgate.gate import CaseVerdict, GateResult
from gemmgate.gate_text import comment

FAST = ["--chip", "cpu", "--modes", "fp32", "--budget", "0.3"]
SLOW, SAME = "fp32-m32-n32-k32", "fp32-m48-n16-k64"


def _j(verdict, change, tol=0.015):
    return Judgement(verdict, change, change - 0.01, change + 0.01, tol)


def _rows(md: str) -> dict[str, str]:
    """Case key -> its line, for the lines of the changed-cases table (above <details>)."""
    top = md.split("<details>")[0]
    return {line.split("`")[1]: line for line in top.splitlines() if line.count("`") >= 2
            and line.startswith("| ")}


def test_changed_cases_first_with_arrows_percentages_and_reasons_the_rest_folded():
    gate = GateResult((
        CaseVerdict("fp32-a", "unchanged", _j("unchanged", 0.004), None, level="process"),
        CaseVerdict("fp32-b", "improved", _j("improved", 0.08), None,
                    "stored: machine-level ±1.5%", level="machine"),
        CaseVerdict("fp32-c", "regressed", _j("unchanged", -0.01), None,
                    "A/B: slower than the reference kernel by 6.00%", True,
                    _j("regressed", -0.06), "process"),
        CaseVerdict("fp32-d", "failed", None, None, "accuracy failure"),
        CaseVerdict("fp32-e", "inconclusive", _j("regressed", -0.2), None,
                    "stored judgement advisory: a | b", level="advisory"),
    ), missing=("fp32-gone",), extra=())
    md = comment(gate, "nvidia-h200", "ab" * 20)
    assert md.startswith("### gemmgate check on nvidia-h200: **FAILED** — 1 regressed, 1 failed")
    assert "A/B against the kernel at `abababababab`" in md
    rows = _rows(md)
    assert list(rows) == ["fp32-d", "fp32-c", "fp32-e", "fp32-b"]   # failed, regressed, ...
    assert rows["fp32-c"].startswith(
        "| ↓ | `fp32-c` | **regressed** (re-measured) | ↓ -6.00% (-1.48%/+1.50%) | ↓ -1.00% "
        "(-1.48%/+1.50%) | process | A/B: slower")
    assert rows["fp32-c"].count("A/B: slower than the reference kernel") == 1
    assert rows["fp32-b"].startswith("| ↑ | `fp32-b` | **improved** | — | ↑ +8.00% (-1.48%/+1.50%) "
                                     "| machine | stored ratio above the baseline at machine")
    assert rows["fp32-d"].startswith("| ✗ | `fp32-d` | **failed** | — | — | — | accuracy failure")
    assert rows["fp32-e"].startswith("| ↓? | `fp32-e` | **inconclusive**")
    assert "a \\| b" in rows["fp32-e"]                       # a pipe cannot split the row
    folded = md.split("<details>")[1]
    assert "<summary>1 other case(s)</summary>" in folded and "| fp32-a | unchanged |" in folded
    assert "fp32-a" not in md.split("<details>")[0]
    assert md.rstrip().endswith("Not run (in the baseline): fp32-gone")


def test_nothing_changed_says_so_and_folds_everything():
    gate = GateResult((CaseVerdict("fp32-a", "unchanged", _j("unchanged", 0.0), None),),
                      (), ())
    md = comment(gate, "cpu")
    assert "passed" in md.splitlines()[0] and "No case changed." in md
    assert "| fp32-a |" in md.split("<details>")[1]


@pytest.fixture
def work(tmp_path, synthetic_timing):
    """Shapes, a fresh baseline (synthetic timing), and a copy in which SLOW's stored
    ratio is 3x higher: against it, SLOW regressed and SAME is unchanged."""
    (tmp_path / "shapes.csv").write_text("m,n,k\n32,32,32\n48,16,64\n")
    base = tmp_path / "b.json"
    assert main(["baseline", "update", *FAST, "--shapes", str(tmp_path / "shapes.csv"),
                 "--output", str(base)]) == 0
    data = json.loads(base.read_text())
    case = data["cases"][SLOW]
    case["ratio"] *= 3
    case["noise"]["ratio_runs"] = [r * 3 for r in case["noise"]["ratio_runs"]]
    (tmp_path / "slow.json").write_text(json.dumps(data))
    return tmp_path


def _check(work, *extra):
    return main(["check", *FAST, "--shapes", str(work / "shapes.csv"), "--baseline",
                 str(work / "slow.json"), "--json", str(work / "check.json"), *extra])


def test_check_comment_shows_the_regression_with_its_reason(work, synthetic_timing):
    assert _check(work, "--comment", str(work / "pr.md")) == 1
    md = (work / "pr.md").read_text()
    rows = _rows(md)
    assert list(rows) == [SLOW]                              # only the changed case on top
    row = rows[SLOW]
    assert row.startswith(f"| ↓ | `{SLOW}` | **regressed** (re-measured) | — | ↓ -6")
    assert "| process | stored ratio below the baseline at process level; stored: " \
           "process-level" in row
    top, folded = md.split("<details>")
    assert SAME not in top and f"| {SAME} | unchanged |" in folded
    verdicts = {v["id"]: v["verdict"] for v in
                json.loads((work / "check.json").read_text())["gate"]["verdicts"]}
    assert verdicts == {SLOW: "regressed", SAME: "unchanged"}


def test_an_unwritable_comment_path_is_exit_2_before_measuring(work, synthetic_timing, capsys):
    synthetic_timing.measured.clear()
    (work / "afile").write_text("x")
    assert _check(work, "--comment", str(work / "afile" / "pr.md")) == 2
    assert synthetic_timing.measured == []
    assert "cannot write --comment" in capsys.readouterr().err.replace("\n", "")
    assert not (work / "check.json").exists()


def test_the_comment_is_written_after_the_json(work, monkeypatch):
    import gemmgate.cli_gate

    def fail(path, text):
        raise OSError("disk full")

    monkeypatch.setattr(gemmgate.cli_gate, "write_text_atomic", fail)
    assert _check(work, "--comment", str(work / "pr.md")) == 2
    assert json.loads((work / "check.json").read_text())["gate"]["failed"] is True
    assert not (work / "pr.md").exists()
