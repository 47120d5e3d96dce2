"""The text of a bisect (gemmgate/cli_bisect.py): its outcome, its conclusion in one
paragraph, the step table printed after each step, and the Markdown summary."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from rich.table import Table

from gemmgate.bisect import (
    BAD,
    CLEAN,
    FOUND,
    RANGE,
    SKIP,
    Commit,
    SearchResult,
    Step,
)
from gemmgate.markdown import md_cell, md_row

CULPRIT, INCONCLUSIVE = "culprit", "inconclusive"   # outcomes beside search's clean/range
MAX_CASE_COLUMNS = 6  # past this, the step table folds the cases into one column


def outcome_of(result: SearchResult, boundary: Step | None) -> str:
    if result.status == FOUND:
        return CULPRIT if boundary is not None and boundary.verdict == BAD else INCONCLUSIVE
    return result.status  # clean | range | untestable


def figures(step: Step) -> str:
    """Each case's A/B change and verdict; with many cases, the regressed ones."""
    shown = step.cases
    if len(shown) > MAX_CASE_COLUMNS:
        shown = step.regressed[:MAX_CASE_COLUMNS]
    text = ", ".join(f"{c.key} {c.ab.change:+.2%} {c.verdict}" if c.ab else
                     f"{c.key} {c.verdict}" for c in shown)
    if len(step.cases) > MAX_CASE_COLUMNS:
        text = f"{len(step.regressed)} of {len(step.cases)} cases regressed" + (
            f" ({text}{', ...' if len(step.regressed) > len(shown) else ''})" if text else "")
    return text or step.note


def conclusion(outcome: str, result: SearchResult, first: Step | None, boundary: Step | None,
                info: dict[str, Commit], good: Commit, bad: Commit,
                steps: Sequence[Step] = ()) -> str:
    """The result in one paragraph; `first`: the first step (BAD against GOOD)."""
    if outcome == CLEAN:
        how = ("(its kernels/ is GOOD's: not timed)" if first is not None and not first.cases
               else "(A/B in one process)")   # (said "A/B" where nothing was timed; a review)
        return (f"nothing regressed at BAD {bad.short} against GOOD {good.short} {how}: "
                "no commit's kernels/ to blame (a slowdown a check saw comes from "
                "elsewhere: Triton, driver, machine)")
    if outcome in (CULPRIT, INCONCLUSIVE):
        x = info[result.first_bad]
        p = info[boundary.against]
        if outcome == CULPRIT:
            return (f"first slow commit: {x.sha} \"{x.subject}\" by {x.author}; against the "
                    f"commit before it ({p.short}): {figures(boundary)}")
        if boundary.verdict == SKIP:   # (it said "it is not: -33.52% inconclusive")
            return (f"inconclusive: {x.short} \"{x.subject}\" is the first commit the "
                    f"search found slower than GOOD {good.short}, but against the commit "
                    f"before it ({p.short}) it could not be judged: {figures(boundary)}; "
                    "re-run")
        return (f"inconclusive: {x.short} \"{x.subject}\" is the first commit the search "
                f"found slower than GOOD {good.short}, but against the commit before it "
                f"({p.short}) it is not: {figures(boundary)}. The slowdown may have come in "
                "over several commits, or a step was noise; re-run, or bisect with a lower "
                "--floor")
    if outcome == RANGE:
        cands = [info[c] for c in result.candidates]
        skipped = [c for c in cands if any(t == (c.sha, SKIP) for t in result.tested)]
        why = {s.commit: s.note for s in steps if s.verdict == SKIP}
        skips = "; ".join(f"{c.short} was a skip ({why.get(c.sha) or 'not judged'})"
                          for c in skipped)
        if len(cands) == 1:   # (the range's only kernels/ change, and no verdict of its own)
            return (f"the first slow commit is {cands[0].short} \"{cands[0].subject}\", the "
                    f"one commit there that changes kernels/, but {skips}, so it is not "
                    "confirmed")
        return (f"the first slow commit is one of {len(cands)} that change kernels/: "
                f"{', '.join(c.short for c in cands)} (oldest first); "
                + skips + ", so it cannot be isolated")
    why = f" ({first.note})" if first is not None and first.note else ""
    if first is not None and any(c.ab for c in first.cases):   # measured, not judged
        return (f"BAD {bad.short} against GOOD {good.short} was measured but not judged"
                f"{why}: nothing to bisect; re-run, give a larger --budget, or bisect with "
                "a higher --floor")
    return (f"BAD {bad.short} could not be measured against GOOD {good.short}{why}: "
            "nothing to bisect")


