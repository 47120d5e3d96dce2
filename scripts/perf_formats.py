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
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gemmgate.stats import geomean  # noqa: E402
from gemmgate.trials import power  # noqa: E402
from gemmgate.tuning import config_name, parse_config_name  # noqa: E402

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


def _extra(extra: str, key: str) -> float | None:
    """A figure of a cases.csv row's `extra` column (`ab:1.0500 inductor:0.9800`)."""
    got = dict(x.split(":", 1) for x in extra.split()) if extra else {}
    return float(got[key]) if key in got else None


def _ab(extra: str) -> float | None:
    return _extra(extra, "ab")


def _ratios(rows: list[dict], label: str | None, mode: str) -> list[dict]:
    return [r for r in rows if r["label"] == label and r["mode"] == mode and r["ratio"]]


Cell = tuple[Path, str]   # a cases.csv and the label of one run of a set


def targets_table(rows: dict[str, dict[str, Cell]]) -> str:
    """Where issue 11's graph-timed targets stand: per set (`rows`) and mode, the geomean
    Triton/cuBLAS of that set's run named for the cell (each from the latest run of that
    mode on that set, which may be another session's); the target first."""
    modes = [m for m in ALL_MODES if any(m in cells for cells in rows.values())]
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


def tile_matrix(path: Path, flush: str = "1", label: str | None = None) -> str:
    """A tiles.py CSV (one mode, L2 flushed; with `label`, that call's rows of a file
    with a label column) as a matrix: a row a shape, a column each of the pick and the
    named tiles, each cell its speed ratio to cuBLAS; the geomean of each column over the
    shapes it ran last."""
    rows = [r for r in _rows(path) if r["flush"] == flush and r["provider"] != "vendor"
            and (label is None or r["label"] == label)]
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


def _moved(cases: Path, label: str, moved: Path, per_set: bool = False
           ) -> tuple[list[tuple[dict, float]], list[dict]]:
    """(each pick `moved` lists (`scripts/lookup_diff.py`'s rows: set, mode, case, old,
    new, predicted) with its A/B in the label's run; the run's rows whose pick it does not
    list: the A/A controls of the same process). `per_set`: each pick's run is labelled
    `label` + its set (one run per draw; no controls)."""
    if per_set:
        ab = {(r["label"], r["mode"], r["case"]): r for r in _rows(cases)}
        picks = [(m, _ab(ab[key]["extra"])) for m in _rows(moved)
                 if (key := (label + m["set"], m["mode"], m["case"])) in ab]
        if not picks:
            raise ValueError(f"{moved}: no moved pick joins a case labelled {label}<set>")
        return picks, []
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


def moved_ab(cases: Path, label: str, moved: Path, controls: bool = True,
             per_set: bool = False) -> str:
    """A dispatcher change's A/B on the picks it moves, per mode: how many, the predicted
    gain (geomean over the picks predicted; their count in brackets where some were not)
    and the measured one (geomean; A/B > 1: the change is faster), the measured range,
    and with `controls` the same run's unmoved cases (reference and tree run one tile: A/A
    noise; not where `moved` lists a subset of the run's change's picks). `per_set`: the
    runs are labelled `label` + each pick's set (`_moved`), with no controls."""
    picks, same = _moved(cases, label, moved, per_set)
    controls = controls and not per_set
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


def moved_worst(cases: Path, label: str, moved: Path, count: int,
                per_set: bool = False) -> str:
    """The `count` moved picks the A/B found slowest, slowest first (see `moved_ab`)."""
    picks, _ = _moved(cases, label, moved, per_set)
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
    groups: dict[tuple[str, str], list[tuple[dict, float]]] = {}
    for m, got in _moved(cases, prefix, moved, per_set=True)[0]:
        form = (_form(m["old"]), _form(m["new"]))
        groups.setdefault(form, []).append((m, got))
    out = ["| old form | new form | moved | predicted | A/B geomean | A/B min | faster |",
           "|---|---|---:|---:|---:|---:|---:|"]
    everything = [p for ps in groups.values() for p in ps]
    for (old, new), ps in (*sorted(groups.items(), key=lambda g: -len(g[1])),
                           (("all", ""), everything)):
        abs_ = [a for _, a in ps]
        out.append(f"| {old} | {new} | {len(ps)} | {_predicted(ps)} | {geomean(abs_):.3f} | "
                   f"{min(abs_):.3f} | {sum(a > 1 for a in abs_)} |")
    return "\n".join(out)


