"""`gemmgate bisect` (gemmgate/bisect.py, gemmgate/cli_bisect.py).

The search is pure and tested over synthetic histories. The command is tested end to end
on throw-away git repositories whose commits each hold a copy of this checkout's kernels/
with a module constant `COST` in kernels/configs.py. Timing is synthetic and comes from
the commit's own kernel: `gemmgate.run.kernel_call` is wrapped so each call carries its
package's COST, and the fake `measure` gives each provider 20 samples of 1 ms x COST
(seeded 0.2% jitter). So every verdict and exit code here rests on COST, never on
wall-clock time; the kernels still run (the accuracy check) on the Triton interpreter.
"""

import json
import random
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from gemmgate.bisect import (
    BAD,
    CLEAN,
    FOUND,
    GOOD,
    RANGE,
    SKIP,
    UNTESTABLE,
    commit_range,
    expected_steps,
    judge_ab,
    narrowed,
    parse_case_id,
    regressed_in_check,
    search,
    step_verdict,
)
from gemmgate.cli import main
from gemmgate.results import CaseResult, ProviderResult
from gemmgate.shapes import SETS, Case

ROOT = Path(__file__).resolve().parents[2]
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
CASE = "fp32-m16-n16-k16"
FAST = ["--chip", "cpu", "--budget", "0.2"]


# --- the search over synthetic histories ---------------------------------------------------

def _history(n: int, first_bad: int, skips=()):
    """(commits, is_bad, calls): commits c0..c{n-1}; c{i} is bad from `first_bad` on;
    the indices in `skips` cannot be tested."""
    commits = [f"c{i}" for i in range(n)]
    calls: list[str] = []

    def is_bad(c: str):
        calls.append(c)
        i = commits.index(c)
        return None if i in skips else i >= first_bad

    return commits, is_bad, calls


@pytest.mark.parametrize("n", [1, 2, 3, 5, 9, 16, 33])
def test_finds_the_first_bad_commit_at_every_position(n):
    for k in range(n):
        commits, is_bad, calls = _history(n, k)
        r = search(commits, is_bad)
        assert r.status == FOUND and r.first_bad == f"c{k}" and r.candidates == (f"c{k}",)
        assert r.last_good == (f"c{k - 1}" if k else None)
        assert calls[0] == commits[-1]                 # BAD first
        assert len(calls) == len(set(calls)) <= expected_steps(n)
        assert [c for c, _ in r.tested] == calls


def test_all_good_is_clean_after_one_test():
    commits, is_bad, calls = _history(9, 9)
    r = search(commits, is_bad)
    assert (r.status, r.candidates, r.first_bad, calls) == (CLEAN, (), None, ["c8"])


def test_all_bad_blames_the_first_commit():
    commits, is_bad, _ = _history(9, 0)
    r = search(commits, is_bad)
    assert r.status == FOUND and r.first_bad == "c0" and r.last_good is None


def test_one_commit():
    for bad, status in ((0, FOUND), (1, CLEAN)):
        commits, is_bad, calls = _history(1, bad)
        r = search(commits, is_bad)
        assert r.status == status and calls == ["c0"]
    _, is_bad, _ = _history(1, 0, skips={0})
    assert search(["c0"], is_bad).status == UNTESTABLE


def test_a_skip_away_from_the_boundary_is_searched_around():
    commits, is_bad, calls = _history(9, 6, skips={3})
    r = search(commits, is_bad)
    assert r.status == FOUND and r.first_bad == "c6" and r.last_good == "c5"
    assert ("c3", SKIP) in r.tested and len(calls) <= expected_steps(9) + 1


def test_skips_at_the_boundary_give_the_range():
    commits, is_bad, _ = _history(9, 6, skips={4, 5})
    r = search(commits, is_bad)
    assert r.status == RANGE and r.first_bad is None
    assert r.candidates == ("c4", "c5", "c6") and r.last_good == "c3"


def test_a_range_keeps_only_the_commits_that_change_kernels():
    """c4 a skip, c5 and c6 leave its kernels/ (docs), c7 changes it and is bad: the first
    bad commit is c4 or c7, not c5 or c6 (they measure as c4 does)."""
    commits, is_bad, _ = _history(9, 7, skips={4, 5, 6})
    r = search(commits, is_bad)
    assert r.status == RANGE and r.candidates == ("c4", "c5", "c6", "c7")
    same = {("c4", "c5"), ("c5", "c6")}
    n = narrowed(r, r.last_good, lambda a, b: (a, b) in same)
    assert n.status == RANGE and n.candidates == ("c4", "c7") and n.last_good == "c3"
    assert n.tested == r.tested
    # the first candidate against what came before it: GOOD where no commit tested good
    r0 = search(*_history(4, 0, skips={0, 1})[:2])
    assert r0.candidates == ("c0", "c1", "c2") and r0.last_good is None
    assert narrowed(r0, "GOOD", lambda a, b: (a, b) == ("GOOD", "c0")).candidates == \
        ("c1", "c2")
    found = search(*_history(9, 3)[:2])               # other results as they are
    assert narrowed(found, "x", lambda a, b: True) is found


def test_a_range_whose_skips_measure_as_the_last_good_is_found():
    """c4 a skip (noise) whose kernels/ is c3's (tested good), c5 tested bad: c5 is the
    first bad commit. It was a range of one, "the one commit there that changes kernels/,
    but , so it is not confirmed", exit 1 (review rbis)."""
    r = search(*_history(9, 5, skips={4})[:2])
    assert r.status == RANGE and r.candidates == ("c4", "c5") and r.last_good == "c3"
    n = narrowed(r, r.last_good, lambda a, b: (a, b) == ("c3", "c4"))
    assert n.status == FOUND and n.first_bad == "c5" and n.last_good == "c4"
    assert n.tested == r.tested


def test_bad_untestable_stops_at_once():
    commits, is_bad, calls = _history(9, 3, skips={8})
    r = search(commits, is_bad)
    assert r.status == UNTESTABLE and calls == ["c8"]


def test_random_histories_with_skips_stay_consistent():
    rng = random.Random(7)
    for _ in range(500):
        n = rng.randint(1, 40)
        k = rng.randint(0, n - 1)                      # BAD is bad
        skips = {i for i in range(n - 1) if rng.random() < 0.3}
        commits, is_bad, calls = _history(n, k, skips)
        r = search(commits, is_bad)
        assert len(calls) == len(set(calls))          # nothing tested twice
        assert f"c{k}" in r.candidates
        *others, last = r.candidates
        assert last in [c for c, v in r.tested if v == BAD]
        assert all(int(c[1:]) in skips for c in others)
        assert r.status == (FOUND if not others else RANGE)
        if r.last_good is not None:
            assert (r.last_good, GOOD) in r.tested and int(r.last_good[1:]) == \
                int(r.candidates[0][1:]) - 1


def test_an_empty_history_is_an_error():
    with pytest.raises(ValueError, match="no commits"):
        search([], lambda c: True)


def test_expected_steps():
    assert [expected_steps(n) for n in (1, 2, 3, 4, 5, 9, 16, 17)] == [1, 2, 3, 3, 4, 5, 5, 6]


