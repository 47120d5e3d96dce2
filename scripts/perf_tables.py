"""Regenerate the tables of docs/PERF.md from the measurement data in the repository.

    python3 scripts/perf_tables.py             # rewrite the generated tables in docs/PERF.md
    python3 scripts/perf_tables.py --check     # exit 1, naming each table that is out of date
    python3 scripts/perf_tables.py --print NAME         # print one table (NAME from TABLES)
    python3 scripts/perf_tables.py --power CHECKS.csv...  # power table plus misses/false alarms

A generated table sits between `<!-- perf_tables:NAME -->` and `<!-- /perf_tables:NAME -->`
in docs/PERF.md; everything outside the markers is prose, written by hand. Sources:
baselines/nvidia-h200.json (the per-mode baseline tables) and the session folders under
docs/results from session 29 on (cases.csv from scripts/summarize_runs.py, tiles*.csv from
scripts/device/tiles.py, tuned.csv from scripts/keep_entries.py). The tables of sessions
1-28 are frozen (`<!-- frozen:NAME -->`, not regenerated): their data left the tree after
commit 46bf53f (sessions 1-16), 29d4265 (sessions 17-21) and 5a5bca6 (sessions 22-28), and
docs/results/README.md says how to regenerate them there. `--power` counts any
`gemmgate trials` checks.csv with gemmgate.trials' own code (`power`).
This file is the registry (TABLES: a table's name, its function and its files) and the
CLI; the functions that make the tables are in scripts/perf_formats.py.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from perf_formats import (  # noqa: E402
    HOLDOUTS,
    MODES,
    _stacked,
    ab_by_mode,
    ab_by_variant,
    ab_changes,
    ab_rows,
    alignment_split,
    baseline_tables,
    block_ratios,
    csv_table,
    first_calls_ab,
    label_pairs,
    label_steps,
    moved_ab,
    moved_forms,
    moved_worst,
    ncu_table,
    parts_ab,
    pick_and_best,
    power_table,
    ratios_below,
    s9_long_tail,
    targets_table,
    tile_matrix,
    tiles_table,
    tuned_summary,
    variant_best,
    wrong_cases,
)

from gemmgate.trials import power  # noqa: E402
from gemmgate.trials import read_csv as read_checks  # noqa: E402

PERF_MD = ROOT / "docs" / "PERF.md"
RESULTS = ROOT / "docs" / "results"
BASELINE = ROOT / "baselines" / "nvidia-h200.json"
S34 = RESULTS / "h200-2026-12-03-s34"
S35 = RESULTS / "h200-2026-12-03-s35"
S36 = RESULTS / "h200-2026-12-03-s36"
S37 = RESULTS / "h200-2026-12-03-s37"
S38 = RESULTS / "h200-2026-12-03-s38"
S39 = RESULTS / "h200-2026-12-03-s39"
S40 = RESULTS / "h200-2026-12-03-s40"
S41 = RESULTS / "h200-2026-12-03-s41"
S42 = RESULTS / "h200-2026-12-03-s42"
S43 = RESULTS / "h200-2026-12-04-s43"
S44 = RESULTS / "h200-2026-12-04-s44"
# session 42's tiles.py files, each one table (`tile_matrix`): table name -> file stem
_S42_MATRICES = {
    **{f"onewave-{m}": f"tiles_onewave_{m}" for m in ("bf16", "fp16", "fp8")},
    **{f"{call}-{m}": f"tiles_{call}_{m}" for call in ("ptr", "ptr2") for m in ("bf16", "fp8")},
    **{f"epi-{m}-{v}": f"epilogue_cm{v}_{m}" for m, v in (("bf16", 1), ("bf16", 2),
                                                         ("fp8", 1), ("fp8", 2), ("fp8", 0))},
}
def _ab40(label: str, moved: str) -> str:
    return moved_ab(S40 / "cases.csv", label, S40 / moved)


def _worst40(label: str, moved: str, count: int) -> str:
    return moved_worst(S40 / "cases.csv", label, S40 / moved, count)


_S39_PARTS = ("resolve", "lookup", "decide", "recipe", "prepare", "bound_run", "make_bound",
              "jit", "compile")


# --- the tables of docs/PERF.md --------------------------------------------------------


TABLES: dict[str, Callable[[], str]] = {
    "baseline": lambda: baseline_tables(BASELINE),
    "s34-wide": lambda: _stacked(variant_best(S34 / "wide3_bf16.csv", ("tma", "tma_wide")),
                                 variant_best(S34 / "wide3_fp8.csv", ("tma", "tma_wide"))),
    "s34-f5-ab": lambda: _stacked(*(ab_by_mode(S34 / "cases.csv", f"call3-f5-{m}")
                                    for m in ("fp8", "bf16", "fp16", "tf32", "fp32"))),
    "s34-f5-worst": lambda: ab_changes(S34 / "cases.csv", "call3-f5-", 0.95, 1.05),
    "s34-reps": lambda: csv_table(S34 / "tuned.csv", ("case", "mode", "after", "after_ratio",
                                                      "tried", "kept")),
    "s34-reps-ab": lambda: ab_rows(S34 / "cases.csv", "call4-"),
    "s34-sets": lambda: targets_table({
        s: {m: (S34 / "cases.csv", f"call{6 if m in ('fp32', 'bf16', 'fp8') else 7}-{s}")
            for m in MODES if m != "tf32x3"}
        for s in ("nightly", *HOLDOUTS)}),
    "s34-tail": lambda: _stacked(s9_long_tail(S34 / "cases.csv", "call6-"),
                                 s9_long_tail(S34 / "cases.csv", "call7-")),
    "s34-below": lambda: _stacked(ratios_below(S34 / "cases.csv", "call6-", 0.8),
                                  ratios_below(S34 / "cases.csv", "call7-", 0.8)),
    "s35-ncu": lambda: ncu_table(S35 / "ncu.csv"),
    "s35-regs": lambda: label_pairs(S35 / "tiles_wide.csv", "call1-committed",
                                    "call1-a-in-registers", "tma_wide"),
    "s35-order": lambda: label_pairs(S35 / "tiles_wide_order.csv", "call2-wide-first",
                                     "call2-narrow-first", "tma_wide"),
    "s35-blocks": lambda: _stacked(
        block_ratios(S35 / "tiles_calib.csv", "tma:128x256x64:s3:w8",
                     "tma_wide:128x192x64:s4:w8"),
        block_ratios(S35 / "tiles_calib.csv", "tma:128x256x128:s3:w8",
                     "tma_wide:128x192x128:s4:w8")),
    "s35-ab": lambda: ab_rows(S35 / "cases.csv", "call3-wide-"),
    "s35-rand": lambda: _stacked(*(ab_by_mode(S35 / "cases.csv", f"call4-rand-{m}", "tma_wide")
                                   for m in ("bf16", "fp16"))),
    "s35-rand-worst": lambda: ab_changes(S35 / "cases.csv", "call4-rand-", 1.05, 100.0),
    "s36-holdout6": lambda: label_steps(S36 / "cases.csv", ("call1-",)),
    "s36-hybrid": lambda: _stacked(*(variant_best(S36 / f"tiles_hybrid_{m}.csv",
                                                  ("tma", "tma_hybrid"))
                                     for m in ("bf16", "tf32", "fp8"))),
    "s36-ab": lambda: ab_rows(S36 / "cases.csv", "call2-ab-"),
    "s36-rand": lambda: _stacked(*(ab_by_mode(S36 / "cases.csv", f"call3-rand-{m}", "tma_hybrid")
                                   for m in ("bf16", "fp16", "tf32", "fp8"))),
    "s36-rand-sets": lambda: label_steps(S36 / "cases.csv", ("call3-",)),
    "s36-rand-worst": lambda: ab_changes(S36 / "cases.csv", "call3-rand-", 0.97, 100.0),
    "s36-short": lambda: variant_best(S36 / "tiles_short_bf16.csv", ("tma", "tma_wide")),
    "s37-margin": lambda: label_steps(S37 / "cases.csv", ("call1-",)),
    "s37-short96": lambda: variant_best(S37 / "tiles_short96_bf16.csv", ("tma", "tma_wide")),
    "s37-thin": lambda: _stacked(*(variant_best(S37 / f"tiles_thin_{m}.csv",
                                                ("tma", "tma_hybrid", "tma_wide"))
                                   for m in ("bf16", "fp8"))),
    "s37-fit": lambda: _stacked(*(variant_best(S37 / f"tiles_fit_{m}.csv", ("tma", "tma_wide"))
                                  for m in ("bf16", "fp8"))),
    "s37-rand": lambda: _stacked(*(ab_by_mode(S37 / "cases.csv", f"call4-ab-fit-{m}", "tma_wide")
                                   for m in ("bf16", "fp16", "fp8"))),
    "s37-rand-b": lambda: _stacked(*(ab_by_mode(S37 / "cases.csv", f"call5-ab-fit-{m}",
                                                "tma_wide") for m in ("bf16", "fp16", "fp8"))),
    "s37-fit-worst": lambda: ab_changes(S37 / "cases.csv", "call4-ab-fit-", 0.97, 100.0),
    "s37-fit-worst-b": lambda: ab_changes(S37 / "cases.csv", "call5-ab-fit-", 0.97, 100.0),
    "s37-rand60": lambda: label_steps(S37 / "cases.csv", ("call5-rand60",)),
    "s37-tall": lambda: _stacked(*(variant_best(S37 / f"tiles_tall_{m}.csv",
                                                ("tma", "tma_wide", "tma_tall"))
                                   for m in ("bf16", "fp8"))),
    "s37-tall-ab": lambda: _stacked(*(ab_by_mode(S37 / "cases.csv", f"call6-ab-tall-{m}",
                                                 "tma_tall") for m in ("bf16", "fp16", "fp8"))),
    "s37-tall-worst": lambda: ab_changes(S37 / "cases.csv", "call6-ab-tall-", 0.97, 100.0),
    "s38-layout": lambda: variant_best(S38 / "tiles_layout_bf16.csv",
                                       ("tma", "tma_wide", "tma_tall")),
    "s38-ab": lambda: label_steps(S38 / "cases.csv", ("call2-ab-", "call3-")),
    "s38-ab-variant": lambda: ab_by_variant(S38 / "cases.csv", "call"),
    "s38-ab-worst": lambda: _stacked(*(ab_changes(S38 / "cases.csv", p, 0.97, 100.0, "")
                                       for p in ("call2-", "call3-"))),
    "s38-streamk-ab": lambda: label_steps(S38 / "cases.csv", ("call4-",)),
    "s38-streamk": lambda: variant_best(S38 / "tiles_streamk_bf16.csv", ("tma", "tma_streamk")),
    "s38-subwave": lambda: variant_best(S38 / "tiles_subwave_bf16.csv",
                                        ("tma", "tma_split", "tma_wide")),
    "s39-first-bf16": lambda: first_calls_ab(S39 / "first_calls.csv", "bf16"),
    "s39-first-fp8": lambda: first_calls_ab(S39 / "first_calls.csv", "fp8"),
    "s39-parts": lambda: _stacked(*(parts_ab(S39 / "first_parts.csv", m, _S39_PARTS)
                                    for m in ("bf16", "fp8"))),
    "s39-ncu": lambda: ncu_table(S39 / "ncu.csv"),
    "s39-wide64": lambda: variant_best(S39 / "tiles_wide64_bf16.csv", ("tma", "tma_wide")),
    "s39-wide64-ab": lambda: _stacked(*(ab_by_mode(S39 / "cases.csv", label, "tma_wide")
                                        for label in ("call4-ab64", "call5-ab64-s40"))),
    "s39-wide64-worst": lambda: ab_changes(S39 / "cases.csv", "call4-ab64", 0.80, 100.0, ""),
    "s39-onewave": lambda: label_steps(S39 / "cases.csv", ("call6-",)),
    "s39-onewave-changes": lambda: ab_changes(S39 / "cases.csv", "call6-", 0.95, 1.05, ""),
    "s39-hybrid-warps": lambda: tiles_table(S39 / "tiles_hybrid_warps_fp16.csv"),
    "s39-sets": lambda: targets_table({
        s: {m: (S39 / "cases.csv", f"call{5 if s in ('holdout', 'holdout5') else 4}-{s}")
            for m in ("bf16", "fp16", "fp8")}
        for s in (*HOLDOUTS, "holdout6")}),
    "s39-tail": lambda: s9_long_tail(S39 / "cases.csv", ("call4-holdout", "call5-holdout")),
    "s39-below": lambda: ratios_below(S39 / "cases.csv", ("call4-holdout", "call5-holdout"),
                                      0.8),
    "s40-w8": lambda: _ab40("call1-ab-w8", "moved_w8.csv"),
    "s40-w8-worst": lambda: _worst40("call1-ab-w8", "moved_w8.csv", 5),
    "s40-w8-val": lambda: _ab40("call3-val-w8", "moved_w8_val.csv"),
    "s40-cc": lambda: moved_ab(S40 / "cases.csv", "call2-ab-cc", S40 / "moved_w8.csv",
                               controls=False),
    "s40-mix-val": lambda: _ab40("call3-val-half-mix", "moved_half_val.csv"),
    "s40-half-tiles": lambda: _stacked(tiles_table(S40 / "tiles_fp8_64wide.csv"),
                                       tiles_table(S40 / "tiles_fp8_64wide_cr.csv")),
    "s40-half-ab": lambda: _ab40("call2-ab-half", "moved_half.csv"),
    "s40-half-ab-worst": lambda: _worst40("call2-ab-half", "moved_half.csv", 9),
    "s40-half-val": lambda: _ab40("call3-val-half", "moved_half_val.csv"),
    "s40-half-val-worst": lambda: _worst40("call3-val-half", "moved_half_val.csv", 3),
    "s40-half16": lambda: _ab40("call4-ab-half16", "moved_half16.csv"),
    "s40-half16-worst": lambda: _worst40("call4-ab-half16", "moved_half16.csv", 5),
    "s40-half16-tiles": lambda: tiles_table(S40 / "tiles_half16_bf16.csv"),
    "s40-tall": lambda: _ab40("call5-ab-tall-half", "moved_tall_half.csv"),
    "s40-tall-worst": lambda: _worst40("call5-ab-tall-half", "moved_tall_half.csv", 7),
    "s40-tall-val": lambda: _ab40("call6-val-tall", "moved_tall_val.csv"),
    "s40-small-cc": lambda: tiles_table(S40 / "tiles_fp8_small_cc.csv"),
    "s40-split": lambda: _ab40("call7-ab-split", "moved_split.csv"),
    "s40-split-worst": lambda: _worst40("call7-ab-split", "moved_split.csv", 6),
    "s40-split-val": lambda: _ab40("call8-val-split", "moved_split_val.csv"),
    "s40-split-val-worst": lambda: _worst40("call8-val-split", "moved_split_val.csv", 4),
    "s40-sets": lambda: targets_table({
        s: {m: ((S40 / "cases.csv", "call3-holdout6") if s == "holdout6" else
                (S40 / "cases.csv", "call3-holdout") if (s, m) == ("holdout", "fp8") else
                (S40 / "cases.csv", "call6-holdout4") if (s, m) == ("holdout4", "fp8") else
                (S39 / "cases.csv", f"call{5 if s in ('holdout', 'holdout5') else 4}-{s}"))
            for m in ("bf16", "fp16", "fp8")}
        for s in (*HOLDOUTS, "holdout6")}),
    "s40-below": lambda: ratios_below(S40 / "cases.csv", ("call3-holdout", "call6-holdout"),
                                      0.8, ""),
    "s41-shortk": lambda: pick_and_best(S41 / "tiles_shortk_bf16.csv"),
    **{f"s42-{name}": functools.partial(tile_matrix, S42 / f"{file}.csv")
       for name, file in _S42_MATRICES.items()},
    "s42-ab": lambda: moved_ab(S42 / "cases.csv", "call5-ab-onewave", S42 / "moved_onewave.csv"),
    "s42-ab-worst": lambda: moved_worst(S42 / "cases.csv", "call5-ab-onewave",
                                        S42 / "moved_onewave.csv", 8),
    "s42-fresh": lambda: moved_ab(S42 / "cases.csv", "call6-ab-onewave-fresh",
                                  S42 / "moved_onewave_fresh.csv"),
    "s42-fresh-worst": lambda: moved_worst(S42 / "cases.csv", "call6-ab-onewave-fresh",
                                           S42 / "moved_onewave_fresh.csv", 4),
    "s43-tall128": lambda: tile_matrix(S43 / "tiles_tall128_fp8.csv"),
    "s43-stages": lambda: tile_matrix(S43 / "tiles_stages_bf16.csv"),
    "s43-ab": lambda: moved_ab(S43 / "cases.csv", "call1-ab-tall128", S43 / "moved_tall128.csv"),
    "s43-ab-worst": lambda: moved_worst(S43 / "cases.csv", "call1-ab-tall128",
                                        S43 / "moved_tall128.csv", 6),
    "s43-fresh": lambda: moved_ab(S43 / "cases.csv", "call2-ab-tall128-fresh",
                                  S43 / "moved_tall128_fresh.csv"),
    "s43-sets": lambda: targets_table({
        s: {m: (S43 / "sets.csv", f"s43-{s}-a")
            for m in (("fp32", "tf32", "bf16", "fp16", "fp8") if s in ("pr", "nightly")
                      else ("bf16", "fp16", "fp8"))}
        for s in ("pr", "nightly", *HOLDOUTS, "holdout6")}),
    "s43-below": lambda: ratios_below(S43 / "sets.csv", "s43-", 0.8, ""),
    "s43-x3": lambda: moved_ab(S43 / "cases.csv", "call5-ab-x3-kept", S43 / "moved_x3.csv"),
    "s43-x3-worst": lambda: moved_worst(S43 / "cases.csv", "call5-ab-x3-kept",
                                        S43 / "moved_x3.csv", 6),
    "s43-x3-tuned": lambda: tuned_summary(S43 / "tuned.csv"),
    "s44-forms": lambda: moved_forms(S44 / "cases.csv", "call1-ab-", S44 / "moved_onewave.csv"),
    "s44-fresh": lambda: moved_forms(S44 / "cases.csv", "call2-ab-",
                                     S44 / "moved_onewave_fresh.csv"),
    "s44-rand": lambda: alignment_split(S44 / "cases.csv", "call3-rand73"),
    "s44-rand-b": lambda: alignment_split(S44 / "cases_b.csv", "call7-rand73"),
    "s44-tf32-tiles": lambda: tile_matrix(S44 / "tiles_onewave_tf32.csv"),
    "s44-tf32": lambda: moved_forms(S44 / "cases.csv", "call5-ab-", S44 / "moved_tf32.csv"),
    "s44-tf32-085": lambda: moved_forms(S44 / "cases_b.csv", "call6-ab-",
                                        S44 / "moved_tf32_085.csv"),
    "s44-cr": lambda: moved_forms(S44 / "cases_b.csv", "call6-ab-", S44 / "moved_cr_wide.csv"),
    "s41-wave": lambda: _stacked(pick_and_best(S41 / "tiles_wave_bf16.csv"),
                                 pick_and_best(S41 / "tiles_wave_fp8.csv")),
    "s41-tail": lambda: csv_table(S41 / "reduce_tail.csv"),
    "s41-parts": lambda: csv_table(S41 / "kernels_hybrid_parts.csv",
                                   ("shape", "provider", "kernel", "grid", "registers", "us")),
    "s41-reps": lambda: tuned_summary(S41 / "tuned.csv"),
    "s41-reps-ab": lambda: moved_ab(S41 / "cases.csv", "call4-ab-reps", S41 / "moved_reps.csv"),
    "s41-split": lambda: moved_ab(S41 / "cases.csv", "call5-ab-split", S41 / "moved_split.csv"),
    "s41-split-worst": lambda: moved_worst(S41 / "cases.csv", "call5-ab-split",
                                           S41 / "moved_split.csv", 6),
    "s41-w144": lambda: moved_ab(S41 / "cases.csv", "call8-ab-w144", S41 / "moved_w144.csv"),
    "s41-w144-worst": lambda: moved_worst(S41 / "cases.csv", "call8-ab-w144",
                                          S41 / "moved_w144.csv", 6),
    "s39-ncu-extra": lambda: csv_table(S39 / "ncu_extra.csv", (
        "shape", "provider", "gpu__time_duration.sum",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
        "smsp__inst_executed.sum", "dram__bytes_write.sum",
        "lts__throughput.avg.pct_of_peak_sustained_elapsed")),
}


def _block(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- perf_tables:{re.escape(name)} -->\n)(.*?)"
                      rf"(<!-- /perf_tables:{re.escape(name)} -->)", re.S)


def render(text: str) -> tuple[str, list[str]]:
    """PERF.md's text with every table regenerated, and the names of those that changed."""
    changed = []
    unknown = sorted(set(re.findall(r"<!-- perf_tables:([\w.-]+) -->", text)) - set(TABLES))
    if unknown:
        raise SystemExit(f"{PERF_MD}: blocks with no table in TABLES: {', '.join(unknown)} "
                         "(a frozen table is marked <!-- frozen:NAME -->)")
    for name, make in TABLES.items():
        m = _block(name).search(text)
        if not m:
            raise SystemExit(f"{PERF_MD}: no <!-- perf_tables:{name} --> block")
        body = f"\n{make()}\n\n"
        if m.group(2) != body:
            changed.append(name)
            text = text[:m.start(2)] + body + text[m.end(2):]
    return text, changed


def main(argv: list[str]) -> int:
    if argv[:1] == ["--power"] and argv[1:]:
        rows = read_checks(*map(Path, argv[1:]))
        print(power_table([("", power(rows))]) + "\n" + wrong_cases(rows))
        return 0
    if argv[:1] == ["--print"] and argv[1:2] and argv[1] in TABLES:
        print(TABLES[argv[1]]())
        return 0
    if argv not in ([], ["--check"]):
        print(__doc__, file=sys.stderr)
        return 2
    text = PERF_MD.read_text()
    new, changed = render(text)
    if argv == ["--check"]:
        for name in changed:
            print(f"{PERF_MD.relative_to(ROOT)}: table {name!r} is out of date "
                  "(run python3 scripts/perf_tables.py)")
        return 1 if changed else 0
    if changed:
        PERF_MD.write_text(new)
    print(f"updated: {', '.join(changed) or 'nothing'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

