"""A trials run's summaries, what is kept in the repository (docs/results, a few hundred
rows): one row per check and per (injected level, case), with verdict counts and the
changes' spread, and the gate's power read back from them (`power_from_summaries`, as
`trials.power` counts it from every case check). Pure: gemmgate/trials.py writes them."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from gemmgate import stats
from gemmgate.gate import EMPTY

CHECK_SUMMARY = ("source", "injected", "rc", "gpu", "cases", "regressed", "improved",
                 "stored_regressed", "stored_improved", "ab_regressed", "ab_improved", "failed",
                 "empty")
CASE_SUMMARY = ("injected", "mode", "case", "level", "checks", "failed", "empty", "regressed",
                "improved",
                "stored_regressed", "stored_improved", "ab_regressed", "ab_improved",
                "stored_judged", "ab_judged",
                "ratio_tolerance", "ratio_change_median", "ratio_change_max_abs",
                "ab_tolerance", "ab_change_median", "ab_change_max_abs")


def _count(rows: list[dict], column: str, verdict: str) -> int:
    return sum(r.get(column) == verdict for r in rows)


def _verdict_counts(rows: list[dict]) -> dict:
    return {"failed": _count(rows, "verdict", "failed"),
            "empty": _count(rows, "verdict", EMPTY),
            "regressed": _count(rows, "verdict", "regressed"),
            "improved": _count(rows, "verdict", "improved"),
            "stored_regressed": _count(rows, "stored_verdict", "regressed"),
            "stored_improved": _count(rows, "stored_verdict", "improved"),
            "ab_regressed": _count(rows, "ab_verdict", "regressed"),
            "ab_improved": _count(rows, "ab_verdict", "improved")}


def _stats(rows: list[dict], column: str) -> tuple:
    xs = [float(r[column]) for r in rows if r.get(column) not in ("", None)]
    if not xs:
        return "", ""
    return f"{stats.median(xs):.4g}", f"{max(abs(x) for x in xs):.4g}"


def summarize_checks(rows: Iterable[dict]) -> list[dict]:
    """One row per check: its level, exit code, GPU(s) and verdict counts."""
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["source"], []).append(r)
    return [{"source": src, "injected": rs[0]["injected"], "rc": rs[0].get("rc", ""),
             "gpu": "+".join(sorted({r.get("gpu", "") for r in rs} - {""})),
             "cases": len(rs), **_verdict_counts(rs)} for src, rs in by.items()]


def summarize_cases(rows: Iterable[dict]) -> list[dict]:
    """One row per (injected level, case): verdict counts over the checks, and the median
    and largest change of the stored ratio and of A/B, with their tolerances."""
    by: dict[tuple, list[dict]] = {}
    for r in rows:
        by.setdefault((float(r["injected"] or 0), r["mode"], r["case"]), []).append(r)
    out = []
    for (level, mode, case), rs in sorted(by.items()):
        levels = Counter(r.get("level", "") for r in rs)
        judged = [r for r in rs if r.get("verdict") not in ("failed", EMPTY)]
        out.append({"injected": f"{level:g}", "mode": mode, "case": case,
                    "level": levels.most_common(1)[0][0], "checks": len(rs),
                    **_verdict_counts(rs),
                    # the case checks each judgement alone judged (a check without
                    # --ab-ref has no A/B verdict: counted as judged, its power read back
                    # disagreed with `trials.power`; a review)
                    "stored_judged": sum(bool(r.get("stored_verdict")) for r in judged),
                    "ab_judged": sum(bool(r.get("ab_verdict")) for r in judged),
                    "ratio_tolerance": _stats(rs, "ratio_tolerance")[0],
                    "ratio_change_median": _stats(rs, "ratio_change")[0],
                    "ratio_change_max_abs": _stats(rs, "ratio_change")[1],
                    "ab_tolerance": _stats(rs, "ab_tolerance")[0],
                    "ab_change_median": _stats(rs, "ab_change")[0],
                    "ab_change_max_abs": _stats(rs, "ab_change")[1]})
    return out


def power_from_summaries(checks: Iterable[dict], cases: Iterable[dict],
                         verdict: str = "") -> dict[float, dict]:
    """`power` from the two summaries: `verdict` "" counts the gate's verdicts, "stored_"
    the stored baseline's judgement alone, "ab_" A/B alone."""
    out: dict[float, dict] = defaultdict(lambda: {
        "checks": 0, "red": 0, "judged": 0, "regressed": 0, "improved": 0,
        "wrong": Counter()})
    for c in checks:
        p = out[float(c["injected"] or 0)]
        p["checks"] += 1
        p["red"] += str(c.get("rc", "")) == "1"
    for c in cases:
        level = float(c["injected"] or 0)
        p = out[level]
        # a failed or empty case check is not judged (as in `power`); summaries written
        # before the `failed` or `empty` column had none
        n = int(c["checks"]) - int(c.get("failed") or 0) - int(c.get("empty") or 0)
        if verdict and c.get(f"{verdict}judged") not in (None, ""):   # (older summaries:
            n = int(c[f"{verdict}judged"])                             # none kept)
        hit = int(c[f"{verdict}regressed"])
        p["judged"] += n
        p["regressed"] += hit
        p["improved"] += int(c[f"{verdict}improved"])
        wrong = hit if level == 0 else n - hit
        if wrong:
            p["wrong"][f"{c['mode']}-{c['case']}"] += wrong
    return dict(sorted(out.items()))
