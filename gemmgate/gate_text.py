"""The gate's words: its table rows (console and Markdown), the CI step summary, the PR
comment and the GitHub annotations, and the notes a check prints about its clocks and its
software. The verdicts themselves are gemmgate/gate.py's."""

from __future__ import annotations

from collections.abc import Sequence

from gemmgate.compare import (
    IMPROVED,
    INCONCLUSIVE,
    MIN_JUDGED,
    REGRESSED,
    Judgement,
    band,
    slower_bound,
    within,
)
from gemmgate.gate import EMPTY, CaseVerdict, GateResult, join_notes
from gemmgate.gate_levels import ADVISORY
from gemmgate.markdown import md_cell, md_row
from gemmgate.results import CaseResult

GATE_HEAD = ("case", "verdict", "ratio change", "95% CI", "tolerance", "level",
             "TFLOP/s change", "A/B change", "note")


def verdict_row(v: CaseVerdict) -> tuple[str, ...]:
    """One case's cells under GATE_HEAD: the terminal table and Markdown share them."""
    r, t = v.ratio, v.tflops
    return (v.key, v.verdict + (" (re-measured)" if v.remeasured else ""),
            f"{r.change:+.2%}" if r else "—",
            f"[{r.ci_low:+.2%}, {r.ci_high:+.2%}]" if r else "—",
            band(r.tolerance) if r else "—", v.level or "—",
            f"{t.change:+.2%}" if t else "—",
            f"{v.ab.change:+.2%}" if v.ab else "—", v.note)


HELD_DOWN = ("sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake")


def clock_note(results: Sequence[CaseResult]) -> str:
    """One line when NVML said clocks were held down (power cap, thermal) after cases:
    their speed ratios then move between runs (docs/RUNNERS.md: lock clocks)."""
    counts: dict[str, int] = {}
    held = 0
    for r in results:
        reasons = [x for x in r.telemetry.get("clock_reasons", []) if x in HELD_DOWN]
        held += bool(reasons)
        for x in reasons:
            counts[x] = counts.get(x, 0) + 1
    if not held:
        return ""
    why = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    return (f"Clocks were held down after {held} of {len(results)} cases ({why}): speed "
            "ratios of power-heavy cases move between runs, so their tolerances are wide. "
            "Lock the runner's clocks (docs/RUNNERS.md) and recalibrate.")


SOFTWARE = ("triton", "torch", "cuda", "hip", "driver")   # what compiles and runs the kernels


def software_note(provenance: dict, env: dict) -> str:
    """One line where the baseline was measured on other software than this run
    (`SOFTWARE`, where both record it): a stored ratio then also moves with the compiler
    or the library (session 53: IEEE fp32's TMA tiles compiled to other code on triton
    3.9 than on 3.6), which an A/B against a reference kernel, timed in this process on
    this software, does not."""
    # (the values as Markdown text on one line: the baseline's raw provenance put a
    # </details>, a heading and an <img> into the bot's PR comment; a review)
    moved = [f"{k} {md_cell(provenance[k])} -> {md_cell(env[k])}" for k in SOFTWARE
             if provenance.get(k) and env.get(k) and str(provenance[k]) != str(env[k])]
    if not moved:
        return ""
    return (f"The baseline was measured on other software ({'; '.join(moved)}): a stored "
            "ratio's change can be the software's, not this commit's. An A/B (--ab-ref) "
            "separates them; a baseline calibrated on this software removes it.")


def _head(gate: GateResult, chip: str) -> str:
    return (f"### gemmgate check on {chip}: "
            + ("**FAILED**" if gate.failed else "passed")
            + f" — {gate.count('regressed')} regressed, {gate.count('failed')} failed "
              f"accuracy, {gate.count('improved')} improved, {gate.count('unchanged')} "
              f"unchanged, {gate.count('inconclusive')} inconclusive"
            + (f", {n} empty (nothing to time)" if (n := gate.count(EMPTY)) else ""))


def markdown(gate: GateResult, chip: str, ab_ref: str | None = None,
             note: str = "") -> str:
    lines = [_head(gate, chip), ""]
    if ab_ref:
        lines += [f"A/B: each case also timed against the kernel at `{ab_ref[:12]}` in the "
                  "same process.", ""]
    if note:
        lines += [note, ""]
    lines += [md_row(GATE_HEAD), "|" + "---|" * len(GATE_HEAD)]
    lines += [md_row(verdict_row(v)) for v in gate.verdicts]
    if gate.missing:
        lines += ["", f"Not run (in the baseline): {', '.join(gate.missing)}"]
    if gate.extra:
        lines += ["", f"Not in the baseline (new cases): {', '.join(gate.extra)}"]
    return "\n".join(lines) + "\n"


