"""gemmgate/cli_args.py: the parser, its defaults and its help texts (what --help says
the commands do: checked against the code that does it)."""

import pytest

from gemmgate.cli import main
from gemmgate.cli_args import build_parser


def test_an_empty_step_summary_variable_is_no_summary_path(monkeypatch):
    """GITHUB_STEP_SUMMARY set but empty: check said "--summary is an empty path", an
    option the user never gave (a review). Read as unset."""
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "")
    args = build_parser().parse_args(["check", "--chip", "cpu"])
    assert args.summary is None
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "/tmp/s.md")
    assert build_parser().parse_args(["check", "--chip", "cpu"]).summary == "/tmp/s.md"


def _help_text(cmd: list[str], capsys) -> str:
    with pytest.raises(SystemExit):
        main([*cmd, "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_help_states_the_defaults_each_command_runs(capsys):
    """check's and trials' --help said their --shapes, --modes, --timing and --block
    default to a plain run's ("smoke on the CPU, pr on a GPU", "every mode the chip
    supports", graph, 1), where they run the baseline's cases, timed as it was
    (cli_gate._set_up); chips' --chip said "default: detected", where GEMMGATE_CHIP
    selects (a review)."""
    for cmd in (["check"], ["trials"]):
        text = _help_text(cmd, capsys)
        assert "smoke on the CPU" not in text and "every mode the chip supports" not in text
        assert "default: the baseline's shape set and every other case it holds" in text
        assert "default: the baseline's modes" in text
        assert "default: as the baseline was timed" in text   # --timing
        assert "(default: as the baseline was timed; 1: call by call" in text   # --block
    assert "--rejudge needs it given" in _help_text(["trials"], capsys)   # (no default:
    # "--rejudge needs --baseline FILE", exit 2)
    text = _help_text(["bisect"], capsys)
    assert "as the --from-check check, else the --baseline, was timed" in text
    for cmd in (["run"], ["baseline", "update"], ["baseline", "calibrate"], ["tune"]):
        text = _help_text(cmd, capsys)
        assert "(default: smoke on the CPU, pr on a GPU)" in text
        assert "default: every mode the chip supports" in text
        assert "default: graph on a GPU" in text and "(default 1: call by call" in text
    assert "(default: $GEMMGATE_CHIP, else detected)" in _help_text(["chips"], capsys)


def test_help_says_the_budget_is_soft_and_how_three_providers_take_turns(capsys):
    """--budget said "timing budget per case, seconds": a case times its rounds' floor
    whatever the budget (`--block 100 --budget 0.1` timed 16 x 100 calls a provider on the
    CPU), and --block said each round's order is the last one's reversed, which holds for
    two providers only (an A/B's three take each rotation forward and reversed; a review).
    The floors said are the stopping rule's (test_timing_policy.py)."""
    for cmd in (["run"], ["check"], ["baseline", "calibrate"]):
        text = _help_text(cmd, capsys)
        assert "(default 2 on a GPU, 1 on the CPU); a soft limit" in text
        assert "at least 10 rounds on a GPU and 16 on the CPU (30 and 18 with three" in text
        assert "take each rotation of their order forward and reversed" in text
