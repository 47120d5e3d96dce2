"""`gemmgate bisect GOOD BAD`: the first commit that slowed the named cases.

Three parts, kept apart:

- the history (`commit_range`, `describe`): the first-parent commits after GOOD up to
  and including BAD (`git rev-list --first-parent --reverse GOOD..BAD`), with subject
  and author; a bad ref, GOOD not an ancestor of BAD, or an empty range is a ValueError
  (exit 2) before anything is measured;
- the search (`search`): pure binary search over those commits with a predicate
  `is_bad(commit) -> True | False | None`, None meaning "cannot be tested" (like `git
  bisect skip`): the search goes on around it, and when skipped commits sit at the
  boundary the result is the range that holds the culprit. BAD is tested first: if it
  is not bad there is nothing to find. Unit-tested without torch or a kernel;
- the step (`measure_step`): the kernel at one commit timed against the kernel at
  another in the same process, interleaved, on the same inputs (gemmgate.run.Runner
  with that commit's `kernels/` as its "triton" package and the other commit as the
  A/B reference, gemmgate/reference.py). Each named case's per-round A/B figure
  (reference time / this commit's time, < 1: this commit is slower) is judged against
  1 (gemmgate.compare.judge) with the tolerance `check --ab-ref` gives it: the
  baseline's A/B noise for the case, scaled as the gate scales it, at least the floor
  (the floor alone without a baseline, or where it holds no A/B noise). A step is bad when any case
  regressed, good when none did, and skipped when the commit's `kernels/` does not
  import, lacks the `choose=` hook, or fails a case's accuracy check.

During the search every commit is measured against GOOD. Once the search names a
first bad commit X, X is measured once more against the commit before it (its
first parent, the last good commit; again where noise left it inconclusive, as a
search step is): only if that also says regressed is X the culprit;
otherwise the slowdown crept in over several commits, or the step was noise, and the
result is "inconclusive", with the figures. The vendor's BLAS is not timed: A/B needs
only the two kernels.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gemmgate.accuracy import PASS
from gemmgate.compare import (
    INCONCLUSIVE,
    MIN_JUDGED,
    REGRESSED,
    Judgement,
    judge,
    slower_bound,
    within,
)
from gemmgate.context import RunContext
from gemmgate.gate import EMPTY, EMPTY_NOTE
from gemmgate.precision import MODES, PrecisionMode, get_mode
from gemmgate.reference import resolve
from gemmgate.results import REFERENCE, CaseResult
from gemmgate.shapes import Case

GOOD, BAD, SKIP = "good", "bad", "skip"                      # a step's verdict
FOUND, CLEAN, RANGE, UNTESTABLE = "found", "clean", "range", "untestable"  # a search's end


# --- the search (pure) ---------------------------------------------------------------------

@dataclass(frozen=True)
class SearchResult:
    """How a search ended.

    found:      `candidates` is the one first bad commit; `last_good` the commit before
                it (None: GOOD itself, i.e. the first commit of the range is the culprit)
    range:      skipped commits sit at the boundary: the first bad commit is one of
                `candidates` (oldest first, the last one tested bad; after `narrowed`,
                only those that change kernels/)
    clean:      BAD itself tested good: nothing to find
    untestable: BAD itself could not be tested
    `tested`: (commit, good | bad | skip) in the order tested."""
    status: str
    candidates: tuple[str, ...]
    last_good: str | None
    tested: tuple[tuple[str, str], ...]

    @property
    def first_bad(self) -> str | None:
        return self.candidates[0] if self.status == FOUND else None


def expected_steps(n: int) -> int:
    """Tests a search of n commits takes without skips: BAD, then ceil(log2(n))."""
    return 1 + max(n - 1, 0).bit_length()


def search(commits: Sequence[str], is_bad: Callable[[str], bool | None]) -> SearchResult:
    """Binary search for the first bad commit of `commits` (oldest first; the commit
    before the first one is known good, the last one is BAD). `is_bad(commit)`: True
    bad, False good, None skip. Each commit is tested at most once; after a skip the
    untested commit nearest the middle of the open interval is tried instead."""
    if not commits:
        raise ValueError("no commits to search")
    tested: list[tuple[str, str]] = []

    def test(i: int) -> str:
        answer = is_bad(commits[i])
        verdict = SKIP if answer is None else BAD if answer else GOOD
        tested.append((commits[i], verdict))
        return verdict

    n = len(commits)
    top = test(n - 1)
    if top != BAD:
        return SearchResult(CLEAN if top == GOOD else UNTESTABLE, (), None, tuple(tested))
    lo, hi, skipped = -1, n - 1, set()   # commits[lo] good (-1: GOOD), commits[hi] bad
    while True:
        open_ = [i for i in range(lo + 1, hi) if i not in skipped]
        if not open_:
            break
        mid = (lo + hi) // 2
        i = min(open_, key=lambda j: (abs(j - mid), j))
        verdict = test(i)
        if verdict == BAD:
            hi = i
        elif verdict == GOOD:
            lo = i
        else:
            skipped.add(i)
    candidates = tuple(commits[lo + 1:hi + 1])
    return SearchResult(FOUND if len(candidates) == 1 else RANGE, candidates,
                        commits[lo] if lo >= 0 else None, tuple(tested))


def narrowed(result: SearchResult, before: str,
             alike: Callable[[str, str], bool]) -> SearchResult:
    """A range's candidates less the commits that cannot be its first bad one: a commit
    whose kernels/ is its predecessor's (`alike(prev, c)`; `before`: the commit before the
    first candidate, last_good or GOOD) measures as that one does. Other results as they
    are. A range of skips over one kernels/ change listed every commit after it (a
    review: "one of 9", 3 of them changing kernels/). Where only the commit tested bad
    is left (every skip before it measures as the good commit before them), it is the
    first bad one: found, the commit before it its last good (a skip for noise on a
    docs commit after a good one left "one commit there that changes kernels/, but ,
    so it is not confirmed", exit 1, unmeasured against its parent; review rbis)."""
    if result.status != RANGE:
        return result
    kept, prev = [], before
    for c in result.candidates:
        if not alike(prev, c):
            kept.append(c)
        prev = c
    if kept == [result.candidates[-1]]:
        return replace(result, status=FOUND, candidates=tuple(kept),
                       last_good=result.candidates[-2])
    return replace(result, candidates=tuple(kept)) if kept else result


# --- the history (git) ---------------------------------------------------------------------

@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    author: str

    @property
    def short(self) -> str:
        return self.sha[:12]

    def to_json(self) -> dict:
        return {"sha": self.sha, "subject": self.subject, "author": self.author}


_SEP = "\x1f"
_FORMAT = f"--format=%H{_SEP}%s{_SEP}%an <%ae>"


def _git(repo: str | Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                              timeout=60)
    except FileNotFoundError:
        raise ValueError("gemmgate bisect needs git on PATH") from None


def _parse_log(text: str) -> list[Commit]:
    # one commit a NUL (git log -z): split at lines, a subject holding U+2028, U+0085,
    # \x1c-\x1e, \v, \f or \r (a newline once decoded) was two, and a valid range was exit
    # 2, "Commit.__init__() missing 1 required positional argument" (review rbis)
    return [Commit(*rec.strip("\n").split(_SEP, 2)) for rec in text.split("\0")
            if rec.strip()]


def describe(sha: str, repo: str | Path = ".") -> Commit:
    out = _git(repo, "log", "-z", "-1", _FORMAT, sha)
    if out.returncode != 0:
        raise ValueError(f"git log {sha[:12]}: {out.stderr.strip()}")
    return _parse_log(out.stdout)[0]


def commit_range(good: str, bad: str, repo: str | Path = ".") \
        -> tuple[Commit, Commit, list[Commit]]:
    """(GOOD, BAD, the first-parent commits after GOOD up to BAD, oldest first); a
    ValueError naming the problem for an unknown ref, GOOD not an ancestor of BAD, or
    an empty range."""
    g, b = resolve(good, repo, "GOOD"), resolve(bad, repo, "BAD")
    if g == b:
        raise ValueError(f"GOOD {good!r} and BAD {bad!r} are the same commit ({g[:12]}): "
                         "no commit to search")
    anc = _git(repo, "merge-base", "--is-ancestor", g, b)
    if anc.returncode == 1:
        shallow = _git(repo, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"
        raise ValueError(f"GOOD {good!r} ({g[:12]}) is not an ancestor of BAD {bad!r} "
                         f"({b[:12]})" + (
                             " in this shallow clone, whose history between them may be "
                             "missing: fetch it (actions/checkout fetch-depth: 0, or git "
                             "fetch --unshallow)" if shallow else
                             ": give an older GOOD (swapped arguments?)"))
    if anc.returncode != 0:
        raise ValueError(f"git merge-base {g[:12]} {b[:12]}: {anc.stderr.strip()}")
    out = _git(repo, "log", "-z", "--first-parent", "--reverse", _FORMAT, f"{g}..{b}")
    if out.returncode != 0:
        raise ValueError(f"git log {g[:12]}..{b[:12]}: {out.stderr.strip()}")
    commits = _parse_log(out.stdout)
    if not commits:
        raise ValueError(f"no first-parent commit between GOOD {g[:12]} and BAD {b[:12]}")
    # GOOD on BAD's first-parent line: one merged in from a side branch is an ancestor,
    # but the line's commits before the merge never held it, and the search would blame
    # one of them (session 57)
    first = _git(repo, "rev-parse", f"{commits[0].sha}^1")
    if first.returncode != 0 or first.stdout.strip() != g:
        merge = next((c.sha[:12] for c in commits
                      if _git(repo, "merge-base", "--is-ancestor", g, c.sha).returncode == 0),
                     "?")
        raise ValueError(f"GOOD {good!r} ({g[:12]}) is not on BAD's first-parent line: it "
                         f"came in with the merge {merge}; give a GOOD on that line (the "
                         f"merge itself, or its first parent {merge}^1 to search the merge)")
    return describe(g, repo), describe(b, repo), commits


# --- naming cases --------------------------------------------------------------------------

# ASCII digits, as --shapes and shape files take them (\d took '٨' and '８' as 8: `--case
# fp32-m٨-n8-k8` bisected m8-n8-k8, a case --shapes refuses to name)
_CASE_ID = re.compile(r"(?P<mode>[a-z0-9]+)-m(?P<m>[0-9]+)-n(?P<n>[0-9]+)-k(?P<k>[0-9]+)"
                      r"(?:-(?P<layout>[a-z]{2})(?:\+p(?P<pad>[0-9]+))?)?")


def parse_case_id(text: str, what: str = "--case") -> tuple[PrecisionMode, Case]:
    """'bf16-m4096-n4096-k4096' or 'fp32-m64-n32-k96-cr' (mode + gemmgate.shapes Case.id,
    layout and pad as `-cr`, `-rr+p8`) -> (mode, case); ValueError otherwise, naming
    `what` (where the id came from)."""
    m = _CASE_ID.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"{what} {text!r}: expected MODE-m<M>-n<N>-k<K>[-<layout>[+p<pad>]], "
                         "e.g. bf16-m4096-n4096-k4096 or fp32-m64-n32-k96-cr")
    if m["mode"] not in MODES:
        raise ValueError(f"{what} {text!r}: unknown mode {m['mode']!r} "
                         f"(modes: {', '.join(MODES)})")
    try:
        case = Case(int(m["m"]), int(m["n"]), int(m["k"]), m["layout"] or "rr",
                    int(m["pad"] or 0))
    except ValueError as e:
        raise ValueError(f"{what} {text!r}: {e}") from None
    return get_mode(m["mode"]), case


def regressed_in_check(data, where: str) -> list[str]:
    """The ids of the cases a `gemmgate check --json` file calls regressed."""
    gate = data.get("gate") if isinstance(data, dict) else None
    verdicts = gate.get("verdicts") if isinstance(gate, dict) else None
    if not isinstance(verdicts, list) or not all(isinstance(v, dict) and "id" in v
                                                 for v in verdicts):
        raise ValueError(f"--from-check {where}: not a `gemmgate check --json` file "
                         "(no gate.verdicts list)")
    return [str(v["id"]) for v in verdicts if v.get("verdict") == REGRESSED]


# --- one step: a commit's kernel against another's, in this process --------------------------

FAILED = "failed"


@dataclass(frozen=True)
class CaseAB:
    """One case of a step: this commit's kernel against the reference commit's."""
    key: str
    verdict: str       # improved | unchanged | regressed | inconclusive | failed | empty
    ab: Judgement | None = None   # per-round reference time / this commit's time, vs 1
    note: str = ""

    def to_json(self) -> dict:
        return {"id": self.key, "verdict": self.verdict, "note": self.note,
                "ab": self.ab.to_json() if self.ab else None}


@dataclass(frozen=True)
class Step:
    commit: str
    against: str                  # the reference commit (GOOD, or the parent at the end)
    verdict: str                  # good | bad | skip
    cases: tuple[CaseAB, ...] = ()
    note: str = ""                # why it was skipped
    boundary: bool = False        # the re-measure against the last good commit

    @property
    def regressed(self) -> tuple[CaseAB, ...]:
        return tuple(c for c in self.cases if c.verdict == REGRESSED)

    def to_json(self) -> dict:
        return {"commit": self.commit, "against": self.against, "verdict": self.verdict,
                "boundary": self.boundary, "note": self.note,
                "cases": [c.to_json() for c in self.cases]}


def judge_ab(result: CaseResult, tol: float) -> CaseAB:
    """A case's A/B verdict: this commit's kernel ("triton") against the reference's,
    changes within `tol` (a fraction) called unchanged, where the CI rules out a slowdown
    past `tol` too: a median within it whose CI reaches past -tol is inconclusive (a noisy
    BAD was called "nothing regressed", exit 0, with a CI of -19% to +21% against a 1.5%
    tolerance on the CPU; a review)."""
    here, ref = result.providers["triton"], result.providers.get(REFERENCE)
    if here.accuracy != PASS:
        return CaseAB(result.key, FAILED, None,
                      f"this commit's kernel: {here.accuracy} {here.message}".strip())
    if ref is None or ref.accuracy != PASS:
        why = f"{ref.accuracy} {ref.message}".strip() if ref else "not run"
        return CaseAB(result.key, FAILED, None, f"the reference kernel: {why}")
    if result.empty_output:   # (it made every step a skip: "no A/B samples")
        return CaseAB(result.key, EMPTY, None, EMPTY_NOTE)
    if not result.ab_samples:
        return CaseAB(result.key, FAILED, None, "no A/B samples")
    j = judge(result.ab_samples, 1.0, tol)
    if j.verdict == INCONCLUSIVE and within(j.change, tol) \
            and len(result.ab_samples) >= MIN_JUDGED:   # (compare.judge's rule)
        return CaseAB(result.key, INCONCLUSIVE, j,
                      f"A/B {j.change:+.1%}, but its CI reaches {j.ci_low:+.1%}, past the "
                      f"{slower_bound(tol):.1%} tolerance")
    return CaseAB(result.key, j.verdict, j)


def step_verdict(cases: Sequence[CaseAB]) -> tuple[str, str]:
    """(good | bad | skip, note): bad when any case regressed; skip when none did but a
    case could not be judged: it failed, or its A/B moved past the tolerance with a CI
    that still reaches no change (inconclusive: called good, a noisy slow commit would
    pass, and an inconclusive BAD would read as nothing regressed); good otherwise."""
    if any(c.verdict == REGRESSED for c in cases):
        return BAD, ""
    unjudged = [c for c in cases if c.verdict in (FAILED, INCONCLUSIVE)]
    if unjudged:
        return SKIP, "; ".join(f"{c.key}: {c.note or c.verdict}" for c in unjudged)
    return GOOD, ""


def load_kernels(ctx: RunContext, commit: str):
    """The `kernels` package at `commit`; ValueError when it does not import or lacks
    the `choose=` hook (gemmgate.run.load_reference)."""
    from gemmgate.run import load_reference

    return load_reference(replace(ctx, reference=commit))


def measure_step(ctx: RunContext, items: Sequence[tuple[PrecisionMode, Case]], commit: str,
                 against: str, tolerances: Mapping[str, float],
                 boundary: bool = False) -> Step:
    """Time the kernel at `commit` against the kernel at `against`, interleaved, in this
    process, on each (mode, case) of `items`; judge each case's A/B figure within its
    tolerance (`tolerances`, by case key)."""
    from gemmgate.providers import Unsupported
    from gemmgate.run import Runner

    try:
        pkg = load_kernels(ctx, commit)
    except ValueError as e:  # like `git bisect skip`: the search goes on around it
        return Step(commit, against, SKIP, (), str(e), boundary)

    def untimed_vendor(inp, mode):
        raise Unsupported("not timed by bisect (A/B needs only the two kernels)")

    runner = Runner(replace(ctx, reference=against), triton=pkg, vendor=untimed_vendor)
    cases = tuple(judge_ab(r, tolerances[r.key])
                  for r in (runner.run_case(mode, case) for mode, case in items))
    verdict, note = step_verdict(cases)
    return Step(commit, against, verdict, cases, note, boundary)