def _cell(step: Step, key: str) -> str:
    c = next((c for c in step.cases if c.key == key), None)
    if c is None:
        return "—"
    return f"{c.ab.change:+.2%} {c.verdict}" if c.ab else f"{c.verdict}: {c.note}"


def _row(n: str, step: Step, keys: Sequence[str], info: dict[str, Commit],
         good: str) -> list[str]:
    c = info[step.commit]
    against = "GOOD" if step.against == good else info[step.against].short
    if len(keys) <= MAX_CASE_COLUMNS:
        cells = [_cell(step, k) for k in keys]
    else:
        worst = min((c for c in step.cases if c.ab), key=lambda c: c.ab.change, default=None)
        cells = [f"{len(step.regressed)} of {len(keys)} regressed"
                 + (f"; worst {worst.key} {worst.ab.change:+.2%}" if worst else "")]
    verdict = step.verdict + (" (re-measure)" if step.boundary else "")
    return [n, c.short, c.subject, against, *cells, verdict, step.note]


def _head(keys: Sequence[str]) -> list[str]:
    cases = [f"{k} A/B" for k in keys] if len(keys) <= MAX_CASE_COLUMNS else ["cases"]
    return ["step", "commit", "subject", "against", *cases, "verdict", "note"]


def _numbered(steps: Sequence[Step]) -> list[tuple[str, Step]]:
    return [("re-measure" if s.boundary else str(i + 1), s) for i, s in enumerate(steps)]


def steps_table(steps: Sequence[Step], keys: Sequence[str], info: dict[str, Commit],
                 good: str) -> Table:
    t = Table(title=f"bisect steps (GOOD {good[:12]}; A/B: the commit's kernel against the "
                    "reference commit's, same process; < 0: slower)", title_justify="left")
    for h in _head(keys):
        t.add_column(h, no_wrap=h in ("commit", "step"))
    for n, s in _numbered(steps):
        style = "red" if s.verdict == BAD else "yellow" if s.verdict == SKIP else None
        t.add_row(*(escape(x) for x in _row(n, s, keys, info, good)), style=style)
    return t


def markdown(chip: str, outcome: str, text: str, steps: Sequence[Step], keys: Sequence[str],
              info: dict[str, Commit], good: str) -> str:
    head = {CULPRIT: "first slow commit found", CLEAN: "nothing regressed",
            INCONCLUSIVE: "**inconclusive**", RANGE: "**culprit not isolated** (skips)"}
    first = steps[0] if steps else None   # BAD's step: measured, inconclusive, it read
    # "BAD not measurable" over a conclusion saying it was measured (a review)
    judged_not = first is not None and any(c.ab for c in first.cases)
    unmeasured = "**BAD measured, not judged**" if judged_not else "**BAD not measurable**"
    lines = [f"### gemmgate bisect on {chip}: {head.get(outcome, unmeasured)}",
             "", md_cell(text), "", f"GOOD `{good[:12]}`, {len(keys)} case(s); A/B: the commit's "
             "kernel against the reference commit's in one process (< 0: slower).", "",
             "| " + " | ".join(_head(keys)) + " |", "|" + "---|" * len(_head(keys))]
    lines += [md_row(_row(n, s, keys, info, good)) for n, s in _numbered(steps)]   # (a
    # commit subject holding `<!--` hid the rest of the summary: a review)
    return "\n".join(lines) + "\n"