# --- case ids, check files, one case's verdict ----------------------------------------------

@pytest.mark.parametrize("case", [*SETS["smoke"], *SETS["tail"], Case(64, 64, 64, "rr", 8)])
def test_case_ids_round_trip(case):
    for mode in ("fp32", "bf16"):
        m, c = parse_case_id(f"{mode}-{case.id}")
        assert (m.name, c) == (mode, case)


@pytest.mark.parametrize("text", ["m16-n16-k16", "fp64-m16-n16-k16", "fp32-m16-n16",
                                  "fp32-m16-n16-k16-xy", "fp32-m16-n16-k16-cr+q3", "",
                                  # digits that are not ASCII, as --shapes refuses them
                                  "fp32-m\u0668-n8-k8", "fp32-m8-n\uff18-k8",
                                  "fp32-m8-n8-k8-rr+p\u0663"])
def test_bad_case_ids_are_clear_errors(text):
    with pytest.raises(ValueError, match="--case"):
        parse_case_id(text)


def test_regressed_cases_of_a_check_file():
    data = {"gate": {"verdicts": [{"id": "fp32-m16-n16-k16", "verdict": "regressed"},
                                  {"id": "bf16-m64-n64-k64", "verdict": "unchanged"},
                                  {"id": "fp16-m8-n8-k8", "verdict": "failed"}]}}
    assert regressed_in_check(data, "c.json") == ["fp32-m16-n16-k16"]
    with pytest.raises(ValueError, match="not a `gemmgate check --json` file"):
        regressed_in_check({"cases": []}, "run.json")


def _result(triton_ms: float, ref_ms: float, triton_ok: str = "pass") -> CaseResult:
    def p(name, ms, acc="pass"):
        return ProviderResult(name, acc, 0.0, "", tuple(ms * (1 + 0.001 * (i % 3 - 1))
                                                        for i in range(20)))
    return CaseResult("fp32", Case(16, 16, 16), {"triton": p("triton", triton_ms, triton_ok),
                                                 "vendor": ProviderResult("vendor",
                                                                          "unsupported"),
                                                 "reference": p("reference", ref_ms)})


def test_one_case_is_judged_on_its_ab_figure_with_the_floor():
    slow, same = judge_ab(_result(1.10, 1.0), 0.015), judge_ab(_result(1.01, 1.0), 0.015)
    assert slow.verdict == "regressed" and slow.ab.change == pytest.approx(1 / 1.1 - 1, 1e-3)
    assert same.verdict == "unchanged" and same.ab.tolerance == 0.015
    assert judge_ab(_result(1.01, 1.0), 0.005).verdict == "regressed"  # --floor
    failed = judge_ab(_result(1.0, 1.0, "fail"), 0.015)
    assert failed.verdict == "failed" and "this commit's kernel" in failed.note
    assert step_verdict([slow, same]) == (BAD, "")
    assert step_verdict([same, failed])[0] == SKIP
    assert step_verdict([slow, failed])[0] == BAD
    assert step_verdict([same]) == (GOOD, "")
    noisy = judge_ab(_noisy(), 0.015)   # slower past the floor, its CI reaching no change
    assert noisy.verdict == "inconclusive"
    assert step_verdict([same, noisy])[0] == SKIP    # not good: an unjudged step
    assert step_verdict([slow, noisy])[0] == BAD


def test_an_empty_output_is_no_skip():
    # M or N zero: no A/B samples (nothing to time); it made every step a skip
    r = _result(1.0, 1.0)
    empty = judge_ab(CaseResult(r.mode, Case(0, 16, 16), r.providers), 0.015)
    assert empty.verdict == "empty" and "nothing to time" in empty.note
    same = judge_ab(_result(1.01, 1.0), 0.015)
    assert step_verdict([same, empty]) == (GOOD, "")
    assert step_verdict([judge_ab(_result(1.10, 1.0), 0.015), empty])[0] == BAD


def test_a_median_within_the_floor_whose_ci_reaches_past_it_is_inconclusive():
    """A noisy BAD: 11 rounds at GOOD's time, 9 at 1.3x (median A/B 1.0, its CI down to
    -23%) was "unchanged", so the bisect said nothing regressed at BAD and exited 0 (a
    review, on the CPU). Such a case is inconclusive: the step is skipped, not good."""
    t = tuple([1.0] * 11 + [1.3] * 9)
    wide = CaseResult("fp32", Case(16, 16, 16), {
        "triton": ProviderResult("triton", "pass", 0.0, "", t),
        "vendor": ProviderResult("vendor", "unsupported"),
        "reference": ProviderResult("reference", "pass", 0.0, "", (1.0,) * 20)})
    got = judge_ab(wide, 0.015)
    assert abs(got.ab.change) <= 0.015 and got.ab.ci_low < -0.015   # the case it guards
    assert got.verdict == "inconclusive" and "past the -1.5% tolerance" in got.note
    assert step_verdict([got])[0] == SKIP
    tight = judge_ab(_result(1.01, 1.0), 0.015)   # a narrow CI within the floor stays so
    assert tight.verdict == "unchanged"


def _noisy() -> CaseResult:
    """Rounds where this commit's kernel ran slow in half: A/B -7.5%, its CI reaching 1."""
    fast = [0.999 - 0.001 * (i % 3) for i in range(10)]   # a hair faster than GOOD
    t = tuple(x for pair in zip(fast, [1.2] * 10) for x in pair)
    return CaseResult("fp32", Case(16, 16, 16), {
        "triton": ProviderResult("triton", "pass", 0.0, "", t),
        "vendor": ProviderResult("vendor", "unsupported"),
        "reference": ProviderResult("reference", "pass", 0.0, "", (1.0,) * 20)})


# --- end to end: throw-away histories, cost from each commit's kernel -----------------------

