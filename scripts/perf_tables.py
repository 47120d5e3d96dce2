"""Regenerate the tables of docs/PERF.md from the measurement data in the repository.

    python3 scripts/perf_tables.py             # rewrite the generated tables in docs/PERF.md
    python3 scripts/perf_tables.py --check     # exit 1, naming each table that is out of date
    python3 scripts/perf_tables.py --print NAME         # print one table (NAME from TABLES)
    python3 scripts/perf_tables.py --power CHECKS.csv...  # power table plus misses/false alarms

A generated table sits between `<!-- perf_tables:NAME -->` and `<!-- /perf_tables:NAME -->`
in docs/PERF.md; everything outside the markers is prose, written by hand. Sources:
baselines/nvidia-h200.json (the per-mode baseline tables) and the session folders under
docs/results from session 50 on (cases.csv from scripts/summarize_runs.py, tiles*.csv from
scripts/device/tiles.py, tuned.csv from scripts/keep_entries.py). The tables of sessions
1-49 are frozen (`<!-- frozen:NAME -->`, not regenerated): their data left the tree after
commit 46bf53f (sessions 1-16), 29d4265 (17-21), 5a5bca6 (22-28), ea1ea92 (29-33),
30b65a7 (34-40), 8c974ef (41), bdaad63 (42), 6eb0d2c (43), a7c15fc (44-45, but their
tiles*.csv), 718c254 (46) and ee037cf (47-49), and docs/results/README.md says how to
regenerate them there. `--power` counts any `gemmgate trials` checks.csv with
gemmgate.trials' own code (`power`).
This file is the registry (TABLES: a table's name, its function and its files) and the
CLI; the functions that make the tables are in scripts/perf_formats.py and, for A/B
runs, scripts/perf_ab.py.
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

from perf_ab import (  # noqa: E402
    cases_ab,
    moved_ab,
    moved_forms,
    providers_ab,
    providers_best,
    runs_ab,
    runs_best,
)
from perf_formats import (  # noqa: E402
    ALL_MODES,
    accum_fit,
    accum_model,
    accum_table,
    baseline_tables,
    block_excess,
    block_k_best,
    call_audit,
    call_audit_versions,
    errors_by_k,
    first_calls,
    host_calls,
    kernel_times,
    plan_times,
    power_table,
    provider_cases,
    ptxas_promote,
    split_outcome,
    split_prices,
    targets_table,
    tile_kernels,
    tile_matrix,
    tuned_against_lookup,
    worst_elements,
    wrong_cases,
)

from gemmgate.accuracy import ELEMENT_SLACK  # noqa: E402
from gemmgate.trials import power  # noqa: E402
from gemmgate.trials import read_csv as read_checks  # noqa: E402

PERF_MD = ROOT / "docs" / "PERF.md"
RESULTS = ROOT / "docs" / "results"
BASELINE = ROOT / "baselines" / "nvidia-h200.json"
S50 = RESULTS / "h200-2026-12-04-s50"
S51 = RESULTS / "h200-2026-12-04-s51"
S52 = RESULTS / "dev-cpu-2026-12-04-s52"
S53 = RESULTS / "dev-cpu-2026-12-04-s53"
S54 = RESULTS / "dev-cpu-2026-12-05-s54"
H54 = RESULTS / "h200-2026-12-05-s54"
H55 = RESULTS / "h200-2026-12-05-s55"
H56 = RESULTS / "h200-2026-12-05-s56"
S56 = RESULTS / "dev-cpu-2026-12-05-s56"
S58 = RESULTS / "dev-cpu-2026-12-05-s58"
G60 = RESULTS / "h100-2026-12-05-s60"
H60 = RESULTS / "h200-2026-12-05-s60"
S60 = RESULTS / "dev-cpu-2026-12-05-s60"
S61 = RESULTS / "dev-cpu-2026-12-05-s61"
S62 = RESULTS / "dev-cpu-2026-12-06-s62"
G63 = RESULTS / "h100-2026-12-06-s63"
G64 = RESULTS / "h100-2026-12-06-s64"
G65 = RESULTS / "h100-2026-12-06-s65"
G66 = RESULTS / "h100-2026-12-06-s66"
G69 = RESULTS / "h100-2026-12-06-s69"
G70 = RESULTS / "h100-2026-12-06-s70"
G71 = RESULTS / "h200-2026-12-06-s71"
S72 = RESULTS / "dev-cpu-2026-12-06-s72"
G72 = RESULTS / "h100-2026-12-06-s72"
G73 = RESULTS / "h100-2026-12-07-s73"
G74 = RESULTS / "h100-2026-12-07-s74"
G75 = RESULTS / "h100-2026-12-07-s75"
G76 = RESULTS / "h100-2026-12-07-s76"
G77 = RESULTS / "h100-2026-12-07-s77"
G78 = RESULTS / "h100-2026-12-07-s78"
G79 = RESULTS / "h100-2026-12-07-s79"
G80 = RESULTS / "h100-2026-12-07-s80"
G81 = RESULTS / "h100-2026-12-07-s81"
_WS = "kernels.matmul_ws:mm_ws_"


# --- the tables of docs/PERF.md --------------------------------------------------------


TABLES: dict[str, Callable[[], str]] = {
    "baseline": lambda: baseline_tables(BASELINE),
    "s50-pingpong": lambda: providers_ab(
        S50 / "cases.csv", ("run2-pp-shortk", "run2-pp-draw"),
        ((_WS.replace("ws_", "pp_") + "128x128", _WS + "128x128"),
         (_WS.replace("ws_", "pp_") + "128x144", _WS + "128x144"),
         ("named:pp_128x192", "named:ws_128x192"))),
    "s50-gain-a": lambda: moved_ab(S50 / "cases.csv", "run3-ab-moved", S50 / "moved_a.csv"),
    "s50-gain-c": lambda: moved_ab(S50 / "cases.csv", "run4-ab-moved-c", S50 / "moved_c.csv"),
    "s50-gain-c91": lambda: moved_ab(S50 / "cases.csv", "run4-ab91-c", S50 / "moved_c91.csv"),
    "s50-gain-forms": lambda: moved_forms(S50 / "cases.csv", "run4-ab91-c",
                                          S50 / "moved_c91.csv", per_set=False),
    "s50-gain-forms-a": lambda: moved_forms(S50 / "cases.csv", "run3-ab-moved",
                                            S50 / "moved_a.csv", per_set=False),
    "s50-gain-final": lambda: moved_ab(S50 / "cases_b.csv", "run9-ab93",
                                       S50 / "moved_final93.csv"),
    "s50-gain-final91": lambda: moved_ab(S50 / "cases_b.csv", "run8-ab91-final",
                                         S50 / "moved_final91.csv"),
    "s50-gain-final-sets": lambda: moved_ab(S50 / "cases_b.csv", "run8-ab-moved-final",
                                            S50 / "moved_final.csv"),
    "s50-rc-ws": lambda: providers_ab(
        S50 / "cases_b.csv", ("run6-rc-ws", "run6-ws160"),
        tuple((f"named:ws_{t}", f"named:{base}_{t}") for t, base in (
            ("128x128", "tma"), ("128x144", "wide"), ("128x160", "wide"),
            ("128x192", "wide")))),
    "s50-rc-ab": lambda: runs_ab(S50 / "cases_b.csv", ("run7-ab-rc",), "tma_ws"),
    "s50-fp8-ws": lambda: providers_ab(
        S50 / "cases_b.csv", ("run10-fp8-ws",),
        (("named8:ws8_128x128", "named8:tma8_128x128"),
         ("named8:ws8_128x192", "named8:wide8_128x192"))),
    "s50-sets-ab": lambda: runs_ab(
        S50 / "cases_b.csv", ("run9-holdout6", "run9-nightly", "run9-pr")),
    "s50-sets": lambda: targets_table({
        s: {m: (S50 / "cases_b.csv", f"run9-{s}") for m in ("bf16", "fp16")}
        for s in ("pr", "nightly", "holdout6")}),
    "s51-fp8-same": lambda: providers_ab(
        S51 / "cases.csv", ("run1-fp8-named", "run1-rc160"),
        (("named8:ws8_128x144", "named8:wide8_128x144"),
         ("named8:ws8_128x160", "named8:wide8_128x160"),
         ("named8:ws8_128x256", "named8:tma8_128x256"),
         ("named:ws_128x160", "named:wide_128x160"))),
    "s51-fp8-forms-a": lambda: moved_forms(S51 / "cases.csv", "run1-ab-fp8",
                                           S51 / "moved_a.csv", per_set=False),
    "s51-fp8-b": lambda: moved_ab(S51 / "cases.csv", "run2-ab-fp8", S51 / "moved_b.csv",
                                  controls=False),
    "s51-fp8-b94": lambda: moved_ab(S51 / "cases.csv", "run2-ab-fp8", S51 / "moved_b.csv",
                                    controls=False, sets=("draw94",)),
    "s51-fp8-forms-b": lambda: moved_forms(S51 / "cases.csv", "run2-ab-fp8",
                                           S51 / "moved_b.csv", per_set=False),
    "s51-rc160": lambda: moved_forms(S51 / "cases.csv", "run2-ab-rc", S51 / "moved_rc.csv",
                                     per_set=False),
    "s51-fp8-cut": lambda: moved_forms(S51 / "cases.csv", "run3-ab-fp8", S51 / "moved_c.csv",
                                       per_set=False),
    "s51-fp8-256": lambda: providers_ab(
        S51 / "cases.csv", ("run3-fp8-256",),
        tuple((f"named8b:ws8_128x{w}", "named8b:tma8_128x256") for w in (144, 160, 192))),
    "s51-fp8-sets": lambda: runs_ab(
        S51 / "cases.csv", ("run4-fp8-pr", "run4-fp8-nightly", "run4-fp8-holdout6")),
    "s51-kernels": lambda: kernel_times(S51 / "kernels.csv"),
    "s51-shortk-named": lambda: providers_best(S51 / "cases.csv", "run5-shortk", "namedk:"),
    "s51-shortk-tuned": lambda: runs_best(S51 / "cases.csv", "run5-shortk",
                                          "run6-tune-shortk"),
    "s51-tiles-shortk": lambda: tile_matrix(S51 / "tiles_shortk.csv", "1", "run7"),
    "s51-tiles-shortk-kernels": lambda: tile_kernels(S51 / "kernels_tiles.csv"),
    "s52-plan-time": lambda: plan_times(S52 / "plan_time.csv", S52 / "plan_time_cold.csv"),
    "s53-call-audit-triton36": lambda: call_audit(S53 / "call_audit_triton36_summary.csv",
                                                  S53 / "call_audit_triton36.csv"),
    "s53-call-audit-triton39": lambda: call_audit(S53 / "call_audit_triton39_summary.csv",
                                                  S53 / "call_audit_triton39.csv"),
    "s53-call-audit-draw1": lambda: call_audit(
        S53 / "call_audit_draw1_triton36_summary.csv", S53 / "call_audit_draw1_triton36.csv"),
    "s53-call-audit-search": lambda: call_audit(
        S53 / "call_audit_search_triton36_summary.csv", S53 / "call_audit_search_triton36.csv"),
    "s54-fp32-search-triton36-39": lambda: call_audit_versions(
        {"3.6": S54 / "call_audit_search_fp32_triton36.csv",
         "3.9": S54 / "call_audit_search_fp32_triton39.csv",
         "3.9 B first": S54 / "call_audit_search_fp32_triton39_bfirst.csv"}),
    "s54-fp32-ab": lambda: runs_ab(H54 / "cases.csv", (
        "call1-pr-fp32-t39", "call2-pr-fp32-t36", "call7-nightly-fp32-t39",
        "call8-nightly-fp32-t36")),
    "s54-targets": lambda: targets_table({
        "pr, triton 3.9": {**{m: (H54 / "cases.csv", "call3-pr-t39")
                              for m in ("tf32", "bf16", "fp16", "fp8", "tf32x3")},
                           "fp32": (H54 / "cases.csv", "call1-pr-fp32-t39")},
        "nightly, triton 3.9": {**{m: (H54 / "cases.csv", "call7-nightly-t39")
                                   for m in ("tf32", "bf16", "fp16", "fp8")},
                                "fp32": (H54 / "cases.csv", "call7-nightly-fp32-t39")},
        "pr, triton 3.6": {"fp32": (H54 / "cases.csv", "call2-pr-fp32-t36")},
        "nightly, triton 3.6": {"fp32": (H54 / "cases.csv", "call8-nightly-fp32-t36")}}),
    **{f"s54-tiles-{name}": functools.partial(tile_matrix, H54 / f"tiles_{name}.csv", "1")
       for name in ("fp32_t39", "fp32_t36", "tf32x3_rc", "tf32x3_rr", "split_rc")},
    "s54-x3-kmajor": lambda: moved_ab(H54 / "cases.csv", "call9-ab-tf32x3-skinny",
                                      H54 / "call9_moved_kmajor.csv", controls=False),
    "s54-x3-rowmajor": lambda: moved_ab(H54 / "cases.csv", "call9-ab-tf32x3-skinny",
                                        H54 / "call9_moved_rowmajor.csv", controls=False),
    "s54-x3-fresh": lambda: moved_ab(H54 / "cases.csv", "call10-ab98-tf32x3-skinny",
                                     H54 / "call10_moved.csv", controls=False),
    "s54-onetile": lambda: providers_ab(H54 / "cases.csv", ("call5-onetile",),
                                        (("plain:pick", ""),)),
    "s54-first-calls": lambda: first_calls(H54 / "first_calls.csv", H54 / "first_parts.csv",
                                           "fdbff70"),
    **{f"s55-tiles-{name}": functools.partial(tile_matrix, H55 / f"tiles_{name}.csv", "1")
       for name in ("onetile", "x3_rr", "onetile_rc", "x3_thin")},
    "s55-rule": lambda: moved_ab(H55 / "cases.csv", "call3-rule", H55 / "call3_rule_moved.csv"),
    "s55-reps1": lambda: moved_ab(H55 / "cases.csv", "call1-reps", H55 / "call1_moved.csv"),
    "s55-reps3": lambda: moved_ab(H55 / "cases.csv", "call3-reps",
                                  H55 / "call3_reps_moved.csv"),
    "s55-kept": lambda: runs_ab(H55 / "cases.csv", ("call4-kept",)),
    "s56-x3": lambda: moved_ab(H56 / "cases.csv", "call1-x3rule", H56 / "call1_x3_moved.csv",
                               controls=False),
    "s56-x3-capped": lambda: moved_ab(H56 / "cases.csv", "call1-x3rule",
                                      H56 / "call1_x3_capped_moved.csv", controls=False),
    "s56-rc": lambda: moved_ab(H56 / "cases.csv", "call1-rcrule", H56 / "call1_rc_moved.csv",
                               controls=False),
    "s56-keptrc": lambda: runs_ab(H56 / "cases.csv", ("call1-keptrc",)),
    "s56-plan-time": lambda: plan_times(S56 / "plan_time.csv", S56 / "plan_time_cold.csv"),
    "s58-fp8-errors": lambda: errors_by_k(S58 / "baseline_errors.csv", "fp8"),
    "s58-fp8-promote": lambda: ptxas_promote(S58 / "ptxas_fp8_promote.csv"),
    **{f"s60-h100-accum-{m}": functools.partial(accum_table, G60 / "accum.csv", m)
       for m in ("fp8", "bf16", "fp16")},
    "s60-h200-accum-fp8": lambda: accum_table(H60 / "accum.csv", "fp8", ("default", "block")),
    **{f"s60-h200-accum-{m}": functools.partial(accum_table, H60 / "accum.csv", m)
       for m in ("bf16", "fp16")},
    "s60-h200-ab": lambda: runs_ab(H60 / "cases.csv", ("call1-check",)),
    "s60-h100-eager-ab": lambda: runs_ab(G60 / "cases.csv", ("call2-eager-ab",)),
    "s60-host-calls": lambda: host_calls(S60 / "host_calls.csv", S60 / "host_calls_after.csv"),
    "s61-host-eager": lambda: host_calls(S61 / "host_eager_before.csv",
                                         S61 / "host_eager_after.csv"),
    "s61-host-eager-pr": lambda: plan_times(S61 / "host_eager_pr_final.csv"),
    "s61-host-eager-random": lambda: plan_times(S61 / "host_eager_random.csv"),
    "s62-accum-model": lambda: accum_model(S62 / "accum_model.csv",
                                           ("H200", H60 / "accum.csv"),
                                           ("H100", G60 / "accum.csv")),
    "s62-split-price": lambda: split_prices(S62 / "split_price.csv"),
    "s62-accum-fit": lambda: accum_fit(("H200", S62 / "accum_fit_h200.csv"),
                                       ("H100", S62 / "accum_fit_h100.csv")),
    "s63-h100-eager-ab": lambda: runs_ab(G63 / "cases.csv", ("call1-eager-ab",
                                                             "call1-eager-ab2")),
    "s63-h100-host-calls": lambda: plan_times(G63 / "plan_calls.csv"),
    "s63-h100-first-calls": lambda: first_calls(G63 / "first_calls.csv", None, "081ee47"),
    **{f"s63-h100-tiles-k{k}": functools.partial(tile_matrix, G63 / f"tiles_k{k}.csv")
       for k in (32768, 49152, 65536)},
    "s63-h100-fp8-ab": lambda: runs_ab(G63 / "cases.csv", ("call2-fp8-ab",)),
    "s63-h100-split": lambda: split_outcome(G63 / "accum_split.csv", G63 / "split_model.csv",
                                            S62 / "split_price.csv"),
    "s64-h100-fp8-tile-ab": lambda: runs_ab(G64 / "cases.csv", ("call1-fp8-split-tile-ab",)),
    "s64-h100-fp8-tile-cases": lambda: cases_ab(G64 / "cases.csv",
                                                "call1-fp8-split-tile-ab"),
    "s64-h100-tiles-programs": lambda: tile_matrix(G64 / "tiles_programs.csv"),
    "s64-h100-one-wave-ab": lambda: cases_ab(G64 / "cases.csv", "call3-one-wave-ab"),
    **{f"s64-h100-tiles-k{k}": functools.partial(tile_matrix, G64 / f"tiles_k{k}.csv")
       for k in (3, 4)},
    "s64-h100-baseline": lambda: baseline_tables(G64 / "baseline_heuristic.json"),
    "s64-h100-h200-table-ab": lambda: runs_ab(G64 / "cases.csv", ("call4-h200-table-pr",
                                                                  "call4-h200-table-holdout6")),
    "s64-h100-eager-ab": lambda: runs_ab(G64 / "cases.csv", ("call5-eager-ab",)),
    "s65-h100-fp8-moved": lambda: cases_ab(G65 / "cases.csv", "call1-fp8-moved-ab"),
    "s65-h100-table-ab": lambda: runs_ab(G65 / "cases.csv", (
        "call2-h100-table-pr", "call2-h100-table-holdout6", "call3-h100-table-nightly",
        "call4-h100-check", "call4-h100-tf32-nightly")),
    "s65-h100-table-moved": lambda: cases_ab(G65 / "cases.csv", "call2-h100-table-pr", 0.02),
    "s65-h100-nightly-moved": lambda: cases_ab(G65 / "cases.csv", "call3-h100-table-nightly",
                                               0.02),
    "s65-h100-tf32-withdrawn": lambda: cases_ab(G65 / "cases.csv", "call4-h100-tf32-nightly",
                                                0.02),
    "s66-h100-moved": lambda: cases_ab(G66 / "cases.csv", "call1-moved-fp32") + "\n\n"
    + cases_ab(G66 / "cases.csv", "call1-moved-fp8"),
    "s66-h100-tiebreak": lambda: runs_ab(G66 / "cases.csv", (
        "call1-tiebreak-fp32", "call1-tiebreak-tf32", "call1-tiebreak-fp8",
        "call2-h200table-tiebreak-fp32", "call2-h200table-tiebreak-fp8")),
    "s66-h100-tiebreak-h200-table": lambda: cases_ab(G66 / "cases.csv",
                                                     "call2-h200table-tiebreak-fp8"),
    "s66-h100-tf32-tune": lambda: runs_ab(G66 / "cases.csv", ("call3-tf32-tune-moved",
                                                              "call3-tf32-tune-nightly")),
    "s66-h100-tf32-moved": lambda: cases_ab(G66 / "cases.csv", "call3-tf32-tune-moved"),
    "s66-h100-targets": lambda: targets_table({
        "pr (check, 171586d)": {m: (G66 / "cases.csv", "call4-h100-check") for m in ALL_MODES},
        "nightly": {**{m: (G66 / "cases.csv", "call2-h100-nightly") for m in ALL_MODES},
                    "tf32": (G66 / "cases.csv", "call3-tf32-tune-nightly")},
        "holdout6": {m: (G66 / "cases.csv", "call4-h100-holdout6") for m in ("bf16", "fp16")},
        "small M·N, long K": {m: (G66 / "cases.csv", "call5-h100-longk") for m in ALL_MODES},
    }, lowest=True),
    "s75-h100-baseline": lambda: baseline_tables(ROOT / "baselines" / "nvidia-h100.json"),
    **{f"s66-h100-fp32-tiles-{x}": functools.partial(tile_matrix, G66 / f"tiles_{x}.csv")
       for x in ("cr", "rr")},
    "s66-h100-inductor": lambda: provider_cases(G66 / "cases.csv", "call8-h100-inductor",
                                                "inductor"),
    "s69-h100-pr": lambda: targets_table({
        "pr (check, 147a4d4)": {m: (G69 / "cases.csv", "call1-h100-check-pr")
                                for m in ALL_MODES}}, lowest=True),
    "s69-h100-unfit": lambda: moved_ab(G69 / "cases.csv", "call1-h100-unfit",
                                       G69 / "moved_unfit.csv"),
    "s69-h100-inductor": lambda: provider_cases(G69 / "cases.csv", "call3-h100-inductor29",
                                                "inductor"),
    "s70-h100-pr": lambda: targets_table({
        "pr (check, 89c01c1)": {m: (G70 / "cases.csv", "call1-h100-check-pr")
                                for m in ALL_MODES},
        "pr (check, e673f38)": {m: (G70 / "cases.csv", "call3-h100-check-pr")
                                for m in ALL_MODES}}, lowest=True),
    "s70-h100-eager-ab": lambda: runs_ab(G70 / "cases.csv", ("call1-h100-eager-ab",)),
    "s71-h200-pr": lambda: targets_table({
        "pr (check, e03afd6)": {m: (G71 / "cases.csv", "call1-h200-check-pr")
                                for m in ALL_MODES}}, lowest=True),
    "s71-h200-block-excess": lambda: block_excess(G71 / "cases.csv",
                                                  "call2-h200-nightly-xs"),
    "s71-h200-ab": lambda: runs_ab(G71 / "cases.csv", (
        "call1-h200-eager-ab", "call2-h200-tb-fp32", "call2-h200-tb-fp8")),
    "s72-cpu-first": lambda: plan_times(S72 / "first.csv"),
    "s72-cpu-first-aa": lambda: plan_times(S72 / "first_aa.csv"),
    "s72-h100-sets": lambda: targets_table({
        "holdout6 (03ae472)": {m: (G72 / "cases.csv", "call1-h100-holdout6")
                               for m in ("bf16", "fp16")},
        "tail (03ae472)": {m: (G72 / "cases.csv", "call1-h100-tail")
                           for m in ("tf32", "bf16", "fp16")}}, lowest=True),
    "s72-h100-first-calls": lambda: first_calls(G72 / "first_calls.csv",
                                                G72 / "first_parts.csv", "03ae472"),
    "s73-h100-holdout6": lambda: targets_table({
        "holdout6 (eeb3f2c)": {m: (G73 / "cases.csv", "call1-h100-holdout6")
                               for m in ("bf16", "fp16")}}, lowest=True),
    "s74-h100-pr": lambda: targets_table({
        "pr bf16 (call 1, dc6afa2, budget 0.1)": {"bf16": (G74 / "cases.csv",
                                                           "call1-h100-pr-bf16")},
        "pr (call 2, a483ea8, budget 0.05)": {m: (G74 / "cases.csv", "call2-h100-pr")
                                              for m in ALL_MODES}}, lowest=True),
    "s77-h100-flags-inductor": lambda: provider_cases(G77 / "cases.csv",
                                                      "s77b-flags-inductor", "inductor"),
    "s77-h100-nearest-ab": lambda: provider_cases(G77 / "cases.csv", "s77c-nearest-ab",
                                                  "ab"),
    "s79-h100-targets": lambda: targets_table({
        "pr (9123517, budget 0.1)": {m: (G79 / "cases.csv", "pr") for m in ALL_MODES},
        "nightly (9123517, budget 0.1)": {m: (G79 / "cases.csv", f"nightly-{m}")
                                          for m in ALL_MODES}}, lowest=True),
    "s79-h100-elements": lambda: worst_elements(
        G79 / "cases.csv", ("pr", *(f"nightly-{m}" for m in ALL_MODES)),
        ELEMENT_SLACK * 1e-2),
    "s79-h100-thin-n": lambda: cases_ab(G79 / "thin_n.csv", "thin-n"),
    "s80-h100-fp8-a-ab": lambda: cases_ab(G80 / "cases.csv", "s80a-fp8-ab"),
    "s80-h100-thin-n-ab": lambda: cases_ab(G80 / "cases.csv", "s80a-thin-n-ab"),
    "s81-h100-pr": lambda: targets_table({
        "pr (9a55f7d, budget 0.05)": {m: (G81 / "cases.csv", "s80c-pr") for m in ALL_MODES}},
        lowest=True),
    "s81-h100-thin-n-tuned": lambda: tuned_against_lookup(
        G81 / "cases.csv", "s80b-thin-n-lookup", "s80b-thin-n-tuned"),
    "s81-h100-thin-n-ab": lambda: cases_ab(G81 / "cases.csv", "s81a-thin-n-ab"),
    "s81-h100-thin-n-searched": lambda: tuned_against_lookup(
        G81 / "cases.csv", "s81a-thin-n-ab", "s81a-thin-n-tuned"),
    "s78-h100-worst6-tuned": lambda: tuned_against_lookup(
        G78 / "cases.csv", "s78a-h100-worst6-lookup", "s78a-h100-worst6-tuned"),
    "s78-h100-worst6-depth": lambda: block_k_best(G78 / "tune_timings.csv"),
    "s76-h100-inductor-1": lambda: provider_cases(G76 / "cases.csv", "h100-lose-1",
                                                  "inductor"),
    "s76-h100-inductor-2": lambda: provider_cases(G76 / "cases.csv", "h100-lose-2",
                                                  "inductor"),
    "s75-h100-pr": lambda: targets_table({
        "pr (call 1, 77b747a, budget 0.05)": {m: (G75 / "cases.csv", "call1-h100-pr")
                                              for m in ALL_MODES}}, lowest=True),
}


def _block(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- perf_tables:{re.escape(name)} -->\n)(.*?)"
                      rf"(<!-- /perf_tables:{re.escape(name)} -->)", re.S)


def render(text: str) -> tuple[str, list[str]]:
    """PERF.md's text with every table regenerated, and the names of those that changed."""
    changed = []
    opened = re.findall(r"<!-- perf_tables:([\w.-]+) -->", text)
    unknown = sorted(set(opened) - set(TABLES))
    if unknown:
        raise SystemExit(f"{PERF_MD}: blocks with no table in TABLES: {', '.join(unknown)} "
                         "(a frozen table is marked <!-- frozen:NAME -->)")
    for name, make in TABLES.items():
        m = _block(name).search(text)
        if not m:
            raise SystemExit(f"{PERF_MD}: no <!-- perf_tables:{name} --> block")
        if opened.count(name) > 1:   # (only the first was rewritten and checked: a stale
            # second copy passed --check, a review)
            raise SystemExit(f"{PERF_MD}: {opened.count(name)} <!-- perf_tables:{name} --> "
                             "blocks; a table is generated into one block")
        body = f"\n{make()}\n\n"
        if m.group(2) != body:
            changed.append(name)
            text = text[:m.start(2)] + body + text[m.end(2):]
    return text, changed


def main(argv: list[str]) -> int:
    if argv[:1] == ["--power"] and argv[1:]:
        try:   # (a missing file, or a CSV of another kind, was a traceback)
            rows = read_checks(*map(Path, argv[1:]))
            text = power_table([("", power(rows))]) + "\n" + wrong_cases(rows)
        except OSError as e:
            print(f"perf_tables: error: {e}", file=sys.stderr)
            return 2
        except (KeyError, ValueError) as e:
            print(f"perf_tables: error: not a `gemmgate trials` checks.csv ({e!r}): give "
                  "the checks.csv of a trials --out folder", file=sys.stderr)
            return 2
        print(text)
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
    if changed:   # (written in place: a kill mid-write left PERF.md's prose cut; a review)
        from gemmgate.files import write_text_atomic

        write_text_atomic(PERF_MD, new)
    print(f"updated: {', '.join(changed) or 'nothing'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

