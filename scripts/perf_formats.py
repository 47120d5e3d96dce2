"""Markdown tables from the measurement files under docs/results: the functions
scripts/perf_tables.py's registry calls.

Each function reads one kind of file (baselines/<chip>.json; a gemmgate trials
checks.csv or its summaries; cases.csv from scripts/summarize_runs.py; tiles*.csv from
scripts/device/tiles.py; tuned.csv from scripts/keep_entries.py; a session's own small
CSVs) and returns a Markdown table, without its surrounding blank lines.
"""

from __future__ import annotations

import csv
import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gemmgate.stats import geomean, median  # noqa: E402
from gemmgate.trials import power, power_from_summaries  # noqa: E402
from gemmgate.tuning import config_name  # noqa: E402

MODES = ("fp32", "tf32", "bf16", "fp16", "fp8")
ALL_MODES = MODES + ("tf32x3",)
TARGETS = {"bf16": 1.05, "fp16": 1.05, "tf32": 0.95, "fp32": 0.95, "fp8": 0.90,
           "tf32x3": 1.4}   # issue 11 (tf32x3: against IEEE fp32 on 4096^3 and 8192^3)


# --- baseline tables -------------------------------------------------------------------


def baseline_tables(path: Path) -> str:
    """One table per mode of a baselines/<chip>.json: speeds, ratio, noise, errors, tile."""
    cases = json.loads(path.read_text())["cases"]
    out = []
    for mode in ALL_MODES:
        rows = [(key, c) for key, c in cases.items() if c["mode"] == mode]
        if not rows:
            continue
        geo = geomean([c["ratio"] for _, c in rows if c["ratio"]])
        out += [f"**{mode}** — geomean Triton/vendor speed ratio **{geo:.3f}**", "",
                "| case | Triton TFLOP/s | vendor TFLOP/s | ratio | A/A noise (ratio) | "
                "A/B noise | Triton err | vendor err | Triton tile |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for key, c in rows:
            t, v = c["providers"]["triton"], c["providers"].get("vendor")
            vt = f"{v['tflops']:.1f}" if v and v["tflops"] else "n/a"
            ve = f"{v['error']:.1e}" if v and v["error"] is not None else "n/a"
            r = f"{c['ratio']:.3f}" if c["ratio"] else "—"
            nz, ab = c["noise"]["ratio"], c["noise"].get("ab")
            tile = config_name(c["tuning"]["config"]) if c.get("tuning") else "—"
            out.append(f"| {key.split('-', 1)[1]} | {t['tflops']:.1f} | {vt} | {r} | "
                       f"{'—' if nz is None else f'{nz:.2%}'} | "
                       f"{'—' if ab is None else f'{ab:.2%}'} | "
                       f"{t['error']:.1e} | {ve} | {tile} |")
        out.append("")
    return "\n".join(out).rstrip("\n")


# --- power tables from checks.csv ------------------------------------------------------


def power_table(groups: list[tuple[str, dict]], label: str = "") -> str:
    """Markdown power table; with `label`, one block of rows per (name, power) group."""
    head = (f"| {label} " if label else "") + \
        "| injected slowdown | checks | case checks | flagged regressed | fraction |"
    out = [head, "|" + "---|" * bool(label) + "---:|---:|---:|---:|---:|"]
    for name, pw in groups:
        for level, p in pw.items():
            frac = f"{p['regressed'] / p['judged']:.1%}" if p["judged"] else "—"
            if level == 0.03:
                frac = f"**{frac}**"
            what = f"{level:.0%}" + (" (A/A: false alarms)" if level == 0 else "")
            out.append((f"| {name} " if label else "") +
                       f"| {what} | {p['checks']} | {p['judged']} | {p['regressed']} | {frac} |")
    return "\n".join(out)


def _summaries(*dirs: Path, verdict: str = "") -> dict:
    checks = [r for d in dirs for r in _rows(d / "checks_summary.csv")]
    cases = [r for d in dirs for r in _rows(d / "cases_summary.csv")]
    return power_from_summaries(checks, cases, verdict)


def wrong_cases(rows: list[dict]) -> str:
    """The false alarms (0%) and misses (> 0%) of `power`, one case per line."""
    out = []
    for level, p in power(rows).items():
        if p["wrong"]:
            out.append(f"\n{'false alarms' if level == 0 else 'missed'} at {level:.0%}:")
            out += [f"  {case}: {n}" for case, n in sorted(p["wrong"].items())]
    return "\n".join(out)



# --- the kernel's sessions (issue 11) ---------------------------------------------------


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _grouped(rows, key: Callable[[dict], object]) -> dict:
    """Rows by key(row), each group in file order, groups in order of first appearance."""
    by: dict = {}
    for r in rows:
        by.setdefault(key(r), []).append(r)
    return by


def _ab(extra: str) -> float | None:
    got = dict(x.split(":", 1) for x in extra.split()) if extra else {}
    return float(got["ab"]) if "ab" in got else None


def _ratios(rows: list[dict], label: str | None, mode: str) -> list[dict]:
    return [r for r in rows if r["label"] == label and r["mode"] == mode and r["ratio"]]

def tiles_table(path: Path, flush: str = "1", mode: str = "", label: str = "") -> str:
    """scripts/device/tiles.py's rows with the L2 flushed (as every run times), per shape
    fastest first: microseconds, TFLOP/s, speed ratio to cuBLAS (one mode's, if given;
    one call's, `label`, where the file gathers several)."""
    rows = [r for r in _rows(path) if r["flush"] == flush and mode in ("", r["mode"])
            and label in ("", r.get("label"))]
    rows.sort(key=lambda r: (r["shape"], float(r["us"])))
    return "\n".join(["| shape | provider / tile | us | TFLOP/s | ratio |",
                      "|---|---|---:|---:|---:|"] +
                     [f"| {r['shape']} | {r['provider']} | {r['us']} | {r['tflops']} | "
                      f"{r['ratio']} |" for r in rows])


def s12_inductor(path: Path, label: str = "callF-ind-losses") -> str:
    """Session 11's nine nightly shapes where inductor was faster, bf16, again (session
    12's call F; session 14's call E, with 1000^3)."""
    rows = [r for r in _rows(path) if r["label"] == label]
    out = ["| case | Triton/cuBLAS | inductor/Triton time | tile |", "|---|---:|---:|---|"]
    for r in sorted(rows, key=_vs_inductor):
        out.append(f"| {r['case']} | {float(r['ratio']):.3f} | {_vs_inductor(r):.3f} | "
                   f"{r['tile']} |")
    return "\n".join(out)


Cell = tuple[Path, str]   # a cases.csv and the label of one run of a set


def targets_table(rows: dict[str, dict[str, Cell]]) -> str:
    """Where issue 11's graph-timed targets stand: per set (`rows`) and mode, the geomean
    Triton/cuBLAS of that set's run named for the cell (each from the latest run of that
    mode on that set, which may be another session's); the target first."""
    modes = [m for m in MODES if any(m in cells for cells in rows.values())]
    out = ["| set | " + " | ".join(modes) + " |", "|---|" + "---:|" * len(modes),
           "| target | " + " | ".join(f"≥ {TARGETS[m]:.2f}" for m in modes) + " |"]
    for name, cells in rows.items():
        got = []
        for m in modes:
            xs = [float(r["ratio"]) for r in _ratios(_rows(cells[m][0]), cells[m][1], m)] \
                if m in cells else []
            got.append(f"{geomean(xs):.3f}" if xs else "")
        out.append(f"| {name} | " + " | ".join(got) + " |")
    return "\n".join(out)


HOLDOUTS = ("holdout", "holdout2", "holdout3", "holdout4", "holdout5")


def sets_targets(pr: Cell | dict[str, Cell],
                 cells: dict[str, tuple[Cell, tuple[Path, str]]]) -> str:
    """`targets_table` over pr (one run for every mode, or a run per mode), nightly and
    the holdouts: per mode, its nightly run and its holdout runs (a file and a label with
    `{set}` for each holdout's name)."""
    return targets_table({
        "pr": {m: pr[m] if isinstance(pr, dict) else pr for m in cells},
        "nightly": {m: nightly for m, (nightly, _) in cells.items()},
        **{h: {m: (path, label.format(set=h)) for m, (_, (path, label)) in cells.items()}
           for h in HOLDOUTS}})


def label_steps(path: Path, prefixes: tuple[str, ...] = ("",)) -> str:
    """Per label (in file order; those that start with one of `prefixes`) and mode: cases,
    geomean Triton/cuBLAS, A/B geomean (where the label has an A/B reference), worst
    ratio, cases below 0.80."""
    rows = [r for r in _rows(path) if r["label"].startswith(prefixes)]
    out = ["| label | mode | cases | geomean | ab_geomean | min_ratio | below_080 |",
           "|---|---|---|---|---|---|---|"]
    for label in dict.fromkeys(r["label"] for r in rows):
        for mode in ALL_MODES:
            rs = _ratios(rows, label, mode)
            if not rs:
                continue
            xs = [float(r["ratio"]) for r in rs]
            ab = [x for x in (_ab(r["extra"]) for r in rs) if x]
            out.append(f"| {label} | {mode} | {len(rs)} | {geomean(xs):.3f} | "
                       f"{f'{geomean(ab):.3f}' if ab else ''} | {min(xs):.2f} | "
                       f"{sum(x < 0.8 for x in xs)} |")
    return "\n".join(out)


def k_loop_groups(path: Path, prefix: str) -> str:
    """The tiled kernel's K loops compared (session 28): per kind of K walk (one range or
    split-K; whole BLOCK_K blocks or a partial last one) and K a multiple of 16 or not,
    the A/B of the labels with `prefix`: cases, geomean, lowest and highest."""
    groups: dict[str, list[float]] = {}
    for r in _rows(path):
        ab = _ab(r["extra"])
        if not r["label"].startswith(prefix) or not ab:
            continue
        k = int(re.search(r"-k(\d+)", r["case"]).group(1))
        bk = int(re.match(r"(?:\w+ )?\d+x\d+x(\d+)", r["tile"]).group(1))
        split = re.search(r" k\d+", r["tile"]) is not None
        kind = (f"{'split-K' if split else 'one range'}, "
                f"{'partial last block' if k % bk else 'whole blocks'}, "
                f"K {'' if k % 16 == 0 else 'not '}a multiple of 16")
        groups.setdefault(kind, []).append(ab)
    out = ["| K walk | cases | A/B geomean | lowest | highest |", "|---|---:|---:|---:|---:|"]
    for kind, xs in sorted(groups.items()):
        out.append(f"| {kind} | {len(xs)} | {geomean(xs):.3f} | {min(xs):.3f} | "
                   f"{max(xs):.3f} |")
    return "\n".join(out)


def ab_changes(path: Path, prefix: str, lo: float, hi: float, strip: str | None = None) -> str:
    """The cases an A/B moved out of [lo, hi] in the labels with `prefix` (same process,
    same inputs; > 1: the current kernel is faster), largest change first; the set column
    is the label less `strip` (default: the prefix)."""
    rows = [r for r in _rows(path) if r["label"].startswith(prefix)
            and not lo <= (_ab(r["extra"]) or 1) <= hi]
    out = ["| set | mode | case | ratio | A/B | tile |", "|---|---|---|---:|---:|---|"]
    for r in sorted(rows, key=lambda r: -abs(_ab(r["extra"]) - 1)):
        out.append(f"| {r['label'].removeprefix(prefix if strip is None else strip)} | "
                   f"{r['mode']} | {r['case']} | "
                   f"{float(r['ratio']):.2f} | {_ab(r['extra']):.3f} | {r['tile']} |")
    return "\n".join(out)


def ab_rows(path: Path, prefix: str, strip: str | None = None) -> str:
    """Every case of the A/B labels with `prefix`, largest change first (`ab_changes` with
    no range left out)."""
    return ab_changes(path, prefix, math.inf, -math.inf, strip)


def _vs_inductor(r: dict) -> float | None:
    """Inductor's time / Triton's from a row's `extra` (> 1: Triton is faster)."""
    m = re.search(r"inductor:([\d.]+)", r["extra"])
    return float(m.group(1)) if m else None
def _long_tail(case: str) -> bool:
    """A case whose M, N, K or leading dimension is not a multiple of 16 (issue 11)."""
    dims = [int(x) for x in re.findall(r"[mnk](\d+)", case)]   # layouts hold no m, n, k
    pad = re.search(r"\+p(\d+)", case)
    return any(d % 16 for d in dims) or (pad is not None and int(pad.group(1)) % 16 != 0)


def s9_long_tail(path: Path, prefix: str | tuple[str, ...], graph_only: bool = False) -> str:
    """Issue 11's long tail (M, N, K or leading dimension not a multiple of 16), over
    every set of the labels with `prefix` (or any of several; `graph_only`: not the eager
    labels): per mode, how many cases reach 1.2x cuBLAS."""
    rows = [r for r in _rows(path) if r["label"].startswith(prefix) and r["ratio"]
            and _long_tail(r["case"]) and not (graph_only and r["label"].endswith("-eager"))]
    out = ["| mode | long-tail cases | geomean | ≥ 1.2x | < 0.80 | worst |",
           "|---|---:|---:|---:|---:|---|"]
    for mode in ALL_MODES:
        rs = [r for r in rows if r["mode"] == mode]
        if rs:
            out.append(f"| {mode} | {_ratio_cells(rs)} |")
    return "\n".join(out)


def _ratio_cells(rs: list[dict]) -> str:
    """Cases' ratios to cuBLAS as table cells: count | geomean | at 1.2x or more | below
    0.80 | the slowest case and its ratio."""
    xs = [float(r["ratio"]) for r in rs]
    worst = min(rs, key=lambda r: float(r["ratio"]))
    return (f"{len(rs)} | {geomean(xs):.3f} | {sum(x >= 1.2 for x in xs)} | "
            f"{sum(x < 0.8 for x in xs)} | {worst['case']} {float(worst['ratio']):.2f}")


def alignment_split(path: Path, label: str) -> str:
    """One run's cases against cuBLAS per mode and alignment (every dimension a multiple of
    16; of 8, not all of 16: issue 11's long tail too; any other): count, geomean, how
    many at 1.2x or more and below 0.80, the slowest."""
    rows = [r for r in _rows(path) if r["label"] == label and r["ratio"]]

    def kind(case: str) -> str:
        dims = [int(x) for x in re.findall(r"[mnk](\d+)", case)]
        return "16" if not any(d % 16 for d in dims) else "8" if not any(d % 8 for d in dims) \
            else "other"

    out = ["| mode | dimensions | n | geomean | ≥ 1.2x | < 0.80 | slowest |",
           "|---|---|---:|---:|---:|---:|---|"]
    for mode in ALL_MODES:
        for name, want in (("multiples of 16", "16"), ("multiples of 8", "8"),
                           ("other", "other")):
            rs = [r for r in rows if r["mode"] == mode and kind(r["case"]) == want]
            if rs:
                out.append(f"| {mode} | {name} | {_ratio_cells(rs)} |")
    return "\n".join(out)


def ratios_below(path: Path, prefix: str | tuple[str, ...], under: float,
                 strip: str | None = None) -> str:
    """The cases of the labels with `prefix` (or any of several) that ran below `under` of
    cuBLAS, slowest first (issue 11: no case below 0.80); the set column is the label less
    `strip` (default: the prefix, where one is given)."""
    rows = [r for r in _rows(path) if r["label"].startswith(prefix) and r["ratio"]
            and float(r["ratio"]) < under]
    out = ["| set | mode | case | ratio | tile |", "|---|---|---|---:|---|"]
    cut = strip if strip is not None else prefix if isinstance(prefix, str) else ""
    for r in sorted(rows, key=lambda r: float(r["ratio"])):
        out.append(f"| {r['label'].removeprefix(cut)} | "
                   f"{r['mode']} | {r['case']} | {float(r['ratio']):.2f} | {r['tile']} |")
    return "\n".join(out)


def tuned_summary(path: Path) -> str:
    """A tune call's entries (a session's tuned.csv) per call and mode: keys written, new
    keys, retuned keys whose tile changed, searches the budget cut short, entries kept."""
    by = _grouped(_rows(path), lambda r: (r["call"], r["mode"]))
    out = ["| call | mode | keys | new | tile changed | cut short | kept |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for (call, mode), rs in by.items():
        cut = sum(int(a) < int(b) for a, _, b in (r["tried"].partition("/") for r in rs) if b)
        out.append(f"| {call} | {mode} | {len(rs)} | {sum(not r['before'] for r in rs)} | "
                   f"{sum(bool(r['before']) and r['before'] != r['after'] for r in rs)} | "
                   f"{cut} | {sum(r['kept'] == 'yes' for r in rs)} |")
    return "\n".join(out)


def variant_medians(path: Path) -> str:
    """An exploration's kernels side by side (rows shape, mode, rep, variant, us, tflops,
    ratio: a variant timed in several interleaved repeats): per shape, each variant's
    median microseconds and ratio to cuBLAS over the repeats, fastest first."""
    by = _grouped(_rows(path), lambda r: (r["shape"], r["variant"]))
    out = ["| shape | variant | us | ratio | repeats |", "|---|---|---:|---:|---:|"]
    for shape in dict.fromkeys(s for s, _ in by):
        rows = [(v, rs) for (s, v), rs in by.items() if s == shape]
        rows.sort(key=lambda vr: -median([float(r["ratio"]) for r in vr[1]]))
        for v, rs in rows:
            out.append(f"| {shape} | {v} | {median([float(r['us']) for r in rs]):.2f} | "
                       f"{median([float(r['ratio']) for r in rs]):.3f} | {len(rs)} |")
    return "\n".join(out)


def inductor_summary(path: Path, label: str) -> str:
    """Issue 11's inductor target over a label's run (`--providers ...,inductor`): per
    mode, cases, geomean Triton/cuBLAS and inductor time / Triton time, how many cases
    Triton is faster on, and the ones it is not."""
    rows = [r for r in _rows(path) if r["label"] == label and _vs_inductor(r)]
    out = ["| mode | cases | Triton/cuBLAS | inductor/Triton | faster than inductor | "
           "slower on |", "|---|---:|---:|---:|---:|---|"]
    for mode in ALL_MODES:
        rs = [r for r in rows if r["mode"] == mode]
        if not rs:
            continue
        vs = [_vs_inductor(r) for r in rs]
        slower = ", ".join(f"{r['case']} {_vs_inductor(r):.3f}"
                           for r in sorted(rs, key=_vs_inductor) if _vs_inductor(r) < 1)
        out.append(f"| {mode} | {len(rs)} | {geomean([float(r['ratio']) for r in rs]):.3f} "
                   f"| {geomean(vs):.3f} | {sum(v >= 1 for v in vs)} | {slower or '-'} |")
    return "\n".join(out)


def pick_and_best(path: Path, flush: str = "1") -> str:
    """Per shape and mode of a tiles.py CSV (L2 flushed): cuBLAS's microseconds, the
    table's pick and the fastest named tile, each with its speed ratio to cuBLAS; the
    geomeans of both over the shapes last."""
    by = _grouped((r for r in _rows(path) if r["flush"] == flush),
                  lambda r: (r["shape"], r["mode"]))
    out = ["| shape | mode | cuBLAS us | pick | ratio | fastest named tile | ratio |",
           "|---|---|---:|---|---:|---|---:|"]
    picks, bests = [], []
    for (shape, mode), rs in by.items():
        vendor = next(r for r in rs if r["provider"] == "vendor")
        pick = next(r for r in rs if r["provider"].startswith("pick "))
        named = [r for r in rs if r is not vendor and r is not pick]
        best = max(named, key=lambda r: float(r["ratio"]))
        picks.append(float(pick["ratio"]))
        bests.append(max(float(best["ratio"]), float(pick["ratio"])))
        out.append(f"| {shape} | {mode} | {vendor['us']} | {pick['provider'][5:]} | "
                   f"{float(pick['ratio']):.3f} | {best['provider']} | "
                   f"{float(best['ratio']):.3f} |")
    out.append(f"| geomean | | | | {geomean(picks):.3f} | pick or fastest named | "
               f"{geomean(bests):.3f} |")
    return "\n".join(out)


def tile_matrix(path: Path, flush: str = "1") -> str:
    """A tiles.py CSV (one mode, L2 flushed) as a matrix: a row a shape, a column each of
    the pick and the named tiles, each cell its speed ratio to cuBLAS; the geomean of each
    column over the shapes it ran last."""
    rows = [r for r in _rows(path) if r["flush"] == flush and r["provider"] != "vendor"]
    cols = list(dict.fromkeys("pick" if r["provider"].startswith("pick ") else r["provider"]
                              for r in rows))
    by = _grouped(rows, lambda r: r["shape"])
    out = ["| shape | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    ratios: dict[str, list[float]] = {c: [] for c in cols}
    for shape, rs in by.items():
        got = {("pick" if r["provider"].startswith("pick ") else r["provider"]):
               float(r["ratio"]) for r in rs}
        for c in cols:
            if c in got:
                ratios[c].append(got[c])
        out.append(f"| {shape} | " + " | ".join(f"{got[c]:.3f}" if c in got else "-"
                                               for c in cols) + " |")
    out.append("| geomean | " + " | ".join(f"{geomean(ratios[c]):.3f}" if ratios[c] else "-"
                                           for c in cols) + " |")
    return "\n".join(out)


def _moved(cases: Path, label: str, moved: Path) -> tuple[list[tuple[dict, float]], list[dict]]:
    """(each pick `moved` lists (`scripts/lookup_diff.py`'s rows: set, mode, case, old,
    new, predicted) with its A/B in the label's run; the run's rows whose pick it does not
    list: the A/A controls of the same process)."""
    ab = {(r["mode"], r["case"]): r for r in _rows(cases) if r["label"] == label}
    picks = [(m, _ab(ab[(m["mode"], m["case"])]["extra"])) for m in _rows(moved)
             if (m["mode"], m["case"]) in ab]
    listed = {(m["mode"], m["case"]) for m, _ in picks}
    return picks, [r for key, r in ab.items() if key not in listed and _ab(r["extra"])]


def _predicted(ps: list[tuple[dict, float]]) -> str:
    """The geomean of the picks' predicted gains, over those the model predicted ('-':
    no near entry had the tile), with how many where not all."""
    got = [float(m["predicted"]) for m, _ in ps if m["predicted"] not in ("", "-")]
    if not got:
        return "-"
    return f"{geomean(got):.3f}" + (f" ({len(got)})" if len(got) < len(ps) else "")


def moved_ab(cases: Path, label: str, moved: Path, controls: bool = True) -> str:
    """A dispatcher change's A/B on the picks it moves, per mode: how many, the predicted
    gain (geomean over the picks predicted; their count in brackets where some were not)
    and the measured one (geomean; A/B > 1: the change is faster), the measured range,
    and with `controls` the same run's unmoved cases (reference and tree run one tile: A/A
    noise; not where `moved` lists a subset of the run's change's picks)."""
    picks, same = _moved(cases, label, moved)
    head = "| mode | moved | predicted | A/B geomean | A/B min | A/B max | faster |"
    out = [head + (" unmoved | their A/B geomean | their range |" if controls else ""),
           "|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|---|" if controls else "")]
    for mode in (*ALL_MODES, "all"):
        ps = [(m, a) for m, a in picks if mode in (m["mode"], "all")]
        cs = [_ab(r["extra"]) for r in same if mode in (r["mode"], "all")]
        if not ps:
            continue
        abs_ = [a for _, a in ps]
        span = f"{min(cs):.3f}–{max(cs):.3f}" if cs else "-"
        row = (f"| {mode} | {len(ps)} | {_predicted(ps)} | {geomean(abs_):.3f} | "
               f"{min(abs_):.3f} | {max(abs_):.3f} | {sum(a > 1 for a in abs_)} |")
        if controls:
            row += f" {len(cs)} | {f'{geomean(cs):.3f}' if cs else '-'} | {span} |"
        out.append(row)
    return "\n".join(out)


def moved_worst(cases: Path, label: str, moved: Path, count: int) -> str:
    """The `count` moved picks the A/B found slowest, slowest first (see `moved_ab`)."""
    picks, _ = _moved(cases, label, moved)
    out = ["| set | mode | case | old tile | new tile | predicted | A/B |",
           "|---|---|---|---|---|---:|---:|"]
    for m, a in sorted(picks, key=lambda p: p[1])[:count]:
        pred = "-" if m["predicted"] in ("", "-") else f"{float(m['predicted']):.3f}"
        out.append(f"| {m['set']} | {m['mode']} | {m['case']} | {m['old']} | {m['new']} | "
                   f"{pred} | {a:.3f} |")
    return "\n".join(out)


def moved_forms(cases: Path, prefix: str, moved: Path) -> str:
    """A dispatcher change's A/B on the picks it moves, per (old form, new form): the
    variant and block of each, how many picks, the predicted and measured gain (geomean)
    and the slowest. `moved` rows join the cases of label `prefix` + their `set` (one
    run per random draw)."""
    ab = {(r["label"], r["mode"], r["case"]): _ab(r["extra"]) for r in _rows(cases)}
    groups: dict[tuple[str, str], list[tuple[dict, float]]] = {}
    for m in _rows(moved):
        got = ab.get((prefix + m["set"], m["mode"], m["case"]))
        if got is not None:
            form = tuple(" ".join(t.split()[:2]) for t in (m["old"], m["new"]))
            groups.setdefault(form, []).append((m, got))
    out = ["| old form | new form | moved | predicted | A/B geomean | A/B min | faster |",
           "|---|---|---:|---:|---:|---:|---:|"]
    everything = [p for ps in groups.values() for p in ps]
    if not everything:
        raise ValueError(f"{moved}: no moved pick joins a case labelled {prefix}<set>")
    for (old, new), ps in (*sorted(groups.items(), key=lambda g: -len(g[1])),
                           (("all", ""), everything)):
        abs_ = [a for _, a in ps]
        out.append(f"| {old} | {new} | {len(ps)} | {_predicted(ps)} | {geomean(abs_):.3f} | "
                   f"{min(abs_):.3f} | {sum(a > 1 for a in abs_)} |")
    return "\n".join(out)


def on_off(path: Path) -> str:
    """An in-process on/off A/B (rows: shape, mode, round, on_us, off_us), per shape: the
    rounds, the median time a call on and off, and on / off per round (lowest, median,
    highest; < 1: faster on)."""
    out = ["| shape | mode | rounds | on us | off us | on/off min | on/off median | "
           "on/off max |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for key, rs in _grouped(_rows(path), lambda r: (r["shape"], r["mode"])).items():
        on, off = [float(r["on_us"]) for r in rs], [float(r["off_us"]) for r in rs]
        q = sorted(a / b for a, b in zip(on, off))
        out.append(f"| {key[0]} | {key[1]} | {len(rs)} | {median(on):.1f} | {median(off):.1f}"
                   f" | {q[0]:.3f} | {median(q):.3f} | {q[-1]:.3f} |")
    return "\n".join(out)


def occupancy_best(path: Path) -> str:
    """Tiles timed at one and at two programs per SM (rows: shape, mode, tile, pick,
    us_1, ratio_1, us_2, ratio_2), per shape: the pick's ratio to cuBLAS, then the best
    tile at one program per SM and the best at two, with their ratios."""
    out = ["| shape | mode | pick | its ratio | best at 1 | ratio | best at 2 | ratio |",
           "|---|---|---|---:|---|---:|---|---:|"]
    for key, rs in _grouped(_rows(path), lambda r: (r["shape"], r["mode"])).items():
        pick = next(r for r in rs if r["pick"])
        one = max(rs, key=lambda r: float(r["ratio_1"]))
        two = max(rs, key=lambda r: float(r["ratio_2"]))
        out.append(f"| {key[0]} | {key[1]} | {pick['tile']} | {float(pick['ratio_1']):.3f} | "
                   f"{one['tile']} | {float(one['ratio_1']):.3f} | {two['tile']} | "
                   f"{float(two['ratio_2']):.3f} |")
    return "\n".join(out)


_TILE_RE = re.compile(r"(\w+):(\d+)x(\d+)x(\d+):s(\d+):w(\d+)(:o2)?$")


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def pair_steps(paths: list[Path], sms: int = 132, fixed_us: float = 3.0) -> str:
    """From tiles.py rows of tiles timed alone and two to an SM (`:o2`), per mode, tile
    alone and its two-program twin: the time a K block of a pair takes over one alone's
    (kernels/steps.py PAIR_STEP; with a stage fewer, STAGE_COST in it too), over the
    shapes where the pairs outnumber the SMs: alone, (us - fixed) / (waves x blocks); a
    pair, (us - fixed) / (tiles a program walks x blocks)."""
    found: dict = {}
    for path in paths:
        by = _grouped((r for r in _rows(path) if r["flush"] == "1"),
                      lambda r: (r["shape"], r["mode"]))
        for (shape, mode), rs in by.items():
            us = {r["provider"]: float(r["us"]) for r in rs}
            m, n, k = map(int, shape.split("x"))
            for two, t2 in us.items():
                g = _TILE_RE.match(two)
                if not g or not g.group(7):
                    continue
                bm, bn, bk, st, w = map(int, g.groups()[1:6])
                tiles, blocks = _cdiv(m, bm) * _cdiv(n, bn), _cdiv(k, bk)
                grid = min(tiles, 2 * sms)
                if grid <= sms:
                    continue
                for s1 in (st, st + 1, st + 2):
                    one = f"{g.group(1)}:{bm}x{bn}x{bk}:s{s1}:w{w}"
                    if one in us:
                        per = (us[one] - fixed_us) / (_cdiv(tiles, sms) * blocks)
                        pair = (t2 - fixed_us) / (_cdiv(tiles, grid) * blocks)
                        found.setdefault((mode, one, two), []).append(pair / per)
    out = ["| mode | alone | two to an SM | shapes | pair step median | min | max |",
           "|---|---|---|---:|---:|---:|---:|"]
    for (mode, one, two), xs in found.items():
        out.append(f"| {mode} | {one} | {two.removeprefix(one.split(':')[0] + ':')} | "
                   f"{len(xs)} | {median(xs):.2f} | {min(xs):.2f} | {max(xs):.2f} |")
    every = [x for (_, one, two), xs in found.items()
             if one.split(":s")[1][0] == two.split(":s")[1][0] for x in xs]
    if every:
        q = sorted(every)
        out.append(f"| all | same stages | | {len(q)} | {median(q):.2f} | "
                   f"{q[len(q) // 4]:.2f} (q1) | {q[3 * len(q) // 4]:.2f} (q3) |")
    return "\n".join(out)


def variant_pairs(path: Path, a: str = "tma", b: str = "tma_streamk") -> str:
    """tiles.py rows (L2 flushed) of tiles timed as two variants, per shape and mode:
    cuBLAS's microseconds, then per tile each variant's and `a`'s time over `b`'s
    (> 1: `b` is faster)."""
    out = ["| shape | mode | cuBLAS us | tile | " + a + " us | " + b + " us | "
           + a + " / " + b + " |", "|---|---|---:|---|---:|---:|---:|"]
    by = _grouped((r for r in _rows(path) if r["flush"] == "1"),
                  lambda r: (r["shape"], r["mode"]))
    for (shape, mode), rs in by.items():
        us = {r["provider"]: float(r["us"]) for r in rs}
        for prov, t in us.items():
            if prov.startswith(a + ":") and f"{b}:{prov[len(a) + 1:]}" in us:
                tb = us[f"{b}:{prov[len(a) + 1:]}"]
                out.append(f"| {shape} | {mode} | {us.get('vendor', 0):.1f} | "
                           f"{prov[len(a) + 1:]} | {t:.1f} | {tb:.1f} | {t / tb:.2f} |")
    return "\n".join(out)


def variant_best(path: Path, variants: tuple[str, ...]) -> str:
    """tiles.py rows (L2 flushed), per shape and mode: cuBLAS's microseconds, the pick's
    ratio, then each variant's fastest named tile and its ratio to cuBLAS."""
    out = ["| shape | mode | cuBLAS us | pick | " +
           " | ".join(f"best {v} | ratio" for v in variants) + " |",
           "|---|---|---:|---:|" + "---|---:|" * len(variants)]
    by = _grouped((r for r in _rows(path) if r["flush"] == "1"),
                  lambda r: (r["shape"], r["mode"]))
    for (shape, mode), rs in by.items():
        cells = []
        for v in variants:
            mine = [r for r in rs if r["provider"].startswith(v + ":")]
            best = min(mine, key=lambda r: float(r["us"]), default=None)
            cells += ["-", "-"] if best is None else \
                [best["provider"][len(v) + 1:], f"{float(best['ratio']):.2f}"]
        pick = next(float(r["ratio"]) for r in rs if r["provider"].startswith("pick"))
        vendor = next(float(r["us"]) for r in rs if r["provider"] == "vendor")
        out.append(f"| {shape} | {mode} | {vendor:.1f} | {pick:.2f} | " + " | ".join(cells)
                   + " |")
    return "\n".join(out)


def ab_by_mode(path: Path, label: str, variant: str = "") -> str:
    """A run's A/B per mode (> 1: the tree is faster than the reference): cases, how many
    ran a `variant` tile, the geomean, range and faster count of those (all where no
    `variant`)."""
    out = ["| mode | cases | moved to " + (variant or "-") + " | their A/B geomean | min | "
           "max | faster |", "|---|---:|---:|---:|---:|---:|---:|"]
    for mode, rs in _grouped((r for r in _rows(path) if r["label"] == label),
                             lambda r: r["mode"]).items():
        got = [_ab(r["extra"]) for r in rs if r["tile"].startswith(variant)]
        if got:
            out.append(f"| {mode} | {len(rs)} | {len(got)} | {geomean(got):.3f} | "
                       f"{min(got):.3f} | {max(got):.3f} | {sum(x > 1 for x in got)} |")
    return "\n".join(out)


def ab_by_variant(path: Path, prefix: str) -> str:
    """The A/B of the labels with `prefix` (> 1: the tree is faster), per label, mode and
    the variant of the tree's pick: cases, geomean, range and faster count."""
    out = ["| label | mode | pick's variant | cases | A/B geomean | min | max | faster |",
           "|---|---|---|---:|---:|---:|---:|---:|"]
    rows = [r for r in _rows(path) if r["label"].startswith(prefix) and _ab(r["extra"])]
    for (label, mode, variant), rs in _grouped(
            rows, lambda r: (r["label"], r["mode"], r["tile"].split(" ")[0])).items():
        got = [_ab(r["extra"]) for r in rs]
        out.append(f"| {label} | {mode} | {variant} | {len(got)} | {geomean(got):.3f} | "
                   f"{min(got):.3f} | {max(got):.3f} | {sum(x > 1 for x in got)} |")
    return "\n".join(out)


def call_parts(path: Path, run: str) -> str:
    """`scripts/device/overhead.py --parts` rows of a run, one line per first call: each
    library step's inclusive ms (calls in brackets where more than one)."""
    rows = [r for r in _rows(path) if r["run"] == run]
    parts = list(dict.fromkeys(r["part"] for r in rows))
    out = ["| shape | mode | " + " | ".join(parts) + " |",
           "|---|---|" + "---:|" * len(parts)]
    for key, rs in _grouped(rows, lambda r: (r["shape"], r["mode"])).items():
        got = {r["part"]: r for r in rs}
        cells = [f"{float(got[p]['ms']):.3f}" + (f" ({got[p]['calls']})"
                 if int(got[p]["calls"]) > 1 else "") if p in got else "-" for p in parts]
        out.append(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def _stacked(first: str, *more: str) -> str:
    """Markdown tables of one header as one table: `first`, then the rows of each of
    `more` (their header and rule lines dropped)."""
    return "\n".join([first, *(line for t in more for line in t.split("\n")[2:])])


def csv_table(path: Path, cols: tuple[str, ...] = ()) -> str:
    """A small CSV as a Markdown table, as measured (`cols`: those columns only)."""
    rows = _rows(path)
    cols = list(cols or rows[0])
    return "\n".join(["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)] +
                      ["| " + " | ".join(r[c] for c in cols) + " |" for r in rows])


# scripts/ncu_summary.py's metric columns, as ncu_table heads them
_NCU_HEADS = {
    "gpu__time_duration.sum": "us",
    "sm__cycles_elapsed.avg": "cycles",
    "launch__registers_per_thread": "regs",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": "tensor pipe %",
    "l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed": "smem reads %",
    "l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed": "smem writes %",
    "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue %",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio": "stall barrier",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": "stall long sb",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": "stall wait",
    "smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio": "stall gmma",
}


def ncu_table(path: Path, labels: tuple[str, ...] = ()) -> str:
    """ncu_summary.py's rows (`labels`: those labels only): each provider's kernel and
    its metrics, headed short; the kernel name cut at 28 characters."""
    rows = [r for r in _rows(path) if not labels or r["label"] in labels]
    metrics = [m for m in _NCU_HEADS if m in rows[0]]
    head = ["label", "shape", "provider", "kernel"] + [_NCU_HEADS[m] for m in metrics]
    return "\n".join(["| " + " | ".join(head) + " |", "|---|---|---|---|" + "---:|" * len(metrics)]
                     + ["| " + " | ".join([r["label"], r["shape"], r["provider"],
                                           r["kernel"][:28]]
                                          + [_ncu_cell(m, r[m]) for m in metrics]) + " |"
                        for r in rows])


def _ncu_cell(metric: str, value: str) -> str:
    v = float(value)
    if metric.endswith(".ratio"):
        return f"{v:.2f}"
    return f"{v:.0f}" if metric.startswith(("sm__cycles", "launch__")) else f"{v:.1f}"


def label_pairs(path: Path, a: str, b: str, variant: str = "") -> str:
    """The same tiles timed in two calls or processes of a tiles.py CSV (its `label`s
    `a` and `b`; L2 flushed; `variant`: only its tiles), per shape, mode and tile: each
    label's microseconds and b / a (< 1: faster in `b`)."""
    out = [f"| shape | mode | tile | {a} us | {b} us | b / a |", "|---|---|---|---:|---:|---:|"]
    rows = [r for r in _rows(path) if r["flush"] == "1"
            and r["provider"].startswith(variant + ":" if variant else "")]
    us = {(r["label"], r["shape"], r["mode"], r["provider"]): float(r["us"]) for r in rows}
    for (label, shape, mode, prov), ta in us.items():
        tb = us.get((b, shape, mode, prov))
        if label == a and tb is not None:
            out.append(f"| {shape} | {mode} | {prov} | {ta:.1f} | {tb:.1f} | {tb / ta:.3f} |")
    return "\n".join(out)


def block_ratios(path: Path, parent: str, child: str, label: str = "", sms: int = 132) -> str:
    """Two tiles of a tiles.py CSV (L2 flushed; `label`: one call's rows) per shape and
    mode: each one's microseconds and K blocks on the busiest SM (kernels.steps.steps),
    and the child's time a block over the parent's (launch overheads left in)."""
    from runpy import run_path

    from kernels.steps import steps

    tile = run_path(str(ROOT / "scripts" / "device" / "tiles.py"))["parse_tile"]
    out = ["| shape | mode | " + parent + " us | blocks | " + child + " us | blocks | "
           "a block, child / parent |", "|---|---|---:|---:|---:|---:|---:|"]
    by = _grouped((r for r in _rows(path) if r["flush"] == "1"
                   and label in ("", r.get("label"))), lambda r: (r["shape"], r["mode"]))
    for (shape, mode), rs in by.items():
        us = {r["provider"]: float(r["us"]) for r in rs}
        if parent not in us or child not in us:
            continue
        m, n, k = (int(x) for x in shape.split("-")[0].split("x"))
        bp, bc = (steps(tile(t), m, n, k, sms) for t in (parent, child))
        out.append(f"| {shape} | {mode} | {us[parent]:.1f} | {bp:g} | {us[child]:.1f} | "
                   f"{bc:g} | {us[child] / bc / (us[parent] / bp):.3f} |")
    return "\n".join(out)


def first_calls_ab(path: Path, mode: str, a: str = "ref", b: str = "new") -> str:
    """`scripts/device/overhead.py` rows of runs labelled `a<i>-<mode>` and `b<i>-<mode>`
    (one process each, alternated): per shape, each run's first call less its compile-or-
    load part (ms), the median second call of all of them, and whether the target holds
    for `b` (first call less compilation within 2x a warm call) in every one of its runs.
    A process's first shape (its one-time costs) is left out."""
    rows = [r for r in _rows(path) if r["mode"] == mode and r["run"].endswith(f"-{mode}")
            and r["run"][:-len(mode) - 1].rstrip("0123456789") in (a, b)]
    runs = list(dict.fromkeys(r["run"] for r in rows))
    rows = _past_first_shape(rows)
    out = ["| shape | " + " | ".join(f"{r} ms" for r in runs) +
           " | second call ms | target ms | met by " + b + " |",
           "|---|" + "---:|" * (len(runs) + 2) + "---|"]
    for shape, rs in _grouped(rows, lambda r: r["shape"]).items():
        got = {r["run"]: r for r in rs}
        own = {run: float(r["first_call_ms"]) - float(r["compile_ms"]) for run, r in got.items()}
        second = median([float(r["second_call_ms"]) for r in got.values()])
        mine = [own[r] for r in runs if r.startswith(b) and r in own]
        met = all(x <= 2 * second for x in mine) if mine else False
        out.append(f"| {shape} | " + " | ".join(f"{own[r]:.2f}" if r in own else "-"
                                                for r in runs) +
                   f" | {second:.2f} | {2 * second:.2f} | {'yes' if met else 'no'} |")
    return "\n".join(out)


def parts_ab(path: Path, mode: str, parts: tuple[str, ...], a: str = "ref",
             b: str = "new") -> str:
    """`overhead.py --parts` rows: per part, the median over shapes (a process's first
    shape left out) and over the runs of `a` and of `b` (labelled as `first_calls_ab`'s)
    of its inclusive ms in a first call, split by whether Triton compiled or loaded a
    kernel in that call."""
    calls = [(run, {r["part"]: float(r["ms"]) for r in rs}) for (run, _), rs in _grouped(
        _past_first_shape([r for r in _rows(path) if r["mode"] == mode]),
        lambda r: (r["run"], r["shape"])).items()]
    calls = [(run, got) for run, got in calls if "compile" in got]
    out = ["| mode | part | " + " | ".join(f"{t}, {k}" for t in (a, b)
                                           for k in ("compiled", "none compiled")) + " |",
           "|---|---|" + "---:|" * 4]
    for part in parts:
        cells = []
        for tree in (a, b):
            for compiled in (True, False):
                vals = [got[part] for run, got in calls if run.startswith(tree)
                        and part in got and (got["compile"] > 0.05) == compiled]
                cells.append(f"{median(vals):.3f}" if vals else "-")
        out.append(f"| {mode} | {part} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def _past_first_shape(rows: list[dict]) -> list[dict]:
    """`overhead.py` rows less each run's first shape (a process's one-time costs)."""
    first = {r["run"]: r["shape"] for r in reversed(rows)}
    return [r for r in rows if r["shape"] != first[r["run"]]]