def _form(tile: str) -> str:
    """A tile name's variant and block ('tma_wide 128x288x64'; the tiled kernel's names
    have no variant word: 'tiled 64x64x32'); the text itself where it names no tile."""
    got = parse_config_name(tile)
    if got is None:
        return tile
    return f"{got['variant']} {got['block_m']}x{got['block_n']}x{got['block_k']}"


def _split(tile: str) -> int:
    """A tile name's K split (`... k3`; 1 where it has none or names no tile)."""
    got = parse_config_name(tile)
    return got["split_k"] if got else 1


def split_moves(cases: Path, prefix: str, moved: Path) -> str:
    """A K-split change's A/B (runs labelled `prefix` + each pick's set, `_moved`) per
    family (16-bit, tf32, fp8...), whether the new pick splits the old tile (its block
    kept) or another's, and whether it cuts K into more ranges, fewer or as many (another
    stage count, say): how many, the predicted and measured gain (geomean), the slowest
    and fastest, how many faster."""
    groups: dict[tuple[str, str, str], list[tuple[dict, float]]] = {}
    for m, a in _moved(cases, prefix, moved, per_set=True)[0]:
        fam = "16-bit" if m["mode"] in ("bf16", "fp16") else m["mode"]
        same = m["old"].split()[1] == m["new"].split()[1]
        was, now = _split(m["old"]), _split(m["new"])
        ranges = "more" if now > was else "fewer" if now < was else "as many"
        key = (fam, "its own" if same else "another's", ranges)
        groups.setdefault(key, []).append((m, a))
    out = ["| family | tile split | ranges | moved | predicted | A/B geomean | A/B min | "
           "A/B max | faster |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for (fam, whose, ranges), ps in sorted(groups.items()):
        abs_ = [a for _, a in ps]
        out.append(f"| {fam} | {whose} | {ranges} | {len(ps)} | {_predicted(ps)} | "
                   f"{geomean(abs_):.3f} | {min(abs_):.3f} | {max(abs_):.3f} | "
                   f"{sum(a > 1 for a in abs_)} |")
    return "\n".join(out)


def _staged(tile: str) -> str:
    """A tile name's variant (none for the tiled kernel's), block and stages
    (`tma_split 64x128x32 s4`): its split, warps, group and operand copies left out."""
    got = parse_config_name(tile)
    if got is None:
        return tile
    variant = "" if got["variant"] == "tiled" else got["variant"] + " "
    return f"{variant}{got['block_m']}x{got['block_n']}x{got['block_k']} s{got['num_stages']}"


def staged_moves(cases: Path, label: str, moved: Path, top: int = 8) -> str:
    """A K-split change's A/B (the run labelled `label`, `_moved`) per (old tile, new
    tile) at their stages (`_staged`) and whether K is cut into more ranges, fewer or as
    many: the `top` largest groups, the rest as one, then all; how many, the predicted
    and measured gain (geomean), the slowest and how many faster."""
    groups: dict[tuple[str, str, str], list[tuple[dict, float]]] = {}
    for m, a in _moved(cases, label, moved)[0]:
        was, now = _split(m["old"]), _split(m["new"])
        ranges = "more" if now > was else "fewer" if now < was else "as many"
        groups.setdefault((_staged(m["old"]), _staged(m["new"]), ranges), []).append((m, a))
    ranked = sorted(groups.items(), key=lambda g: (-len(g[1]), g[0]))
    rest = [p for _, ps in ranked[top:] for p in ps]
    everything = [p for ps in groups.values() for p in ps]
    out = ["| old tile | new tile | ranges | moved | predicted | A/B geomean | A/B min | "
           "faster |", "|---|---|---|---:|---:|---:|---:|---:|"]
    shown = ranked[:top] + ([(("other", "", ""), rest)] if rest else []) + \
        [(("all", "", ""), everything)]
    for (old, new, ranges), ps in shown:
        abs_ = [a for _, a in ps]
        out.append(f"| {old} | {new} | {ranges} | {len(ps)} | {_predicted(ps)} | "
                   f"{geomean(abs_):.3f} | {min(abs_):.3f} | {sum(a > 1 for a in abs_)} |")
    return "\n".join(out)


def rows_ab(cases: Path, label: str) -> str:
    """An A/B run on thin-M cases (every case of the run labelled `label`) per mode, rows
    (M) and whether the case ran the gemv variant: how many, their speed ratio to cuBLAS
    and A/B (geomeans), the slowest and fastest A/B, how many faster."""
    groups = _grouped((r for r in _rows(cases) if r["label"] == label and _ab(r["extra"])),
                      lambda r: (r["mode"], r["case"].split("-")[0],
                                 "gemv" if r["tile"].startswith("gemv") else "other"))
    out = ["| mode | rows | tile | cases | ratio | A/B geomean | A/B min | A/B max | faster |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for (mode, rows, tile), rs in sorted(groups.items()):
        abs_ = [_ab(r["extra"]) for r in rs]
        out.append(f"| {mode} | {rows[1:]} | {tile} | {len(rs)} | "
                   f"{geomean([float(r['ratio']) for r in rs]):.3f} | {geomean(abs_):.3f} | "
                   f"{min(abs_):.3f} | {max(abs_):.3f} | {sum(a > 1 for a in abs_)} |")
    return "\n".join(out)


def inductor_summary(cases: Path, labels: tuple[str, ...], worst: int = 3) -> str:
    """Runs with the inductor provider (`extra` `inductor:` inductor's time / Triton's),
    one row per run label and mode: cases, geomean Triton/cuBLAS and inductor/Triton,
    how many Triton ran faster than inductor, and the `worst` cases Triton lost most on."""
    out = ["| run | mode | cases | Triton/cuBLAS | inductor/Triton | faster than inductor | "
           "slowest against inductor |", "|---|---|---:|---:|---:|---:|---|"]
    rows = [r for r in _rows(cases)
            if r["label"] in labels and _extra(r["extra"], "inductor") is not None]
    for (label, mode), rs in _grouped(rows, lambda r: (r["label"], r["mode"])).items():
        ind = {r["case"]: _extra(r["extra"], "inductor") for r in rs}
        lost = ", ".join(f"{c} {x:.3f}" for c, x in sorted(ind.items(), key=lambda i: i[1])
                         [:worst])
        out.append(f"| {label} | {mode} | {len(rs)} | "
                   f"{geomean([float(r['ratio']) for r in rs]):.3f} | "
                   f"{geomean(list(ind.values())):.3f} | {sum(x > 1 for x in ind.values())} | "
                   f"{lost} |")
    return "\n".join(out)


def pad_ab(cases: Path, padded: Path, columns: int) -> str:
    """An A/B of B read past N over its kept copy's zeros, per run and mode: the cases
    `padded` lists (label, mode, case, block, columns: B's columns of tiles) in two groups,
    `columns` or fewer and more, and the run's other cases (controls: the same code ran)."""
    listed = {(r["label"], r["mode"], r["case"]): int(r["columns"]) for r in _rows(padded)}
    out = ["| run | mode | group | cases | A/B geomean | A/B min | A/B max | faster |",
           "|---|---|---|---:|---:|---:|---:|---:|"]
    runs = {r["label"] for r in _rows(padded)}
    rows = [r for r in _rows(cases) if r["label"] in runs and _ab(r["extra"])]

    def group(r: dict) -> str:
        got = listed.get((r["label"], r["mode"], r["case"]))
        return "control" if got is None else \
            f"<= {columns} columns" if got <= columns else f"> {columns} columns"

    for (label, mode, g), rs in sorted(_grouped(rows, lambda r: (r["label"], r["mode"],
                                                                 group(r))).items()):
        abs_ = [_ab(r["extra"]) for r in rs]
        out.append(f"| {label} | {mode} | {g} | {len(rs)} | {geomean(abs_):.3f} | "
                   f"{min(abs_):.3f} | {max(abs_):.3f} | {sum(a > 1 for a in abs_)} |")
    return "\n".join(out)


def probe_table(path: Path, label: str, base: str = "base") -> str:
    """A scratch probe's rows (label, shape, tile, variant, us) of one label as a matrix:
    a row a shape and tile, a column a variant, each cell its microseconds and, beside a
    variant, the `base` variant's time over it (above 1: faster)."""
    rows = [r for r in _rows(path) if r["label"] == label]
    cols = list(dict.fromkeys(r["variant"] for r in rows))
    out = ["| shape | tile | " + " | ".join(cols) + " |", "|---|---|" + "---:|" * len(cols)]
    for (shape, tile), rs in _grouped(rows, lambda r: (r["shape"], r["tile"])).items():
        us = {r["variant"]: float(r["us"]) for r in rs}
        cells = [("-" if c not in us else f"{us[c]:.1f}" if c == base or base not in us
                  else f"{us[c]:.1f} (x{us[base] / us[c]:.2f})") for c in cols]
        out.append(f"| {shape} | {tile} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def _stacked(first: str, *more: str) -> str:
    """Markdown tables of one header as one table: `first`, then the rows of each of
    `more` (their header and rule lines dropped)."""
    return "\n".join([first, *(line for t in more for line in t.split("\n")[2:])])