CHANGED = ("failed", REGRESSED, INCONCLUSIVE, IMPROVED)   # in the order a comment lists them


def _arrow(v: CaseVerdict) -> str:
    j = v.ab or v.ratio or v.tflops  # an inconclusive case: which way it moved
    way = "↓?" if j and j.change < 0 else "↑?" if j and j.change > 0 else "?"
    return {"failed": "✗", REGRESSED: "↓", IMPROVED: "↑"}.get(v.verdict, way)


def _moved(j: Judgement | None) -> str:
    if j is None:
        return "—"
    arrow = "↑" if j.change > 0 else "↓" if j.change < 0 else "→"
    return f"{arrow} {j.change:+.2%} ({band(j.tolerance)})"


def _why(v: CaseVerdict) -> str:
    """The verdict policy's reason (docs/GATE.md), then the case's note."""
    by_ab = v.ab is not None and v.ab.verdict == v.verdict
    stored = "stored ratio" if v.ratio is not None else "Triton's stored TFLOP/s"
    why = {REGRESSED: "A/B: slower than the reference kernel" if by_ab else
           f"{stored} below the baseline at {v.level} level",
           IMPROVED: "A/B: faster than the reference kernel" if by_ab else
           f"{stored} above the baseline at {v.level} level",
           INCONCLUSIVE: _unsure(v),
           }.get(v.verdict, "")
    return md_cell(join_notes(why if why not in v.note else "", v.note))


def _unsure(v: CaseVerdict) -> str:
    """Why a case is inconclusive, of its causes (one reason said for all of them named
    causes that were not there; a review)."""
    stored = v.ratio or v.tflops
    if v.ab is not None and v.ab.verdict == INCONCLUSIVE:
        j = v.ab
    elif v.level == ADVISORY and stored is not None and stored.verdict in (REGRESSED,
                                                                         IMPROVED):
        return "beyond the tolerance at the advisory level (this GPU is not calibrated)"
    else:
        j = stored
    if j is None:
        return "no figure on both sides to compare"
    if j.verdict != INCONCLUSIVE:
        return ""
    lower, inside = slower_bound(j.tolerance), within(j.change, j.tolerance)
    if inside and j.ci_low < lower:
        return f"within the tolerance, but its CI reaches {j.ci_low:+.2%}, below {lower:+.2%}"
    if not inside and j.ci_low <= 0 <= j.ci_high:
        return "beyond the tolerance, but the CI reaches the baseline"
    return f"too few rounds for a 95% CI (a verdict needs {MIN_JUDGED})"


COMMENT_MAX = 60_000   # characters: GitHub refuses a comment of more than 65,536


def comment(gate: GateResult, chip: str, ab_ref: str | None = None, note: str = "") -> str:
    """A PR comment: the cases that changed (failed, regressed, inconclusive, improved)
    with arrows, A/B and stored ratio changes and the reason; then, folded, the rest."""
    changed = sorted((v for v in gate.verdicts if v.verdict in CHANGED),
                     key=lambda v: CHANGED.index(v.verdict))
    rest = [v for v in gate.verdicts if v.verdict not in CHANGED]
    lines = [_head(gate, chip), ""]
    if ab_ref:
        lines += [f"A/B against the kernel at `{ab_ref[:12]}`, in the same process.", ""]
    lines += ["| | case | verdict | A/B change | stored ratio change | level | reason |",
              "|---|---|---|---|---|---|---|"] if changed else ["No case changed."]
    lines += [f"| {_arrow(v)} | `{v.key}` | **{v.verdict}**"
              f"{' (re-measured)' if v.remeasured else ''} | {_moved(v.ab)} | "
              f"{_moved(v.ratio) if v.ratio or not v.tflops else 'TFLOP/s ' + _moved(v.tflops)}"
              f" | {v.level or '—'} | {_why(v)} |" for v in changed]
    folded = [md_row(GATE_HEAD), "|" + "---|" * len(GATE_HEAD),
              *(md_row(verdict_row(v)) for v in rest)] if rest else []
    tail = []
    for what, keys in (("Not run (in the baseline)", gate.missing),
                       ("Not in the baseline (new cases)", gate.extra)):
        tail += ["", _listed(what, keys)] if keys else []
    # the notes (an injected slowdown, other software, held-down clocks) are kept whole:
    # after the changed cases, they were the first lines a cut comment lost (a review);
    # whole up to NOTE_MAX (a baseline's provenance of 70,000 characters made the
    # software note longer than the comment's limit: the comment came out at 70,375
    # characters, which GitHub refuses, without its heading; a review)
    return _capped(lines, folded, f"{len(rest)} other case(s)", tail,
                   ["", _cut(note, NOTE_MAX)] if note else [])