def _git(repo, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def _make_history(d, costs) -> list[str]:
    """A new git repository in `d` (as tests/conftest.py's `_repo_with_kernels` makes
    one) with a copy of this checkout's kernels/ committed once per entry of `costs` (a
    float: configs.py ends in COST = that; "broken": configs.py raises NameError on import;
    "nochoose": matmul lacks the choose= hook; "docs": a commit that leaves kernels/ as
    it was); the commits, oldest first."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    shutil.copytree(ROOT / "kernels", d / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    _git(d, "init", "-q")
    _git(d, "config", "user.email", "t@example.com")
    _git(d, "config", "user.name", "t")
    configs, init = d / "kernels" / "configs.py", d / "kernels" / "__init__.py"
    original, original_init = configs.read_text(), init.read_text()
    shas = []
    for i, cost in enumerate(costs):
        if cost == "docs":
            (d / "NOTES.md").write_text(f"step {i}\n")
            _git(d, "add", "-A")
            _git(d, "commit", "-q", "-m", f"step {i}: docs")
            shas.append(_git(d, "rev-parse", "HEAD"))
            continue
        # broken: a NameError, not an ImportError (any exception a commit's import
        # raises skips it; ImportError alone was caught once)
        tail = ("undefined_name_broken_on_purpose\n" if cost == "broken"
                else f"COST = {cost!r}\n")
        configs.write_text(original + f"\nSTEP = {i}\n" + tail)
        init.write_text(original_init + (NO_CHOOSE if cost == "nochoose" else ""))
        _git(d, "add", "-A")
        _git(d, "commit", "-q", "-m", f"step {i}: cost {cost}")
        shas.append(_git(d, "rev-parse", "HEAD"))
    return shas


# kernels/__init__.py of a commit from before the `choose=` hook: matmul without it
NO_CHOOSE = """
_matmul = matmul


def matmul(a, b, *, precision=None, out=None, scale_a=None, scale_b=None, config=None):
    return _matmul(a, b, precision=precision, out=out, scale_a=scale_a, scale_b=scale_b,
                   config=config)
"""

PLANTED = 6   # the commit (index in the history, 0 = GOOD) that sets COST = 3.0


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """GOOD and 9 more commits; commit PLANTED makes the kernel 3x slower, for good."""
    d = tmp_path_factory.mktemp("bisect-planted")
    return d, _make_history(d, [1.0 if i < PLANTED else 3.0 for i in range(10)])


def _package_cost(matmul) -> float:
    """COST of the kernels package `matmul` belongs to (this tree's, or a commit's loaded
    under its alias gemmgate_ref_<sha12>, gemmgate/reference.py); 1.0 without one."""
    name = next(n for n, m in list(sys.modules.items())
                if getattr(m, "matmul", None) is matmul and hasattr(m, "configs"))
    return getattr(sys.modules[name + ".configs"], "COST", 1.0)


class _Costed:
    def __init__(self, call, cost: float) -> None:
        self.call, self.cost = call, cost

    def __call__(self):
        return self.call()


@pytest.fixture
def costed_timing(monkeypatch):
    """Each kernel call carries its commit's COST; `measure` gives every provider 20
    samples of 1 ms x COST (the vendor, never timed by bisect, would get 1 ms)."""
    import gemmgate.run

    real = gemmgate.run.kernel_call
    measured = []

    def kernel_call(matmul, choose, inp, mode, keep_copies=True):
        return _Costed(real(matmul, choose, inp, mode, keep_copies), _package_cost(matmul))

    def measure(fns, policy, *, flush_bytes, device="cuda", timed=None):
        measured.append(tuple(fns))
        out = {}
        for name, fn in fns.items():
            rng = random.Random(zlib.crc32(name.encode()))
            ms = 1.0 * getattr(fn, "cost", 1.0)
            out[name] = [ms * (1 + rng.gauss(0, 0.002)) for _ in range(20)]
        return out

    monkeypatch.setattr(gemmgate.run, "kernel_call", kernel_call)
    monkeypatch.setattr(gemmgate.run, "measure", measure)
    return measured


def _bisect(tmp_path, *args) -> tuple[int, dict | None, str]:
    out, summary = tmp_path / "bisect.json", tmp_path / "summary.md"
    rc = main(["bisect", *args, *FAST, "--json", str(out), "--summary", str(summary)])
    data = json.loads(out.read_text()) if out.exists() else None
    return rc, data, summary.read_text() if summary.exists() else ""


@needs_git
def test_names_the_planted_commit(planted, costed_timing, monkeypatch, tmp_path, capsys):
    d, shas = planted
    monkeypatch.chdir(d)
    rc, data, summary = _bisect(tmp_path, shas[0], "HEAD", "--case", CASE)
    out = capsys.readouterr().out
    assert rc == 0, out
    culprit = shas[PLANTED]
    assert data["outcome"] == "culprit" and data["culprit"]["sha"] == culprit
    assert data["culprit"]["subject"] == f"step {PLANTED}: cost 3.0"
    assert data["culprit"]["author"] == "t <t@example.com>"
    assert data["last_good"] == shas[PLANTED - 1] and data["cases"] == [CASE]
    assert [c["sha"] for c in data["commits"]] == shas[1:]
    steps = data["steps"]
    assert 3 <= len(steps) <= expected_steps(9)               # ~ log2(9) + BAD
    assert steps[0]["commit"] == shas[-1] and steps[0]["verdict"] == "bad"
    for s in steps:                                          # every step: against GOOD
        assert s["against"] == shas[0]
        assert s["verdict"] == ("bad" if shas.index(s["commit"]) >= PLANTED else "good")
        (case,) = s["cases"]
        expect = -2 / 3 if s["verdict"] == "bad" else 0.0
        assert case["ab"]["change"] == pytest.approx(expect, abs=0.01)
    b = data["boundary"]
    assert (b["commit"], b["against"], b["verdict"]) == (culprit, shas[PLANTED - 1], "bad")
    # only the two kernels were timed, once per step and once at the boundary
    assert costed_timing == [("triton", "reference")] * (len(steps) + 1)
    assert "bisect steps" in out and culprit[:12] in out and "first slow commit" in out
    assert out.count("bisect steps") == len(steps) + 1       # the table after each step
    assert "first slow commit found" in summary and culprit in summary
    assert f"step {PLANTED}: cost 3.0" in summary


def _baseline_of(tmp_path, **provenance) -> Path:
    """A cpu baseline of CASE (`baseline update` under the test's timing), its provenance
    then set as `provenance` gives it (as if recorded at those commits)."""
    (tmp_path / "shapes.csv").write_text("m,n,k\n16,16,16\n")
    base = tmp_path / "b.json"
    assert main(["baseline", "update", *FAST, "--modes", "fp32", "--shapes",
                 str(tmp_path / "shapes.csv"), "--output", str(base)]) == 0
    data = json.loads(base.read_text())
    data["provenance"].update(dirty=False, **provenance)
    base.write_text(json.dumps(data))
    return base


@needs_git
def test_nightly_style_from_a_check_with_nothing_slower(planted, costed_timing, monkeypatch,
                                                        tmp_path, capsys):
    """`bisect baseline HEAD --from-check`: GOOD is the baseline's commit, the cases are
    the check's regressed ones; here the baseline's commit already had the slow kernel."""
    d, shas = planted
    monkeypatch.chdir(d)
    base = _baseline_of(tmp_path, commit=shas[PLANTED])   # as if recorded there
    check = tmp_path / "check.json"
    check.write_text(json.dumps({"environment": {"chip": "cpu"}, "gate": {"verdicts": [
        {"id": CASE, "verdict": "regressed"}, {"id": "fp32-m64-n64-k64", "verdict": "unchanged"}
    ]}}))
    rc, data, summary = _bisect(tmp_path, "baseline", "HEAD", "--baseline", str(base),
                                "--from-check", str(check))
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    assert data["outcome"] == "clean" and data["culprit"] is None and data["cases"] == [CASE]
    assert data["good"]["sha"] == shas[PLANTED] and len(data["steps"]) == 1
    assert "nothing regressed at BAD" in out and "nothing regressed" in summary


@needs_git
@pytest.mark.parametrize("how", ["kept", "merged"])
def test_good_baseline_is_where_every_case_was_measured(planted, costed_timing, monkeypatch,
                                                       tmp_path, capsys, how):
    """A baseline whose case an update kept from commit 2 (provenance commit 8, the
    update's) or that merges calibrations of commits 2 and 8: GOOD was commit 8, past the
    planted commit 6, and bisect said "clean" (a review). GOOD is their common ancestor."""
    d, shas = planted
    monkeypatch.chdir(d)
    base = _baseline_of(tmp_path, commit=shas[8], **(
        {"kept_from": shas[2]} if how == "kept" else {"merged_from": [shas[8], shas[2]]}))
    rc, data, _ = _bisect(tmp_path, "baseline", "HEAD", "--baseline", str(base), "--case", CASE)
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    assert data["good"]["sha"] == shas[2]
    assert data["outcome"] == "culprit" and data["culprit"]["sha"] == shas[PLANTED]


@needs_git
def test_good_baseline_with_kept_cases_of_an_unrecorded_commit_is_refused(
        planted, monkeypatch, tmp_path, capsys):
    """Cases kept from a file that recorded a date, not a commit: GOOD left them out,
    possibly past their culprit, unsaid (a review). Exit 2: name GOOD."""
    d, shas = planted
    monkeypatch.chdir(d)
    base = _baseline_of(tmp_path, commit=shas[8], kept_from="2026-11-30T10:00:00+00:00")
    capsys.readouterr()
    rc, _, _ = _bisect(tmp_path, "baseline", "HEAD", "--baseline", str(base), "--case", CASE)
    assert rc == 2
    assert "holds cases of a commit it does not record" in capsys.readouterr().err.replace(
        "\n", " ")


@needs_git
def test_a_step_inside_the_baselines_ab_noise_is_not_a_culprit(tmp_path_factory, costed_timing,
                                                               monkeypatch, tmp_path, capsys):
    """Each case is judged with the A/B tolerance `check --ab-ref` gives it: a 5% step
    is a culprit at the 1.5% floor, and within the noise of a case whose stored A/B
    spread is 2.5% (5 runs: x2.5 in log space, a 6.53% tolerance), as the check would call
    it."""
    d = tmp_path_factory.mktemp("bisect-step")
    shas = _make_history(d, [1.0, 1.0, 1.0, 1.05, 1.05])
    monkeypatch.chdir(d)
    rc, data, _ = _bisect(tmp_path, shas[0], "HEAD", "--case", CASE)
    assert rc == 0 and data["outcome"] == "culprit" and data["culprit"]["sha"] == shas[3]
    assert data["tolerances"] == {CASE: 0.015}
    (tmp_path / "shapes.csv").write_text("m,n,k\n16,16,16\n")
    base = tmp_path / "b.json"
    assert main(["baseline", "update", *FAST, "--modes", "fp32", "--shapes",
                 str(tmp_path / "shapes.csv"), "--output", str(base)]) == 0
    stored = json.loads(base.read_text())
    stored["cases"][CASE]["noise"].update(ab=0.025, ab_runs=[1.0, 1.025, 0.975, 1.0, 1.0])
    base.write_text(json.dumps(stored))
    capsys.readouterr()
    rc, data, _ = _bisect(tmp_path, shas[0], "HEAD", "--case", CASE, "--baseline", str(base))
    err = capsys.readouterr().err
    assert rc == 0 and data["outcome"] == "clean", err
    assert data["tolerances"] == {CASE: pytest.approx(0.975 ** -2.5 - 1)}   # 6.53%
    assert data["steps"][0]["cases"][0]["ab"]["change"] == pytest.approx(1 / 1.05 - 1, abs=0.01)
    assert "1 of 1 case(s) wider than the 1.5% floor from the baseline's A/B noise" in err
    # the band the verdict applies, as `check` prints it: "±6.5%" hid its slow side, -6.13%
    assert f"{CASE} -6.13%/+6.53%" in err.replace("\n", " ")


@needs_git
@pytest.mark.parametrize("check, said", [
    ({"gate": {"verdicts": [{"id": "garbage", "verdict": "regressed"}]}},
     "a regressed verdict's id 'garbage': expected MODE-m<M>"),
    ({"gate": {"verdicts": [{"id": None, "verdict": "regressed"}]}},
     "a regressed verdict's id 'None': expected MODE-m<M>"),
    ({"environment": {"chip": "nvidia-h200"},
      "gate": {"verdicts": [{"id": CASE, "verdict": "regressed"}]}},
     "its environment.chip 'nvidia-h200': chip nvidia-h200 was requested"),
    ({"environment": {"chip": "generic-gpu"},
      "gate": {"verdicts": [{"id": CASE, "verdict": "regressed"}]}},
     "its environment.chip 'generic-gpu': it ran on a GPU no profile names, this device "
     "is cpu"),
    (None, "cannot read --from-check file"),
])
def test_what_is_wrong_in_a_check_file_is_said_of_the_file(planted, monkeypatch, tmp_path,
                                                           capsys, check, said):
    """Errors from the check file named options the user never gave ("--case 'garbage'",
    "(--chip)") or called a missing file "not JSON" (a review)."""
    d, shas = planted
    monkeypatch.chdir(d)
    path = tmp_path / "check.json"
    if check is not None:
        path.write_text(json.dumps(check))
    assert main(["bisect", shas[0], "HEAD", "--from-check", str(path), "--budget", "0.2"]) == 2
    err = capsys.readouterr().err.replace("\n", "")
    assert f"--from-check {path}" in err or f"--from-check file {path}" in err, err
    assert said in err and "--case '" not in err, err


@needs_git
def test_a_check_on_a_gpu_no_profile_names_is_bisected_there(planted, monkeypatch, tmp_path,
                                                             capsys):
    """A check on an unknown GPU records chip 'generic-gpu', which is no chip id --chip
    takes: `--from-check` was "unknown chip id 'generic-gpu'" on that very GPU, and no
    --chip could bisect it (a review). The generic profile is detected."""
    import types

    import torch

    from gemmgate import cli_bisect

    d, shas = planted
    monkeypatch.chdir(d)
    name = "NVIDIA RTX 6000 Ada Generation"
    props = types.SimpleNamespace(name=name, multi_processor_count=142, major=8, minor=9,
                                  shared_memory_per_block_optin=101376,
                                  L2_cache_size=96 << 20)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: name)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i=0: props)
    monkeypatch.setattr(torch.version, "hip", None)
    reached = []

    def context(args, chip, items, pins_from):   # the run itself needs a real GPU
        reached.append(chip)
        raise ValueError("reached the run context")

    monkeypatch.setattr(cli_bisect, "_context", context)
    check = tmp_path / "check.json"
    check.write_text(json.dumps({
        "gate": {"verdicts": [{"id": CASE, "verdict": "regressed"}]},
        "environment": {"chip": "generic-gpu", "timing": "graph", "block": 1}}))
    assert main(["bisect", shas[0], "HEAD", "--from-check", str(check)]) == 2
    err = capsys.readouterr().err
    assert "reached the run context" in err and "unknown chip id" not in err, err
    assert reached == [None]   # detected: the generic profile


@needs_git
def test_a_check_without_regressions_has_nothing_to_bisect(planted, monkeypatch, tmp_path):
    d, shas = planted
    monkeypatch.chdir(d)
    check = tmp_path / "check.json"
    check.write_text(json.dumps({"gate": {"verdicts": [{"id": CASE, "verdict": "unchanged"}]}}))
    out = tmp_path / "bisect.json"
    out.write_text('{"outcome": "culprit"}')   # an earlier bisect's: not left as this one's
    rc, data, summary = _bisect(tmp_path, shas[0], "HEAD", "--from-check", str(check))
    assert rc == 0 and "nothing to bisect" in summary
    assert data["outcome"] == "none-regressed" and data["cases"] == [] and \
        data["from_check"] == str(check)
    # GOOD and BAD as every outcome writes them, not the refs as given (a review)
    assert data["good"]["sha"] == shas[0] and data["bad"]["sha"] == shas[-1]


@needs_git
def test_a_gpu_check_bisected_on_the_cpu_is_not_refused_for_its_timing(
        planted, costed_timing, monkeypatch, tmp_path, capsys):
    """A GPU check's `environment.timing` ("graph") was taken as the bisect's: `--chip cpu`
    (as "give --chip to bisect elsewhere" advises) was exit 2, "--timing graph needs a GPU",
    an option nobody gave, and no --timing the CPU takes could undo it."""
    d, shas = planted
    monkeypatch.chdir(d)
    check = tmp_path / "check.json"
    check.write_text(json.dumps({
        "gate": {"verdicts": [{"id": CASE, "verdict": "regressed"}]},
        "environment": {"chip": "nvidia-h100", "timing": "graph", "block": 1}}))
    rc, data, _ = _bisect(tmp_path, shas[0], "HEAD", "--from-check", str(check))
    assert "--timing graph needs a GPU" not in capsys.readouterr().err
    assert rc == 0 and data["outcome"] == "culprit"


def test_a_check_that_ran_on_other_kernels_is_said(capsys):
    """`--from-check` of a check run on uncommitted kernels/ ended "no commit's kernels/ to
    blame", the dirty tree unsaid (a review): a warning names it, or another commit."""
    from rich.console import Console

    from gemmgate import cli_bisect
    from gemmgate.bisect import Commit

    bad = Commit("a" * 40, "s", "t")
    said = []
    err = Console(file=None, record=True)
    for env in ({"commit": "a" * 40, "dirty": True}, {"commit": "b" * 40, "dirty": False},
                {"commit": "a" * 40, "dirty": False}):
        cli_bisect._checked_elsewhere("c.json", env, bad, err)
        said.append(err.export_text())
    assert "ran on BAD aaaaaaaaaaaa with uncommitted changes" in said[0]
    assert "ran on bbbbbbbbbbbb, not BAD aaaaaaaaaaaa" in said[1].replace("\n", " ")
    assert said[2] == ""   # a clean check of BAD: nothing said (each export clears)


@needs_git
@pytest.mark.parametrize("stop", ["measurement", "interrupt"])
def test_a_bisect_stopped_part_way_keeps_its_steps_in_json(planted, costed_timing,
                                                           monkeypatch, tmp_path, stop):
    """A measurement that fails (exit 3: a case past --case-timeout) or Ctrl-C during the
    search left an earlier bisect's --json as it was, looking like this one's (a
    review): now --json holds the steps measured before the stop, outcome "stopped"."""
    import gemmgate.cli_bisect
    from gemmgate.context import MeasurementError

    d, shas = planted
    monkeypatch.chdir(d)
    real, calls = gemmgate.cli_bisect.measure_step, []

    def second_stops(*args, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise MeasurementError("fp32 m16-n16-k16 ran past the case time limit") \
                if stop == "measurement" else KeyboardInterrupt()
        return real(*args, **kw)

    monkeypatch.setattr(gemmgate.cli_bisect, "measure_step", second_stops)
    (tmp_path / "bisect.json").write_text('{"outcome": "culprit"}')   # an earlier one's
    rc, data, _ = _bisect(tmp_path, shas[0], "HEAD", "--case", CASE)
    assert rc == (3 if stop == "measurement" else 130)
    assert data["outcome"] == "stopped" and len(data["steps"]) == 1
    assert data["culprit"] is None and data["first_bad"] is None
    assert (data["stopped"] == "fp32 m16-n16-k16 ran past the case time limit"
            if stop == "measurement" else data["stopped"] == "interrupted")


@needs_git
def test_a_bisect_stopped_in_its_boundary_re_measure_keeps_what_its_search_found(
        planted, costed_timing, monkeypatch, tmp_path):
    """The search had ended on the planted commit when the boundary's re-measure was
    stopped: --json said first_bad null (a review); it keeps the search's end, the outcome
    "stopped" (no culprit named: the boundary did not confirm it)."""
    import gemmgate.cli_bisect

    d, shas = planted
    monkeypatch.chdir(d)

    real = gemmgate.cli_bisect.measure_step

    def stops_at_the_boundary(*args, boundary=False, **kw):
        if boundary:
            raise KeyboardInterrupt()
        return real(*args, **kw)
    monkeypatch.setattr(gemmgate.cli_bisect, "measure_step", stops_at_the_boundary)
    rc, data, _ = _bisect(tmp_path, shas[0], "HEAD", "--case", CASE)
    assert rc == 130 and data["outcome"] == "stopped" and data["culprit"] is None
    assert data["first_bad"] == shas[PLANTED] and data["last_good"] == shas[PLANTED - 1]


@needs_git
def test_a_slow_creep_is_inconclusive_at_the_boundary(tmp_path_factory, costed_timing,
                                                       monkeypatch, tmp_path, capsys):
    """1% per commit: the 2% commit is the first slower than GOOD beyond the 1.5% floor,
    but against its parent it is 1% slower: not confirmed, exit 1 with the figures."""
    d = tmp_path_factory.mktemp("bisect-creep")
    shas = _make_history(d, [1.0, 1.01, 1.02, 1.03])
    monkeypatch.chdir(d)
    rc, data, summary = _bisect(tmp_path, shas[0], "HEAD", "--case", CASE)
    out = capsys.readouterr().out
    assert rc == 1, out
    assert data["outcome"] == "inconclusive" and data["culprit"] is None
    assert data["first_bad"] == shas[2] and data["boundary"]["verdict"] == "good"
    (case,) = data["boundary"]["cases"]
    assert case["ab"]["change"] == pytest.approx(1.01 / 1.02 - 1, abs=0.003)
    assert "inconclusive" in out and "inconclusive" in summary


@needs_git
def test_a_noisy_boundary_re_measure_is_measured_again(tmp_path_factory, costed_timing,
                                                       monkeypatch, tmp_path, capsys):
    """The boundary's re-measure (the culprit against its parent) was measured once: one
    noisy measurement (synthetic: half its rounds at the parent's time) made a 3x culprit
    "inconclusive", exit 1, said "against the commit before it ... it is not: -33.52%
    inconclusive" (review rbis). It is measured again, as each step is."""
    import gemmgate.cli_bisect
    import gemmgate.run

    d = tmp_path_factory.mktemp("bisect-noisy-boundary")
    shas = _make_history(d, [1.0, 1.0, 3.0, 3.0])
    real, costed, at_boundary = gemmgate.cli_bisect.measure_step, gemmgate.run.measure, []

    def measure_step(*args, boundary=False, **kw):
        at_boundary.append(boundary)
        return real(*args, boundary=boundary, **kw)

    def measure(fns, policy, **kw):
        out = costed(fns, policy, **kw)
        if at_boundary.count(True) == 1 and at_boundary[-1]:   # the boundary's first
            out["triton"] = [x / 3 if i % 2 else x for i, x in enumerate(out["triton"])]
        return out

    monkeypatch.setattr(gemmgate.cli_bisect, "measure_step", measure_step)
    monkeypatch.setattr(gemmgate.run, "measure", measure)
    monkeypatch.chdir(d)
    rc, data, _ = _bisect(tmp_path, shas[0], "HEAD", "--case", CASE)
    out = capsys.readouterr()
    assert at_boundary.count(True) == 2 and "inconclusive: measured again" in out.err
    assert rc == 0 and data["outcome"] == "culprit", out.out
    assert data["culprit"]["sha"] == shas[2] and data["boundary"]["verdict"] == "bad"


def test_an_unjudged_boundary_is_not_said_not_slower():
    """A boundary inconclusive twice read "against the commit before it ... it is not:
    -33.52% inconclusive" (review rbis): it could not be judged."""
    from gemmgate.bisect import CaseAB, Commit, SearchResult, Step
    from gemmgate.bisect_text import INCONCLUSIVE as UNCONFIRMED
    from gemmgate.bisect_text import conclusion
    from gemmgate.compare import judge

    info = {c: Commit(c, f"subject {c}", "t") for c in ("g" * 40, "p" * 40, "x" * 40)}
    ab = judge([0.333, 1.0] * 10, 1.0, 0.015)
    assert ab.verdict == "inconclusive"
    boundary = Step("x" * 40, "p" * 40, SKIP, (CaseAB(CASE, "inconclusive", ab),),
                    f"{CASE}: inconclusive", boundary=True)
    found = SearchResult(FOUND, ("x" * 40,), "p" * 40, ())
    text = conclusion(UNCONFIRMED, found, None, boundary, info, info["g" * 40],
                      info["x" * 40])
    assert "it could not be judged" in text and "it is not:" not in text


@needs_git
def test_unimportable_commits_are_skipped_and_the_range_said(tmp_path_factory, costed_timing,
                                                              monkeypatch, tmp_path, capsys):
    d = tmp_path_factory.mktemp("bisect-skip")
    shas = _make_history(d, [1.0, 1.0, "broken", 3.0, 3.0])
    monkeypatch.chdir(d)
    rc, data, summary = _bisect(tmp_path, shas[0], "HEAD", "--case", CASE)
    out = capsys.readouterr().out
    assert rc == 1, out
    assert data["outcome"] == "range" and data["candidates"] == [shas[2], shas[3]]
    skipped = [s for s in data["steps"] if s["verdict"] == "skip"]
    assert [s["commit"] for s in skipped] == [shas[2]]
    assert "does not import" in skipped[0]["note"] and skipped[0]["cases"] == []
    assert "was a skip (kernels/ at" in out and "does not import" in out
    assert "not isolated" in summary
    # GOOD itself unusable: exit 2 before measuring, naming it
    assert main(["bisect", shas[2], "HEAD", *FAST, "--case", CASE]) == 2
    assert "GOOD" in capsys.readouterr().err


@needs_git
def test_a_commit_without_the_choose_hook_is_skipped_around(tmp_path_factory, costed_timing,
                                                           monkeypatch, tmp_path):
    d = tmp_path_factory.mktemp("bisect-nochoose")
    shas = _make_history(d, [1.0, 1.0, "nochoose", 1.0, 3.0, 3.0])
    monkeypatch.chdir(d)
    rc, data, _ = _bisect(tmp_path, shas[0], "HEAD", "--case", CASE)
    assert rc == 0 and data["outcome"] == "culprit" and data["culprit"]["sha"] == shas[4]
    (skip,) = [s for s in data["steps"] if s["verdict"] == "skip"]
    assert skip["commit"] == shas[2] and "no choose= hook" in skip["note"]


@needs_git
def test_bad_with_goods_kernels_is_clean_untimed(tmp_path_factory, costed_timing,
                                                 monkeypatch, tmp_path, capsys):
    """BAD's kernels/ is GOOD's: clean, and said untimed (it said "A/B in one process")."""
    d = tmp_path_factory.mktemp("bisect-docs-only")
    shas = _make_history(d, [1.0, "docs", "docs"])
    monkeypatch.chdir(d)
    rc, data, _ = _bisect(tmp_path, shas[0], "HEAD", "--case", CASE)
    assert rc == 0 and data["outcome"] == "clean" and not costed_timing
    out = " ".join(capsys.readouterr().out.split())
    assert "(its kernels/ is GOOD's: not timed)" in out and "A/B in one process)" not in out


@needs_git
def test_a_noisy_skip_with_the_last_goods_kernels_leaves_the_culprit_found(
        tmp_path_factory, costed_timing, monkeypatch, tmp_path, capsys):
    """A docs commit after a good one measured inconclusive twice (noise, synthetic here):
    the range left was only the slow commit after it, said "the one commit there that
    changes kernels/, but , so it is not confirmed", exit 1 (review rbis). It is the
    culprit, confirmed against its parent."""
    import gemmgate.run

    d = tmp_path_factory.mktemp("bisect-noisy-docs")
    shas = _make_history(d, [1.0, 1.0, "docs", 3.0, 3.0])
    costed, calls = gemmgate.run.measure, []

    def measure(fns, policy, **kw):
        calls.append(1)
        out = costed(fns, policy, **kw)
        if len(calls) in (2, 3):   # the docs commit's step, and its second try
            out["triton"] = [x * (1.2 if i % 2 else 1.0) for i, x in enumerate(out["triton"])]
        return out

    monkeypatch.setattr(gemmgate.run, "measure", measure)
    monkeypatch.chdir(d)
    rc, data, _ = _bisect(tmp_path, shas[0], "HEAD", "--case", CASE)
    out = capsys.readouterr().out
    assert ("skip" in [s["verdict"] for s in data["steps"] if s["commit"] == shas[2]]), data
    assert rc == 0 and data["outcome"] == "culprit", out
    assert data["culprit"]["sha"] == shas[3] and data["last_good"] == shas[2]
    assert data["boundary"]["against"] == shas[2] and "but ," not in out


@needs_git
def test_a_range_names_only_commits_that_change_kernels(tmp_path_factory, costed_timing,
                                                       monkeypatch, tmp_path, capsys):
    """A broken commit, two docs commits after it, then the slow one: the range is the
    broken commit or the slow one; the docs commits take the broken one's skip untimed
    (they were measured, and listed as candidates: "one of 4", a review)."""
    d = tmp_path_factory.mktemp("bisect-docs")
    shas = _make_history(d, [1.0, 1.0, "broken", "docs", "docs", 3.0, 3.0])
    monkeypatch.chdir(d)
    rc, data, _ = _bisect(tmp_path, shas[0], "HEAD", "--case", CASE)
    assert rc == 1 and data["outcome"] == "range", data
    assert data["candidates"] == [shas[2], shas[5]]
    one = [s for s in data["steps"] if s["commit"] in shas[2:5]]   # one kernels/ tree
    assert {s["verdict"] for s in one} == {"skip"} and len(one) >= 2
    imported = [s for s in one if "not timed" not in s["note"]]
    assert len(imported) == 1 and "does not import" in imported[0]["note"], one
    for s in one:
        if s is not imported[0]:
            assert f"kernels/ as at {imported[0]['commit'][:12]}: its verdict, not timed" \
                in s["note"] and "does not import" in s["note"]
    out = " ".join(capsys.readouterr().out.split())
    assert f"one of 2 that change kernels/: {shas[2][:12]}, {shas[5][:12]}" in out, out


@needs_git
@pytest.mark.parametrize("args, message", [
    (["no-such-ref", "HEAD"], "GOOD 'no-such-ref': no such commit"),
    (["HEAD", "HEAD~3"], "is not an ancestor of BAD"),
    (["HEAD", "HEAD"], "same commit"),
    (["HEAD~2", "HEAD", "--case", "fp32-m16"], "--case"),
    (["HEAD~2", "HEAD", "--case", CASE, "--shapes", "smoke"], "--shapes/--modes"),
    (["HEAD~2", "HEAD", "--case", CASE, "--devices", "0,1"], "one process"),
    (["HEAD~2", "HEAD", "--case", CASE, "--floor", "1.5"], "--floor"),
    (["baseline", "HEAD", "--case", CASE, "--baseline", "missing.json"], "no baseline"),
    (["HEAD~2", "HEAD", "--case", CASE, "--retune"], "--retune: bisect tunes nothing"),
    (["nope", "HEAD", "--from-check", "clean.json"], "GOOD 'nope': no such commit"),
    (["HEAD~2", "HEAD", "--from-check", "clean.json", "--json", "clean.json"],
     "--json clean.json is also --from-check"),
    # a clean check's exit 0 came before these were checked (a review)
    (["HEAD", "HEAD~3", "--from-check", "clean.json"], "is not an ancestor of BAD"),
    (["baseline", "HEAD", "--from-check", "clean.json", "--baseline", "missing.json"],
     "no baseline"),
    (["HEAD~2", "HEAD", "--case", "fp32-m0-n16-k16"], "an empty output (M or N is 0)"),
    (["HEAD~2", "HEAD", "--modes", "fp32", "--shapes", "0x16x16,16x0x16"],
     "every case has an empty output (M or N is 0)"),
])
def test_usage_errors_exit_2_before_measuring(planted, monkeypatch, capsys, args, message):
    d, _ = planted
    monkeypatch.chdir(d)
    clean = d / "clean.json"   # a check that called nothing regressed (its exit 0 path)
    clean.write_text(json.dumps({"gate": {"verdicts": [{"id": CASE, "verdict": "unchanged"}]},
                                 "environment": {"chip": "cpu"}}))
    before = clean.read_text()
    assert main(["bisect", *args, "--chip", "cpu"]) == 2
    assert message in capsys.readouterr().err.replace("\n", " ")
    assert clean.read_text() == before


@needs_git
def test_a_good_merged_in_from_a_side_branch_is_refused(tmp_path):
    """GOOD on a side branch merged into BAD's line is BAD's ancestor, but the line's
    commits before the merge never held it: the search blamed one of them, exit 0."""
    d = tmp_path / "repo"
    d.mkdir()
    main_line = _make_history(d, [1.0, 1.0, 1.0])
    _git(d, "checkout", "-q", "-b", "side", main_line[0])
    (d / "side.txt").write_text("x\n")
    _git(d, "add", "-A")
    _git(d, "commit", "-q", "-m", "side")
    side = _git(d, "rev-parse", "HEAD")
    _git(d, "checkout", "-q", "-")
    _git(d, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    merge = _git(d, "rev-parse", "HEAD")
    with pytest.raises(ValueError, match=f"came in with the merge {merge[:12]}"):
        commit_range(side, "HEAD", d)
    good, _, commits = commit_range(merge + "~1", "HEAD", d)   # from the line: fine
    assert [c.sha for c in commits] == [merge]


@needs_git
def test_commit_range_is_the_first_parent_history(planted):
    d, shas = planted
    good, bad, commits = commit_range(shas[2], "HEAD", d)
    assert (good.sha, bad.sha) == (shas[2], shas[-1])
    assert [c.sha for c in commits] == shas[3:]
    assert commits[0].subject == "step 3: cost 1.0"


@needs_git
@pytest.mark.parametrize("odd", ["\u2028", "\x85", "\x1c", "\x0c", "\r"])
def test_a_subject_holding_a_line_separator_is_one_commit(tmp_path, odd):
    """A subject with a character str.splitlines() splits at (U+2028 pasted from a web
    page) made commit_range a TypeError, "Commit.__init__() missing 1 required positional
    argument", exit 2 for a valid range (review rbis)."""
    d = tmp_path / "repo"
    d.mkdir()
    good, = _make_history(d, [1.0])
    (d / "NOTES.md").write_text("x\n")
    _git(d, "add", "-A")
    _git(d, "commit", "-q", "-m", f"fix the{odd}tile")
    _commit_readme(d, "after")
    g, bad, commits = commit_range(good, "HEAD", d)
    assert len(commits) == 2 and commits[1].sha == bad.sha
    assert commits[0].subject.startswith("fix the") and commits[0].author == "t <t@example.com>"


@needs_git
def test_a_shallow_clone_missing_the_history_says_so(planted, tmp_path):
    """GOOD fetched alone into a shallow clone is an ancestor git cannot see: the message
    said "swapped arguments?"."""
    d, shas = planted
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{d}", str(clone)],
                   check=True)
    subprocess.run(["git", "fetch", "-q", "--depth", "1", "origin", shas[0]], cwd=clone,
                   check=True)
    with pytest.raises(ValueError, match="in this shallow clone, whose history between "
                                         "them may be missing"):
        commit_range(shas[0], "HEAD", clone)
    with pytest.raises(ValueError, match="swapped arguments"):   # a full clone: as before
        commit_range("HEAD", shas[0], d)


def test_a_bisect_from_a_check_times_as_the_check_was_timed():
    """Without --timing and --block, the check's own (else its baseline's): a regression
    only eager timing shows was bisected under graph timing (a review). Given ones stand;
    the CPU's wall timing is no --timing choice and is left to the chip's default."""
    import argparse
    from types import SimpleNamespace

    from gemmgate.cli_run import timed_as

    args = argparse.Namespace(timing=None, block=None)
    timed_as(args, {"timing": "eager", "block": 3}, {})
    assert (args.timing, args.block) == ("eager", 3)
    args = argparse.Namespace(timing="graph", block=None)
    base = SimpleNamespace(provenance={"timing": "eager", "block": 2})
    timed_as(args, {"timing": "wall"}, base.provenance)
    assert (args.timing, args.block) == ("graph", 2)
    args = argparse.Namespace(timing=None, block=None)
    timed_as(args, {"timing": "wall", "block": True}, {})
    assert (args.timing, args.block) == (None, None)


def test_an_inconclusive_bad_step_is_said_measured_not_unmeasurable():
    """A BAD step measured and found inconclusive read "could not be measured" (a
    review); one that failed to measure still does."""
    from types import SimpleNamespace as NS

    from gemmgate.bisect_text import conclusion as _conclusion

    good, bad = NS(short="aaaa"), NS(short="bbbb")
    measured = NS(note="fp32-m16-n16-k16: A/B -3.0%, but its CI reaches +0.2%",
                  cases=(NS(ab=object()),))
    text = _conclusion("untestable", None, measured, None, {}, good, bad)
    assert "was measured but not judged" in text and "could not be measured" not in text
    failed = NS(note="kernels/ at bbbb does not import", cases=())
    text = _conclusion("untestable", None, failed, None, {}, good, bad)
    assert "BAD bbbb could not be measured against GOOD aaaa" in text


def _commit_readme(d, text: str) -> str:
    """A commit that changes no kernels/ file."""
    (d / "README.md").write_text(text)
    _git(d, "add", "-A")
    _git(d, "commit", "-q", "-m", f"docs: {text}")
    return _git(d, "rev-parse", "HEAD")


@needs_git
def test_a_commit_whose_kernels_were_judged_takes_that_verdict_untimed(
        tmp_path_factory, costed_timing, monkeypatch, tmp_path):
    """Commits of one kernels/ tree had been timed one by one, and noise made some of them
    skips, the culprit left in a range (a review). One whose kernels/ is GOOD's is good
    (an A/A), one whose kernels/ a step judged takes its verdict: neither is timed."""
    d = tmp_path_factory.mktemp("bisect-alike")
    good, slow = _make_history(d, [1.0, 3.0])
    docs = [_commit_readme(d, f"r{i}") for i in range(5)]     # kernels/ as at `slow`
    monkeypatch.chdir(d)
    rc, data, _ = _bisect(tmp_path, good, "HEAD", "--case", CASE)
    assert rc == 0 and data["culprit"]["sha"] == slow
    steps = {s["commit"]: s for s in data["steps"]}
    untimed = [s for s in data["steps"] if s["commit"] in docs and not s["cases"]]
    assert untimed and all(s["verdict"] == "bad" and "its verdict, not timed" in s["note"]
                           for s in untimed)
    assert steps[docs[-1]]["cases"]   # BAD itself is timed (nothing judged before it)
    # GOOD's own kernels/ on a later commit: good, not timed
    d2 = tmp_path_factory.mktemp("bisect-aa")
    (good2,) = _make_history(d2, [1.0])
    same = _commit_readme(d2, "a")
    from gemmgate import cli_bisect
    from gemmgate.bisect import Commit

    monkeypatch.chdir(d2)
    step = cli_bisect._alike(same, [], Commit(good2, "g", "t"), {})
    assert step.verdict == "good" and step.note == "kernels/ as at GOOD: not timed"


def test_an_inconclusive_step_is_measured_again_before_it_is_a_skip(monkeypatch):
    """A step measured but inconclusive (its CI reaching past the tolerance) was a skip at
    once, and its commit "could not be measured" (a review): measured again first; a
    case that failed (a kernel that does not load or compute) is not."""
    import io

    from rich.console import Console

    from gemmgate import cli_bisect
    from gemmgate.bisect import CaseAB, Step

    answers = []

    def measure_step(ctx, items, sha, against, tolerances, boundary=False):
        verdict, case = answers.pop(0)
        return Step(sha, against, verdict, (CaseAB("k", case, None, "note"),), "k: note")

    monkeypatch.setattr(cli_bisect, "measure_step", measure_step)
    quiet = Console(file=io.StringIO())
    answers[:] = [("skip", "inconclusive"), ("good", "unchanged")]
    assert cli_bisect._measured_step(None, (), "c", "g", {}, quiet).verdict == "good"
    answers[:] = [("skip", "inconclusive"), ("skip", "inconclusive")]
    step = cli_bisect._measured_step(None, (), "c", "g", {}, quiet)
    assert step.verdict == "skip" and step.note.startswith("inconclusive twice (noise)")
    answers[:] = [("skip", "failed"), ("good", "unchanged")]
    assert cli_bisect._measured_step(None, (), "c", "g", {}, quiet).verdict == "skip"
    assert answers == [("good", "unchanged")]   # not measured again


def test_the_summary_heading_of_a_measured_inconclusive_bad_says_measured():
    """The Markdown heading said "BAD not measurable" over a conclusion saying BAD "was
    measured but not judged" (a review): the heading says which it was."""
    from gemmgate.bisect import CaseAB, Commit, Step
    from gemmgate.bisect_text import markdown
    from gemmgate.compare import judge

    info = {c: Commit(c, f"subject {c}", "t") for c in ("g" * 40, "b" * 40)}
    ab = judge([1.0, 0.8, 1.2, 0.9, 1.1] * 4, 1.0, 0.015)
    measured = Step("b" * 40, "g" * 40, SKIP, (CaseAB(CASE, "inconclusive", ab, "noise"),),
                    "noise")
    text = markdown("cpu", "untestable", "t", [measured], [CASE], info, "g" * 40)
    assert "BAD measured, not judged" in text and "not measurable" not in text
    failed = Step("b" * 40, "g" * 40, SKIP, (), "kernels/ at bbbb does not import")
    text = markdown("cpu", "untestable", "t", [failed], [CASE], info, "g" * 40)
    assert "**BAD not measurable**" in text


@needs_git
@pytest.mark.parametrize("where", ["gate", "environment"])
def test_a_check_whose_regressions_were_injected_is_refused(planted, monkeypatch, tmp_path,
                                                           capsys, where):
    """A check run with --inject-slowdown (a trials check) calls cases regressed that no
    commit slowed: bisect timed BAD against GOOD, found nothing, and blamed "Triton,
    driver, machine", exit 0 (a review)."""
    from gemmgate import cli_bisect

    d, shas = planted
    monkeypatch.chdir(d)
    monkeypatch.setattr(cli_bisect, "measure_step", lambda *a, **k: pytest.fail("measured"))
    check = tmp_path / "check.json"
    check.write_text(json.dumps({
        "environment": {"chip": "cpu", **({"inject_slowdown": 0.03}
                                          if where == "environment" else {})},
        "gate": {"verdicts": [{"id": CASE, "verdict": "regressed"}],
                 **({"inject_slowdown": 0.03} if where == "gate" else {})}}))
    assert main(["bisect", shas[0], "HEAD", *FAST, "--from-check", str(check)]) == 2
    assert "--inject-slowdown 0.03: its regressions were injected" in \
        capsys.readouterr().err.replace("\n", " ")
