"""Markdown tables of A/B runs (scripts/perf_tables.py's registry calls them): a change
measured against the commit before it in one process (`gemmgate run --ab-ref REV`, the
`ab:` figure of cases.csv's `extra`), on the picks it moves (`scripts/lookup_diff.py
--moved` rows: set, mode, case, old, new, predicted) or on the cases it changes, beside
the same run's other cases as A/A controls. The readers and the other tables are in
scripts/perf_formats.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]   # the repository (gemmgate), scripts/

from perf_formats import ALL_MODES, _ab, _extra, _extras, _grouped, _rows, _sci  # noqa: E402

from gemmgate.stats import geomean  # noqa: E402
from gemmgate.tuning import parse_config_name  # noqa: E402


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


def _spread(abs_: list[float]) -> str:
    """A/B cells: geomean | min | max | how many faster."""
    return (f"{geomean(abs_):.3f} | {min(abs_):.3f} | {max(abs_):.3f} | "
            f"{sum(a > 1 for a in abs_)}")


def _predicted(ps: list[tuple[dict, float]]) -> str:
    """The geomean of the picks' predicted gains, over those the model predicted ('-':
    no near entry had the tile), with how many where not all."""
    got = [float(m["predicted"]) for m, _ in ps if m["predicted"] not in ("", "-")]
    if not got:
        return "-"
    return f"{geomean(got):.3f}" + (f" ({len(got)})" if len(got) < len(ps) else "")


def moved_ab(cases: Path, label: str, moved: Path, controls: bool = True,
             per_set: bool = False, sets: tuple[str, ...] = ()) -> str:
    """A dispatcher change's A/B on the picks it moves, per mode: how many, the predicted
    gain (geomean over the picks predicted; their count in brackets where some were not)
    and the measured one (geomean; A/B > 1: the change is faster), the measured range,
    and with `controls` the same run's unmoved cases (reference and tree run one tile: A/A
    noise; not where `moved` lists a subset of the run's change's picks). `per_set`: the
    runs are labelled `label` + each pick's set (`_moved`), with no controls. `sets`: the
    picks of those sets alone (a fresh draw's, within a run over several)."""
    picks, same = _moved(cases, label, moved, per_set)
    if sets:
        picks = [(m, a) for m, a in picks if m["set"] in sets]
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
        row = f"| {mode} | {len(ps)} | {_predicted(ps)} | {_spread(abs_)} |"
        if controls:
            row += f" {len(cs)} | {f'{geomean(cs):.3f}' if cs else '-'} | {span} |"
        out.append(row)
    return "\n".join(out)


def moved_forms(cases: Path, prefix: str, moved: Path, per_set: bool = True) -> str:
    """A dispatcher change's A/B on the picks it moves, per (old form, new form): the
    variant and block of each, how many picks, the predicted and measured gain (geomean)
    and the slowest. `moved` rows join the cases of label `prefix` + their `set` (one
    run per random draw), or without `per_set` of label `prefix` itself."""
    groups: dict[tuple[str, str], list[tuple[dict, float]]] = {}
    for m, got in _moved(cases, prefix, moved, per_set)[0]:
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


def providers_ab(cases: Path, labels: tuple[str, ...],
                 pairs: tuple[tuple[str, str], ...]) -> str:
    """Extra providers (`--providers`) beside the pick, per run and mode: for each
    (provider, its baseline provider or ""), how many cases, the provider's speed over the
    pick's and over cuBLAS's (geomeans; an extra's cell is its time over the pick's), and
    over its baseline provider's where one is named (geomean | min | max | faster)."""
    out = ["| run | mode | provider | against | cases | over the pick | over cuBLAS | "
           "A/B geomean | A/B min | A/B max | faster |",
           "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    rows = [r for r in _rows(cases) if r["label"] in labels]
    for (label, mode), rs in _grouped(rows, lambda r: (r["label"], r["mode"])).items():
        for provider, base in pairs:
            got = [(r, _extra(r["extra"], provider), _extra(r["extra"], base) if base else None)
                   for r in rs]
            got = [g for g in got if g[1] and (not base or g[2])]
            if not got:
                continue
            over_pick = [1 / e for _, e, _ in got]
            over_vendor = [float(r["ratio"]) / e for r, e, _ in got]
            ab = _spread([b / e for _, e, b in got]) if base else "- | - | - | -"
            out.append(f"| {label} | {mode} | {provider.rpartition(':')[2]} | "
                       f"{base.rpartition(':')[2] or '-'} | {len(got)} | "
                       f"{geomean(over_pick):.3f} | {geomean(over_vendor):.3f} | {ab} |")
    return "\n".join(out)


def runs_ab(cases: Path, labels: tuple[str, ...], moved: str = "") -> str:
    """A/B runs (`--ab-ref`) per run and mode: how many cases, the speed ratio to cuBLAS
    and the A/B (geomean | min | max | faster); with `moved`, the cases whose tile starts
    so (a change's picks) apart from the rest (the run's controls)."""
    rows = [r for r in _rows(cases) if r["label"] in labels and _ab(r["extra"])]
    out = ["| run | mode | group | cases | ratio | A/B geomean | A/B min | A/B max | faster |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|"]

    def group(r: dict) -> str:
        return "" if not moved else "moved" if r["tile"].startswith(moved) else "control"

    for (label, mode, g), rs in _grouped(rows, lambda r: (r["label"], r["mode"], group(r))
                                         ).items():
        out.append(f"| {label} | {mode} | {g or 'all'} | {len(rs)} | "
                   f"{geomean([float(r['ratio']) for r in rs]):.3f} | "
                   f"{_spread([_ab(r['extra']) for r in rs])} |")
    return "\n".join(out)


def providers_best(cases: Path, label: str, prefix: str) -> str:
    """Per case of a run: the pick (its tile, its speed ratio to cuBLAS) and the fastest
    extra provider named `prefix`... (its speed ratio to cuBLAS and over the pick)."""
    out = ["| case | mode | pick | pick/cuBLAS | fastest of the extras | its /cuBLAS | "
           "over the pick |",
           "|---|---|---|---:|---|---:|---:|"]
    for r in _rows(cases):
        if r["label"] != label:
            continue
        extras = {k: v for k, v in _extras(r["extra"]).items() if k.startswith(prefix)}
        if not extras:
            continue
        name, e = min(extras.items(), key=lambda kv: kv[1])
        out.append(f"| {r['case']} | {r['mode']} | {r['tile']} | {float(r['ratio']):.3f} | "
                   f"{name.removeprefix(prefix)} | {float(r['ratio']) / e:.3f} | {1 / e:.3f} |")
    return "\n".join(out)


def runs_best(cases: Path, pick_label: str, best_label: str) -> str:
    """Per case of two runs on the same shapes: the pick's tile and speed ratio to cuBLAS
    in one (`pick_label`), another run's tile and ratio (`best_label`: a tune's winner,
    each against its own run's cuBLAS), and the second over the first; their geomeans."""
    out = ["| case | mode | pick | pick/cuBLAS | other | its /cuBLAS | over the pick |",
           "|---|---|---|---:|---|---:|---:|"]
    rows = _rows(cases)
    best = {(r["case"], r["mode"]): r for r in rows if r["label"] == best_label}
    got = []
    for r in rows:
        b = best.get((r["case"], r["mode"]))
        if r["label"] != pick_label or b is None:
            continue
        p, q = float(r["ratio"]), float(b["ratio"])
        got.append((p, q))
        out.append(f"| {r['case']} | {r['mode']} | {r['tile']} | {p:.3f} | {b['tile']} | "
                   f"{q:.3f} | {q / p:.3f} |")
    if got:
        ps, qs = [p for p, _ in got], [q for _, q in got]
        out.append(f"| geomean ({len(got)}) | | | {geomean(ps):.3f} | | {geomean(qs):.3f} | "
                   f"{geomean(qs) / geomean(ps):.3f} |")
    return "\n".join(out)


def cases_ab(cases: Path, label: str, changed: float = 0.0) -> str:
    """One A/B run case by case: the tile that ran, its speed ratio to cuBLAS, the A/B
    (the reference's time / this tree's) and Triton's error beyond the output's own
    rounding (`xs_triton`, where recorded); with `changed`, only the cases whose A/B is
    that far from 1 or farther."""
    rows = [r for r in _rows(cases) if r["label"] == label
            and (not changed or abs((_ab(r["extra"]) or 1.0) - 1) >= changed)]
    if not rows:
        raise ValueError(f"{cases}: no case labelled {label}")
    out = ["| case | mode | tile | ratio | A/B | error beyond rounding |",
           "|---|---|---|---:|---:|---:|"]
    for r in rows:
        ab, xs = _ab(r["extra"]), _extra(r["extra"], "xs_triton")
        out.append(f"| {r['case']} | {r['mode']} | {r['tile']} | {float(r['ratio']):.3f} | "
                   f"{'-' if ab is None else f'{ab:.3f}'} | {_sci(xs)} |")
    return "\n".join(out)