LIST_MAX = 4_000   # characters of a list of case keys in the comment
NOTE_MAX = 4_000   # characters of the notes in the comment


def _cut(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters where longer, saying so."""
    return text if len(text) <= limit else f"{text[:limit]} … (cut)"


def _listed(what: str, keys) -> str:
    text = f"{what}: {', '.join(keys)}"
    if len(text) <= LIST_MAX:
        return text
    cut = text[:LIST_MAX].rsplit(", ", 1)[0]
    shown = cut.count(", ") + 1
    return f"{cut} … and {len(keys) - shown} more"


def _capped(head: list[str], folded: list[str], title: str, tail: list[str],
            notes: Sequence[str] = ()) -> str:
    """The comment: `head` (the changed cases), `folded` (the other cases' table) inside
    a <details> fold titled `title`, then `tail` (the missing and new cases), cut to
    COMMENT_MAX characters at a line where needed, saying how many were left out (420
    verdicts made 91,594 characters, which GitHub refuses; a review). The fold is always
    closed and the tail always kept: cut, the fold was left open around the notice and
    the missing cases' list was lost (a review). `notes` follow `head`, always kept."""
    notes = list(notes)
    fold = ["", f"<details><summary>{title}</summary>", ""] if folded else []
    close = ["", "</details>"] if folded else []
    whole = head + notes + fold + folded + close + tail
    if len("\n".join(whole)) + 1 <= COMMENT_MAX:
        return "\n".join(whole) + "\n"
    budget = COMMENT_MAX - 400 - len("\n".join(notes + fold + close + tail))
    lines, size = head + folded, 0
    n = 0   # the lines kept: the first ones that fit, none after the first that does not
    while n < len(lines) and size + len(lines[n]) + 1 <= budget:
        size += len(lines[n]) + 1
        n += 1
    notice = ["", f"… {len(lines) - n} more line(s) left out (GitHub's comment limit): the "
              "whole gate is in the check's --json and the job's summary."]
    body = head[:n] + notes + (fold + folded[:n - len(head)] + close if n > len(head)
                               else [])
    return "\n".join(body + notice + tail) + "\n"


def injected_note(fraction: float) -> str:
    """What a check slowed on purpose (`--inject-slowdown`) says of itself: its summary,
    comment and annotations read as a real regression (a review)."""
    return (f"This check was slowed on purpose (--inject-slowdown {fraction:g}): its "
            "verdicts validate the gate, they are not the kernel's.") if fraction else ""


def annotations(gate: GateResult, injected: float = 0.0) -> list[str]:
    """GitHub workflow commands: one ::error per regression or accuracy failure (each
    saying so where the check was slowed on purpose, `injected`)."""
    out = _annotations(gate)
    said = f" (injected slowdown {injected:g})" if injected else ""
    return [line + said for line in out]


def _annotations(gate: GateResult) -> list[str]:
    out = []
    for v in gate.verdicts:
        if v.verdict == REGRESSED and v.ab and v.ab.verdict == REGRESSED:
            out.append(f"::error title=gemmgate regression::{v.key}: " + _gh(
                f"{v.ab.change:+.2%} against the reference kernel in the same process"
                f"{_span(v.ab)}"))
        elif v.verdict == REGRESSED and (v.ratio or v.tflops):
            what = "Triton/vendor speed ratio" if v.ratio else "Triton's TFLOP/s"
            j = v.ratio or v.tflops
            out.append(f"::error title=gemmgate regression::{v.key}: " + _gh(
                f"{what} {j.change:+.2%}{_span(j)}" + ("" if v.ratio else f"; {v.note}")))
        elif v.verdict == REGRESSED:
            out.append(f"::error title=gemmgate regression::{v.key}: {_gh(v.note)}")
        elif v.verdict == "failed":
            out.append(f"::error title=gemmgate accuracy::{v.key}: {_gh(v.note)}")
    return out


def _span(j: Judgement) -> str:
    return f" (CI {j.ci_low:+.2%}..{j.ci_high:+.2%}, tolerance {band(j.tolerance)})"


def _gh(text: str) -> str:
    """A workflow command's message: %, CR and LF escaped as GitHub reads them (a
    reference kernel's multi-line failure cut the ::error, and its next line was read
    as a command of its own; a review)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
