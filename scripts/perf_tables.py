"""Regenerate the tables of docs/PERF.md from the measurement data in the repository.

    python3 scripts/perf_tables.py             # rewrite the generated tables in docs/PERF.md
    python3 scripts/perf_tables.py --check     # exit 1, naming each table that is out of date
    python3 scripts/perf_tables.py --print NAME         # print one table (NAME from TABLES)
    python3 scripts/perf_tables.py --power CHECKS.csv...  # power table plus misses/false alarms

A generated table sits between `<!-- perf_tables:NAME -->` and `<!-- /perf_tables:NAME -->`
in docs/PERF.md; everything outside the markers is prose, written by hand. Sources:
baselines/nvidia-h200.json (the per-mode baseline tables), docs/results/*/checks.csv (one
row per case check of a `gemmgate check --json`: the power tables) and docs/results/*/power.json
(the in-process power tables of sessions 1-2). The check rows and their counting are
gemmgate.trials' (`check_rows`, `power`): the same code that `gemmgate trials` writes with.
docs/results/*/modes_summary.csv: per label and mode, the figures of per-case rows that
left cases.csv (sessions 5, 7, 9: labels that a modes table reads for a geomean only).
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

from gemmgate.stats import geomean, median  # noqa: E402
from gemmgate.trials import CHECK_SUMMARY, power, power_from_summaries  # noqa: E402
from gemmgate.trials import read_csv as read_checks  # noqa: E402
from gemmgate.tuning import config_name  # noqa: E402

PERF_MD = ROOT / "docs" / "PERF.md"
RESULTS = ROOT / "docs" / "results"
BASELINE = ROOT / "baselines" / "nvidia-h200.json"
S4 = RESULTS / "h200-2026-11-30-s4"
S5 = RESULTS / "h200-2026-11-30-s5"
S6 = RESULTS / "h200-2026-11-30-s6"
S7 = RESULTS / "h200-2026-11-30-s7"
S8 = RESULTS / "h200-2026-11-30-s8"
S10 = RESULTS / "h200-2026-11-30-s10"
S11 = RESULTS / "h200-2026-11-30-s11"
S9 = RESULTS / "h200-2026-11-30-s9"
S12 = RESULTS / "h200-2026-11-30-s12"
S13 = RESULTS / "h200-2026-11-30-s13"
S14 = RESULTS / "h200-2026-11-30-s14"
S15 = RESULTS / "h200-2026-11-30-s15"
S16 = RESULTS / "h200-2026-11-30-s16"
S17 = RESULTS / "h200-2026-12-01-s17"
S18 = RESULTS / "h200-2026-12-01-s18"
S19 = RESULTS / "h200-2026-12-01-s19"
S20 = RESULTS / "h200-2026-12-01-s20"
S21 = RESULTS / "h200-2026-12-01-s21"
S22 = RESULTS / "h200-2026-12-01-s22"
S23 = RESULTS / "h200-2026-12-02-s23"
S24 = RESULTS / "h200-2026-12-02-s24"
S25 = RESULTS / "h200-2026-12-02-s25"
S26 = RESULTS / "h200-2026-12-02-s26"
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


def gate_table(groups: list[tuple[str, dict]]) -> str:
    """Power table with the figures a fleet needs: checks that went red, and "improved"
    (a baseline refresh acts on it, so it has the same false-alarm bound); one block of
    rows per (label, power) group."""
    out = ["| GPU | injected slowdown | checks | checks red | case checks | flagged regressed | "
           "fraction | flagged improved |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for label, pw in groups:
        out += [f"| {label} " + row for row in _gate_rows(pw)]
    return "\n".join(out)


def _gate_rows(pw: dict) -> list[str]:
    out = []
    for level, p in pw.items():
        frac = f"{p['regressed'] / p['judged']:.1%}" if p["judged"] else "—"
        imp = f"{p['improved']} ({p['improved'] / p['judged']:.1%})" if p["judged"] else "—"
        what = f"{level:.0%}" + (" (A/A: false alarms)" if level == 0 else "")
        out.append(f"| {what} | {p['checks']} | {p['red']} | {p['judged']} | {p['regressed']} "
                   f"| {frac} | {imp} |")
    return out


def stored_alone_table(path: Path) -> str:
    """The stored baseline's judgement alone (no A/B), by mode: fraction flagged."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    out = ["| stored level (GPU) | injected | " + " | ".join(MODES) + " | all |",
           "|---|---|" + "---:|" * (len(MODES) + 1)]
    keys = sorted({(r["level"], r["gpu"], float(r["injected"])) for r in rows})
    by = {(r["level"], r["gpu"], float(r["injected"]), r["mode"]): r for r in rows}
    for level, gpu, inj in keys:
        cells = []
        for mode in MODES + ("all",):
            r = by.get((level, gpu, inj, mode))
            if r is None:
                cells.append("—")
                continue
            n, k = int(r["case_checks"]), int(r["regressed"] if inj else r["improved"])
            extra = f", {int(r['regressed'])} regr." if inj == 0 and int(r["regressed"]) else ""
            cells.append(f"{k / n:.1%}{extra}")
        what = f"{inj:.0%}" + (" (A/A: 'improved')" if inj == 0 else "")
        out.append(f"| {level} ({gpu}) | {what} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def wrong_cases(rows: list[dict]) -> str:
    """The false alarms (0%) and misses (> 0%) of `power`, one case per line."""
    out = []
    for level, p in power(rows).items():
        if p["wrong"]:
            out.append(f"\n{'false alarms' if level == 0 else 'missed'} at {level:.0%}:")
            out += [f"  {case}: {n}" for case, n in sorted(p["wrong"].items())]
    return "\n".join(out)


def inprocess_table(path: Path) -> str:
    """Power table of an in-process `scripts/device/power.py` run (its power.json)."""
    rows = json.loads(path.read_text())["rows"]
    out = ["| injected slowdown | checks | cases judged | flagged regressed | fraction |",
           "|---|---:|---:|---:|---:|"]
    for key in sorted(rows, key=float):
        r, level = rows[key], float(key)
        frac = f"{r['regressed'] / r['trials']:.1%}"
        if level == 0.03:
            frac = f"**{frac}**"
        what = f"{level:.0%}" + (" (A/A: false alarms)" if level == 0 else "")
        out.append(f"| {what} | {r['runs']} | {r['trials']} | {r['regressed']} | {frac} |")
    return "\n".join(out)


# --- the tables of docs/PERF.md --------------------------------------------------------


def _session(session: str, *calls: str, day: str = "2026-11-29") -> dict:
    """Power of a session's checks, from their trials summaries (one folder per call)."""
    base = RESULTS / f"h200-{day}-{session}"
    return _summaries(*[base / c for c in calls] if calls else [base])


TABLES: dict[str, Callable[[], str]] = {
    "baseline": lambda: baseline_tables(BASELINE),
    "v2-inprocess": lambda: inprocess_table(RESULTS / "h200-2026-11-29-v2" / "power.json"),
    "v3-fresh": lambda: power_table([("", _session("v3"))]),
    "v4-inprocess": lambda: inprocess_table(RESULTS / "h200-2026-11-29-v4" / "power.json"),
    "s2-calls": lambda: power_table(
        [(f"call {i}", _session("s2", f"call{i}")) for i in range(1, 5)], "device call"),
    "s3-call1": lambda: power_table([("", _session("s3", "call1"))]),
    "s3-calls2-4": lambda: power_table([("", _session("s3", "call2", "call3", "call4"))]),
    "s4-call2": lambda: gate_table([("host Y, both", _summaries(S4 / "call2"))]),
    "s4-gate": lambda: gate_table([
        ("Z/gpu0 (calibrated)", _summaries(S4 / "call3" / "gpu0", S4 / "call4" / "gpu0")),
        ("Z/gpu1 (not calibrated)", _summaries(S4 / "call3" / "gpu1", S4 / "call4" / "gpu1"))]),
    "s4-stored-alone": lambda: stored_alone_table(S4 / "stored_alone.csv"),
    "s5-modes": lambda: s5_modes(S5 / "cases.csv", S5 / "modes_summary.csv"),
    "s5-nightly": lambda: s5_cases(S5 / "cases.csv", "nightly"),
    "s5-eager": lambda: s5_cases(S5 / "cases.csv", "eager"),
    "s5-inductor": lambda: s5_cases(S5 / "cases.csv", "inductor", extra=True),
    "s5-overhead": lambda: csv_table(S5 / "overhead.csv"),
    "s5-sweep": lambda: csv_table(S5 / "sweep_num_stages.csv"),
    "s5-tuning": lambda: csv_table(S5 / "tuning_keys.csv"),
    "s6-checks": lambda: s6_checks([
        ("Q/gpu0+gpu1, live (OR policy)", S6 / "q-live"),
        ("Q/gpu0+gpu1, re-judged (A/B decides), same baseline", S6 / "q-asrun"),
        ("Q/gpu0+gpu1, re-judged (A/B decides), Q left out", S6 / "q-lomo"),
        ("R/gpu1, live (A/B decides)", S6 / "r-live"),
        ("R/gpu1, re-judged, R left out", S6 / "r-lomo"),
        ("P/gpu0 calibration runs, re-judged, P left out", S6 / "p-lomo")]),
    "s6-stored-alone": lambda: s6_stored_alone([
        ("Q (2 GPUs)", S6 / "q-lomo"), ("R (1 GPU)", S6 / "r-lomo"), ("P (1 GPU)", S6 / "p-lomo")]),
    "s6-pytest-benchmark": lambda: s6_pytest_benchmark(S6 / "pytest_benchmark_0p2tflop.csv"),
    "s7-checks": lambda: s6_checks([("T/gpu1 (GPU-29e7fba0), live (A/B decides)",
                                     S7 / "t-live")]),
    "s7-modes": lambda: s7_modes(S5 / "cases.csv", S7 / "cases.csv", S7 / "modes_summary.csv"),
    "s7-pytest-benchmark": lambda: s7_pytest_benchmark([
        ("call 1: host-timed rounds, CUDA graph of ~2e12 FLOP", "pytest_benchmark_2ms_host"),
        ("call 2: device clock, back to back, save compiled as it went",
         "pytest_benchmark_device_clock_duty1"),
        ("call 3: device clock, duty 0.25, warm save", "pytest_benchmark_device_clock_duty025"),
        ("call 4: duty 0.25 + 8 ms idle per call, GPU 0", "pytest_benchmark_spread8ms_gpu0"),
        ("call 4: duty 0.25 + 8 ms idle per call, GPU 1", "pytest_benchmark_spread8ms_gpu1")]),
    "s8-pytest-benchmark": lambda: s7_pytest_benchmark([
        ("call A, GPU 0: device clock, duty 0.25, + 10 ms GPU spin (the new default)",
         "pytest_benchmark_gap10ms"),
        ("call A, GPU 1: the same, figure = Triton time / vendor time",
         "pytest_benchmark_ratio"),
        ("call F, another host: defaults (as GPU 0), no injection",
         "pytest_benchmark_defaults")], S8),
    "s8-modes": lambda: s8_modes(S7 / "cases.csv", S8 / "cases.csv"),
    "s8-tuning": lambda: s8_tuning(S7 / "cases.csv", S8 / "cases.csv"),
    "s8-side": lambda: s8_side(S8 / "cases.csv"),
    "s8-eager": lambda: s5_cases(S8 / "cases.csv", "callC-eager"),
    "s8-overhead": lambda: csv_table(S8 / "overhead_callD.csv"),
    "s9-modes": lambda: s9_modes(S8 / "cases.csv", S9 / "cases.csv", S9 / "modes_summary.csv"),
    "s9-long-tail": lambda: s9_long_tail(S9 / "cases.csv", "callE-"),
    "s9-odd": lambda: s9_odd(S9 / "cases.csv"),
    "s9-losses": lambda: s9_losses(S9 / "cases.csv", "callE-", 0.9),
    "s9-call-f": lambda: s9_call_f(S9 / "cases.csv"),
    "s10-modes": lambda: s10_modes(S9 / "cases.csv", S10 / "cases.csv"),
    "s10-call-e": lambda: s10_call_e(S10 / "cases.csv"),
    "s10-eager": lambda: s5_cases(S10 / "cases.csv", "callE-eager"),
    "s10-eager-calls": lambda: s10_eager_calls(S10 / "cases.csv"),
    "s10-overhead": lambda: csv_table(S10 / "overhead.csv"),
    "s10-long-tail": lambda: s9_long_tail(S10 / "cases.csv", "callD-"),
    "s11-kernel-times": lambda: csv_table(S11 / "kernel_times.csv"),
    "s11-retune": lambda: s5_cases(S11 / "cases.csv", "callA-retune"),
    "s11-modes": lambda: s11_modes(S10 / "cases.csv", S11 / "cases.csv"),
    "s11-longk": lambda: s5_cases(S11 / "cases.csv", "callC-longk", extra=True),
    "s11-call-d": lambda: s11_call_d(S11 / "cases.csv"),
    "s11-inductor": lambda: s11_inductor(S11 / "cases.csv"),
    "s11-inductor-losses": lambda: s11_inductor_losses(S11 / "cases.csv"),
    "s11-eager": lambda: s10_eager_calls(S11 / "cases.csv", ("callC-eager",)),
    "s11-long-tail": lambda: s9_long_tail(S11 / "cases.csv", "callC-", graph_only=True),
    "s12-tiles": lambda: tiles_table(S12 / "tiles.csv"),
    "s12-steps": lambda: csv_table(S12 / "steps.csv"),
    "s12-streamk": lambda: tiles_table(S12 / "tiles_streamk.csv"),
    "s12-modes": lambda: s12_modes(S11 / "cases.csv", S12 / "cases.csv"),
    "s12-call-g": lambda: s12_call_g(S12 / "cases.csv"),
    "s12-inductor": lambda: s12_inductor(S12 / "cases.csv"),
    "s12-long-tail": lambda: s9_long_tail(S12 / "cases.csv", "callE-", graph_only=True),
    "s13-sk-tiles": lambda: tiles_table(S13 / "tiles_sk.csv"),
    "s13-sk-parts": lambda: csv_table(S13 / "sk_parts.csv"),
    "s13-n32": lambda: tiles_table(S13 / "tiles_n32.csv"),
    "s13-steps": lambda: csv_table(S13 / "steps.csv"),
    "s13-long-tail": lambda: s9_long_tail(S13 / "cases.csv", "callC-", graph_only=True),
    "s13-first-call": lambda: csv_table(S13 / "first_call.csv"),
    "s14-eager": lambda: s10_eager_calls(S14 / "cases.csv",
                                         ("callA-eager1", "callA-eager2", "callD-eager")),
    "s14-eager-cases": lambda: s5_cases(S14 / "cases.csv", "callD-eager", extra=True),
    "s14-overhead": lambda: csv_table(S14 / "overhead.csv"),
    "s14-tiles": lambda: tiles_table(S14 / "tiles.csv"),
    "s14-steps": lambda: label_steps(S14 / "cases.csv"),
    "s14-changes": lambda: ab_changes(S14 / "cases.csv", "callC-", 0.95, 1.05),
    "s14-copy-cost": lambda: tiles_table(S14 / "copy_cost.csv"),
    "s14-long-tail": lambda: s9_long_tail(S14 / "cases.csv", "callC-", graph_only=True),
    "s14-inductor": lambda: s12_inductor(S14 / "cases.csv", "callE-ind"),
    "s14-holdout-tiles": lambda: tiles_table(S14 / "tiles_holdout.csv"),
    "s14-changes-g": lambda: ab_changes(S14 / "cases.csv", "callG-", 0.95, 1.05),
    "s14-long-tail-g": lambda: s9_long_tail(S14 / "cases.csv", "callG-", graph_only=True),
    "s15-tiles": lambda: tiles_table(S15 / "tiles.csv"),
    "s15-steps": lambda: label_steps(S15 / "cases.csv"),
    "s15-changes": lambda: ab_changes(S15 / "cases.csv", "callC-", 0.95, 1.05),
    "s15-eager-changes": lambda: ab_changes(S15 / "cases.csv", "callE-", 0.9, 1.2),
    "s15-long-tail": lambda: s9_long_tail(S15 / "cases.csv", "callF-"),
    "s15-below": lambda: ratios_below(S15 / "cases.csv", "callF-", 0.8),
    "s15-overhead": lambda: csv_table(S15 / "overhead.csv"),
    "s15-resplit": lambda: ab_changes(S15 / "cases.csv", "callI-", 0.96, 1.04),
    "s16-inductor": lambda: s12_inductor(S16 / "cases.csv", "callA-ind-nightly"),
    "s16-wide": lambda: best_of_kinds(S16 / "tiles.csv", "tma_wide:"),
    "s16-overhead": lambda: csv_table(S16 / "overhead.csv"),
    "s16-steps": lambda: label_steps(S16 / "cases.csv"),
    "s17-steps": lambda: label_steps(S17 / "cases.csv"),
    "s17-nearest": lambda: ab_changes(S17 / "cases.csv", "callA-nm25", 1.0, 1.0),
    "s17-inductor": lambda: s12_inductor(S17 / "cases.csv", "callA-ind-nm25"),
    "s17-tiles-a": lambda: tiles_table(S17 / "tiles.csv"),
    "s17-kernels": lambda: csv_table(S17 / "kernels.csv"),
    "s17-tiles-b": lambda: tiles_table(S17 / "tiles_b.csv"),
    "s17-unstage": lambda: ab_changes(S17 / "cases.csv", "callD-", 0.97, 1.03),
    "s17-long-tail": lambda: s9_long_tail(S17 / "cases.csv", "callE-longtail"),
    "s17-long-tail-s15": lambda: s9_long_tail(S15 / "cases.csv", "callF-"),
    "s17-decode-bf16": lambda: tiles_table(S17 / "tiles_f.csv", mode="bf16"),
    "s17-decode-fp8": lambda: tiles_table(S17 / "tiles_f.csv", mode="fp8"),
    "s17-far": lambda: ab_changes(S17 / "cases.csv", "callG-", 1.0, 1.0),
    "s17-far-h": lambda: ab_changes(S17 / "cases.csv", "callHab-far", 1.0, 1.0),
    "s17-sets-long-tail": lambda: s9_long_tail(S17 / "cases.csv", "callH-"),
    "s17-below": lambda: ratios_below(S17 / "cases.csv", "callH-", 0.8),
    "s17-inductor-12": lambda: s12_inductor(S17 / "cases.csv", "callI-ind12"),
    "s18-k128": lambda: tiles_table(S18 / "tiles_k128.csv"),
    "s18-k128-inductor": lambda: tiles_table(S18 / "tiles_k128_inductor.csv"),
    "s18-fit-bf16": lambda: tiles_table(S18 / "tiles_fit.csv", mode="bf16"),
    "s18-fit-fp16": lambda: tiles_table(S18 / "tiles_fit.csv", mode="fp16"),
    "s18-fit-fp8": lambda: tiles_table(S18 / "tiles_fit.csv", mode="fp8"),
    "s18-retune": lambda: csv_table(S18 / "retune.csv"),
    "s18-full-retune": lambda: ab_changes(S18 / "cases.csv", "callC-", 0.97, 1.03),
    "s18-kept": lambda: ab_changes(S18 / "cases.csv", "final-", 1.0, 1.0),
    "s18-steps": lambda: label_steps(S18 / "cases.csv"),
    "s18-steps-efg": lambda: label_steps(S18 / "cases_efg.csv"),
    "s18-below": lambda: ratios_below(S18 / "cases.csv", "final-", 0.8),
    "s18-long-tail": lambda: s9_long_tail(S18 / "cases.csv", "final-"),
    "s18-thin": lambda: tiles_table(S18 / "tiles_thin.csv"),
    "s18-thin-retune": lambda: ab_changes(S18 / "cases_efg.csv", "callE-", 0.97, 1.03),
    "s18-final-below": lambda: ratios_below(S18 / "cases_efg.csv", "callF-", 0.8),
    "s18-final-long-tail": lambda: s9_long_tail(S18 / "cases_efg.csv", "callF-"),
    "s18-thin-reps": lambda: ab_changes(S18 / "cases_efg.csv", "callG-", 0.9, 1.1),
    "s18-g-below": lambda: ratios_below(S18 / "cases_efg.csv", "callG-", 0.8),
    "s18-g-long-tail": lambda: s9_long_tail(S18 / "cases_efg.csv", "callG-"),
    "s19-steps": lambda: label_steps(S19 / "cases.csv"),
    "s19-h3-below": lambda: ratios_below(S19 / "cases.csv", "callA-", 0.8),
    "s19-h3-long-tail": lambda: s9_long_tail(S19 / "cases.csv", "callA-"),
    "s19-worst": lambda: pick_vs_best(S19 / "tiles_worst.csv"),
    "s19-thin": lambda: pick_vs_best(S19 / "tiles_thin.csv"),
    "s19-fma-heuristic": lambda: ab_changes(S19 / "cases.csv", "callB-", 0.97, 1.03),
    "s19-tuned": lambda: csv_table(S19 / "tuned.csv"),
    "s19-thin-ab": lambda: ab_changes(S19 / "cases.csv", "callC-thin", 0.97, 1.03, "callC-"),
    "s19-fp32-ab": lambda: ab_changes(S19 / "cases.csv", "callD-fp32-", 0.9, 1.1),
    "s19-retune-fp32": lambda: csv_table(S19 / "retune_fp32.csv"),
    "s19-thin-layouts": lambda: layout_geomeans(S19 / "cases.csv", "callF-thin-layouts"),
    "s20-steps": lambda: label_steps(S20 / "cases.csv"),
    "s20-h4-layouts": lambda: layout_geomeans(S20 / "cases.csv", "callA-holdout4"),
    "s20-h4-below": lambda: ratios_below(S20 / "cases.csv", "callA-", 0.8),
    "s20-tiles-rc": lambda: pick_vs_best(S20 / "tiles_rc.csv"),
    "s20-tuned": lambda: csv_table(S20 / "tuned.csv"),
    "s20-ab": lambda: ab_changes(S20 / "cases.csv", "callC-holdout4", 0.95, 1.05, "callC-"),
    "s20-cr-ab": lambda: ab_changes(S20 / "cases.csv", "callD-", 0.95, 1.05),
    "s20-after-layouts": lambda: layout_geomeans(S20 / "cases.csv", "callC-holdout4"),
    "s20-after-below": lambda: ratios_below(S20 / "cases.csv", "callC-", 0.8),
    "s20-long-tail": lambda: s9_long_tail(S20 / "cases.csv", "callC-holdout4"),
    "s20-fma-layout": lambda: pick_vs_best(S20 / "tiles_fma_layout.csv"),
    "s20-m1-fp32": lambda: pick_vs_best(S20 / "tiles_m1_fp32.csv"),
    "s21-gemv-a": lambda: pick_vs_best(S21 / "tiles_gemv_a.csv"),
    "s21-designs": lambda: design_best(S21 / "gemv_designs.csv"),
    "s21-gemv-c": lambda: pick_vs_best(S21 / "tiles_gemv_c.csv"),
    "s21-wide": lambda: pick_vs_best(S21 / "tiles_wide_decode.csv"),
    "s21-m2": lambda: pick_vs_best(S21 / "tiles_m2.csv"),
    "s21-narrow": lambda: pick_vs_best(S21 / "tiles_narrow.csv"),
    "s21-tuned": lambda: csv_table(S21 / "tuned.csv"),
    "s21-steps": lambda: label_steps(S21 / "cases.csv"),
    "s21-ab": lambda: ab_changes(S21 / "cases.csv", "callF-decode", 0.97, 1.03, "callF-"),
    "s21-ab-g": lambda: ab_changes(S21 / "cases.csv", "callG-", 0.97, 1.03),
    "s21-h5-layouts": lambda: layout_geomeans(S21 / "cases.csv", "callF-holdout5"),
    "s21-h5-below": lambda: ratios_below(S21 / "cases.csv", "callF-holdout5", 0.8),
    "s21-long-tail": lambda: s9_long_tail(S21 / "cases.csv", "callF-holdout5"),
    "s22-fma-a": lambda: best_of_kinds(S22 / "tiles_fma_a.csv", "tma_split:"),
    "s22-fma-b": lambda: best_of_kinds(S22 / "tiles_fma_b.csv", "tma_split:"),
    "s22-fma-b-tma": lambda: best_of_kinds(S22 / "tiles_fma_b.csv", "tma:"),
    "s22-wide-rc": lambda: pick_vs_best(S22 / "tiles_wide_rc.csv"),
    "s22-fp8-cc": lambda: pick_vs_best(S22 / "tiles_fp8_cc.csv"),
    "s23-tuned": lambda: csv_table(S23 / "tuned.csv"),
    "s23-steps": lambda: label_steps(S23 / "cases.csv"),
    "s23-ab-4": lambda: ab_changes(S23 / "cases.csv", "call4-", 0.97, 1.03),
    "s23-below": lambda: ratios_below(S23 / "cases.csv", "call4-", 0.8),
    "s23-worst": lambda: pick_vs_best(S23 / "tiles_worst.csv"),
    "s23-thin": lambda: pick_vs_best(S23 / "tiles_thin_fma.csv"),
    "s24-tuned": lambda: csv_table(S24 / "tuned.csv"),
    "s24-steps": lambda: label_steps(S24 / "cases.csv"),
    "s24-steps-holdouts": lambda: label_steps(S24 / "cases_holdouts.csv"),
    "s24-ab-thin": lambda: ab_changes(S24 / "cases.csv", "call1-", 0.97, 1.03),
    "s24-ab-c": lambda: ab_changes(S24 / "cases.csv", "call2-ab", 0.95, 1.05, "call2-"),
    "s24-ab-5": lambda: ab_changes(S24 / "cases.csv", "call5-", 0.97, 1.03),
    "s24-ab-6": lambda: ab_changes(S24 / "cases.csv", "call6-", 0.97, 1.03),
    "s24-pointer-c": lambda: pick_vs_best(S24 / "tiles_pointer_c.csv"),
    "s24-shortk": lambda: pick_vs_best(S24 / "tiles_shortk.csv"),
    "s24-rc-m4": lambda: _stacked(pick_vs_best(S24 / "tiles_rc.csv"),
                                  pick_vs_best(S24 / "tiles_m4.csv")),
    "s24-below-fp32": lambda: ratios_below(S24 / "cases.csv", "call2-holdout", 0.8, "call2-"),
    "s24-below": lambda: ratios_below(S24 / "cases_holdouts.csv", "call4-", 0.8),
    "s24-final-below": lambda: ratios_below(S24 / "cases_holdouts.csv", "call7-", 0.8),
    "s24-long-tail": lambda: _stacked(s9_long_tail(S24 / "cases_holdouts.csv", "call4-"),
                                      s9_long_tail(S24 / "cases.csv", "call2-holdout")),
    "s25-steps": lambda: label_steps(S25 / "cases.csv"),
    "s25-ab-heuristic": lambda: ab_changes(S25 / "cases.csv", "call1-", 1.0, 1.0),
    "s25-tiles": lambda: pick_vs_best(S25 / "tiles.csv"),
    "s25-kernels": lambda: csv_table(S25 / "kernels.csv"),
    "s25-ncu": lambda: csv_table(S25 / "ncu.csv"),
    "s25-tuned": lambda: tuned_summary(S25 / "tuned.csv"),
    "s25-ab-tf32": lambda: _stacked(
        ab_changes(S25 / "cases.csv", "call2-ab", 0.95, 1.25, "call2-"),
        ab_changes(S25 / "cases.csv", "call3-ab", 0.95, 1.25, "call3-")),
    "s25-ab-fp8-bf16": lambda: _stacked(ab_changes(S25 / "cases.csv", "call4-ab", 0.97, 1.03),
                                        ab_changes(S25 / "cases.csv", "call5-ab", 0.97, 1.03)),
    "s25-below": lambda: ratios_below(S25 / "cases.csv", "call5-holdout", 0.8, "call5-"),
    "s25-long-tail": lambda: _stacked(s9_long_tail(S25 / "cases.csv", "call3-holdout"),
                                      s9_long_tail(S25 / "cases.csv", "call5-holdout")),
    "s26-tuned": lambda: tuned_summary(S26 / "tuned.csv"),
    "s26-ab": lambda: _stacked(ab_changes(S26 / "cases.csv", "call1-ab", 0.95, 1.05, "call1-"),
                               ab_changes(S26 / "cases.csv", "call2-ab", 0.95, 1.05, "call2-"),
                               ab_changes(S26 / "cases.csv", "call4-ab", 0.95, 1.05, "call4-")),
    "s26-steps": lambda: label_steps(S26 / "cases.csv"),
    "s26-below": lambda: _stacked(ratios_below(S26 / "cases.csv", "call3-holdout", 0.8, "call3-"),
                                  ratios_below(S26 / "cases.csv", "call5-holdout", 0.8, "call5-")),
    "s26-long-tail": lambda: _stacked(s9_long_tail(S26 / "cases.csv", "call3-holdout"),
                                      s9_long_tail(S26 / "cases.csv", "call5-holdout")),
}


# --- session 5: the kernel (issue 11) ---------------------------------------------------


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _summary(path: Path) -> dict[tuple[str, str], dict]:
    """A session's modes_summary.csv by (label, mode): `cases`, `geomean`, `ab_geomean`,
    `min_ratio`, `below_080` of per-case rows that left cases.csv (computed from them
    once, with this file's statistics; docs/results/README.md names the commit with them)."""
    return {(r["label"], r["mode"]): r for r in _rows(path)}


def _geomean_cell(source: list[dict] | dict, label: str | None, mode: str) -> str:
    """Geomean Triton/vendor ratio of one label and mode, from cases.csv rows or from a
    `_summary`; "—" where there is none."""
    if isinstance(source, dict):
        s = source.get((label, mode))
        return f"{float(s['geomean']):.3f}" if s else "—"
    rs = _ratios(source, label, mode)
    return f"{geomean([float(r['ratio']) for r in rs]):.3f}" if rs else "—"


def s5_modes(path: Path, summary: Path) -> str:
    """Geomean Triton/vendor ratio per mode and kernel version (labels of cases.csv; calls
    2, 3 and 5 from modes_summary.csv)."""
    rows, summ = _rows(path), _summary(summary)
    labels = (("heuristic", "call 2: dispatch, heuristic tiles", summ),
              ("table1", "call 3: first tuning table", summ),
              ("final", "call 4: final (= baseline, host V)", rows),
              ("check-hostW", "call 5: A/B check, host W", summ))
    out = ["| mode | target | " + " | ".join(t for _, t, _ in labels) +
           " | worst case (final) |", "|---|---:|" + "---:|" * len(labels) + "---|"]
    for mode in ALL_MODES:
        cells = [_geomean_cell(src, lab, mode) for lab, _, src in labels]
        fin = [r for r in rows if r["label"] == "final" and r["mode"] == mode and r["ratio"]]
        worst = min(fin, key=lambda r: float(r["ratio"]))
        cells.append(f"{worst['case']} {float(worst['ratio']):.2f}")
        out.append(f"| {mode} | ≥ {TARGETS[mode]} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def s5_cases(path: Path, label: str, extra: bool = False) -> str:
    """Per case rows of one label of cases.csv."""
    rows = [r for r in _rows(path) if r["label"] == label]
    head = "| mode | case | Triton TFLOP/s | vendor TFLOP/s | ratio |" + \
        (" other providers (their time / Triton's) |" if extra else "") + " tile |"
    out = [head, "|---|---|---:|---:|---:|" + ("---|" if extra else "") + "---|"]
    for r in rows:
        out.append(f"| {r['mode']} | {r['case']} | {r['triton_tflops']} | {r['vendor_tflops']} "
                   f"| {float(r['ratio']):.3f} |" + (f" {r['extra']} |" if extra else "") +
                   f" {r['tile']} |")
    geo = geomean([float(r["ratio"]) for r in rows if r["ratio"]])
    return "\n".join(out) + f"\n\ngeomean ratio {geo:.3f} over {len(rows)} cases"


# --- session 6: the gate across hosts (issue 10), pytest-benchmark (issue 12) ---------


def s6_checks(groups: list[tuple[str, Path]]) -> str:
    """Per group and injected level, from checks_summary.csv: checks, checks red, case
    checks, and each judgement's flags (gate, stored alone, A/B alone)."""
    out = ["| checks | injected | checks | red | case checks | gate regressed | gate improved "
           "| stored alone: regressed / improved | A/B alone: regressed / improved |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for label, d in groups:
        by: dict[float, list[dict]] = {}
        for r in _rows(d / "checks_summary.csv"):
            by.setdefault(float(r["injected"] or 0), []).append(r)
        for level, rs in sorted(by.items()):
            tot = {c: sum(int(r.get(c) or 0) for r in rs) for c in CHECK_SUMMARY[4:]}
            n = tot["cases"]
            out.append(f"| {label} | {level:.0%} | {len(rs)} | "
                       f"{sum(r['rc'] == '1' for r in rs)} | {n} | {tot['regressed']} | "
                       f"{tot['improved']} ({tot['improved'] / n:.1%}) | "
                       f"{tot['stored_regressed']} / {tot['stored_improved']} | "
                       f"{tot['ab_regressed']} / {tot['ab_improved']} |")
    return "\n".join(out)


def s6_stored_alone(groups: list[tuple[str, Path]]) -> str:
    """The stored judgement alone (no A/B) on a host left out of the baseline, by mode:
    false alarms at 0% (regressed + improved), flagged fraction at each injected level,
    and the smallest level flagged in >= 95% of case checks."""
    out = ["| host left out | injected | " + " | ".join(ALL_MODES) + " | all |",
           "|---|---|" + "---:|" * (len(ALL_MODES) + 1)]
    smallest: dict[str, dict[float, list[int]]] = {m: {} for m in ALL_MODES}
    for label, d in groups:
        by: dict[tuple, list[int]] = {}
        for r in _rows(d / "cases_summary.csv"):
            level = float(r["injected"] or 0)
            hit = int(r["stored_regressed"]) + (int(r["stored_improved"]) if level == 0 else 0)
            for key in ((level, r["mode"]), (level, "all")):
                n_k = by.setdefault(key, [0, 0])
                n_k[0] += int(r["checks"])
                n_k[1] += hit
            if level > 0:
                acc = smallest[r["mode"]].setdefault(level, [0, 0])
                acc[0] += int(r["checks"])
                acc[1] += int(r["stored_regressed"])
        for level in sorted({lv for lv, _ in by}):
            cells = []
            for mode in ALL_MODES + ("all",):
                n, k = by.get((level, mode), (0, 0))
                cells.append(f"{k}/{n} ({k / n:.1%})" if n else "—")
            what = f"{level:.0%}" + (" (A/A: false alarms)" if level == 0 else "")
            out.append(f"| {label} | {what} | " + " | ".join(cells) + " |")
    cells = []
    for mode in ALL_MODES:
        ok = [lv for lv, (n, k) in sorted(smallest[mode].items()) if n and k / n >= 0.95]
        cells.append(f"{ok[0]:.0%}" if ok else f"> {max(smallest[mode]):.0%}"
                     if smallest[mode] else "—")
    out.append("| smallest caught in ≥ 95% | | " + " | ".join(cells) + " | |")
    return "\n".join(out)


def s6_pytest_benchmark(path: Path) -> str:
    """Two unchanged compares and one with 10% injected, against the saved run: cases
    beyond 5%, median and extreme change; per call against gemmgate's device median."""
    rows = _rows(path)
    out = ["| run | cases | beyond +5% (fails) | median change | largest change "
           "| smallest change |", "|---|---:|---:|---:|---:|---:|"]
    for run in ("compare1", "compare2", "inject"):
        xs = sorted(float(r[f"{run}_change"]) for r in rows if r[f"{run}_change"])
        out.append(f"| {run} | {len(xs)} | {sum(x > 0.05 for x in xs)} | {median(xs):+.2%} | "
                   f"{max(xs):+.2%} | {min(xs):+.2%} |")
    agree = sorted(float(r["per_call_over_gemmgate"]) for r in rows)
    one = [float(r["per_call_over_gemmgate"]) for r in rows if r["launches"] == "1"]
    out.append(f"\nper call / gemmgate's device median: all {len(agree)} cases "
               f"{agree[0]:.2f}–{agree[-1]:.2f}; the {len(one)} cases of one call per round "
               f"{min(one):.3f}–{max(one):.3f}")
    return "\n".join(out)


# --- session 7: amortized operand copies (issue 11), pytest-benchmark timing (issue 12) --


def _ab(extra: str) -> float | None:
    got = dict(x.split(":", 1) for x in extra.split()) if extra else {}
    return float(got["ab"]) if "ab" in got else None


def s7_modes(s5: Path, s7: Path, summary: Path) -> str:
    """Geomean Triton/cuBLAS per mode and set: session 5's kernel, call 2 (IEEE fp32
    row-major B; modes_summary.csv), call 3 (+ operand copies kept across calls); the A/B
    geomean of call 3 against session 5's kernel timed in the same process; worst case
    and cases < 0.80."""
    old, new = _rows(s5), _rows(s7)
    return modes_table(
        ["session 5 kernel", "call 2", "call 3", "A/B call 3 / f497b15",
         "worst case (call 3)", "cases < 0.80 (call 3)"],
        [(old, {"pr": "final"}),
         (_summary(summary), {s: f"call2-{s}" for s in ("pr", "nightly")})],
        (new, {s: f"call3-{s}" for s in ("pr", "nightly")}))


def s7_pytest_benchmark(runs: list[tuple[str, str]], where: Path = S7) -> str:
    """Per timing design: cases beyond +5% in each unchanged compare (what
    --benchmark-compare-fail=median:5% fails on), the largest change, and the 10%
    injection's catch."""
    out = ["| timing of a round | compare 1: beyond +5% | compare 2: beyond +5% "
           "| largest unchanged change | 10% injected: caught |",
           "|---|---:|---:|---:|---:|"]
    for label, name in runs:
        rows = _rows(where / f"{name}.csv")
        cells, worst = [], 0.0
        for run in ("compare1", "compare2", "inject"):
            xs = [float(r[f"{run}_change"]) for r in rows if r.get(f"{run}_change")]
            if not xs:
                cells.append("—")
                continue
            if run != "inject":
                worst = max(worst, max(xs), -min(xs))
            cells.append(f"{sum(x > 0.05 for x in xs)} of {len(xs)}")
        out.append(f"| {label} | {cells[0]} | {cells[1]} | {worst:.1%} | {cells[2]} |")
    return "\n".join(out)


def _ratios(rows: list[dict], label: str | None, mode: str) -> list[dict]:
    return [r for r in rows if r["label"] == label and r["mode"] == mode and r["ratio"]]


def modes_table(heads: list[str], earlier: list[tuple[list[dict] | dict, dict[str, str]]],
                final: tuple[list[dict], dict[str, str]]) -> str:
    """Geomean Triton/cuBLAS per set and mode: one column per (rows or `_summary`, label
    per set) of `earlier` ("—" where a set has no label), then `final` in bold, its A/B
    geomean, worst case and cases below 0.80. `heads` names the columns after "target"."""
    out = ["| set | mode | target | " + " | ".join(heads) + " |",
           "|---|---|---:|" + "---:|" * (len(earlier) + 2) + "---|---:|"]
    rows, labels = final
    for shapes, label in labels.items():
        for mode in ALL_MODES:
            fin = _ratios(rows, label, mode)
            if not fin:
                continue
            worst = min(fin, key=lambda r: float(r["ratio"]))
            abs_ = [a for a in (_ab(r["extra"]) for r in fin) if a]
            cells = [_geomean_cell(src, by.get(shapes), mode) for src, by in earlier]
            cells += [f"**{geomean([float(r['ratio']) for r in fin]):.3f}**",
                      f"{geomean(abs_):.3f}" if abs_ else "—",
                      f"{worst['case']} {float(worst['ratio']):.2f}",
                      f"{sum(float(r['ratio']) < 0.8 for r in fin)} of {len(fin)}"]
            out.append(f"| {shapes} | {mode} | ≥ {TARGETS[mode]} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def s8_modes(s7: Path, s8: Path) -> str:
    """Geomean Triton/cuBLAS per mode and set: session 7 (call 3), session 8 after the
    16-bit/small-key retune (call C) and after the fp32 retune (call D, nightly: call E);
    the A/B geomean of the last against e609e40 (session 7's table) in the same process;
    worst case and cases < 0.80."""
    old, new = _rows(s7), _rows(s8)
    return modes_table(
        ["session 7", "call C", "call D / E", "A/B vs e609e40", "worst case", "cases < 0.80"],
        [(old, {"pr": "call3-pr", "nightly": "call3-nightly"}), (new, {"pr": "callC-pr"})],
        (new, {"pr": "callD-pr", "nightly": "callE-nightly"}))


def _reference_rows(rows: list[dict]) -> list[dict]:
    """The A/B reference's own rows: its ratio to the vendor is Triton's ratio / ab."""
    return [{**r, "ratio": f"{float(r['ratio']) / a:.4f}"} for r in rows
            if r["ratio"] and (a := _ab(r["extra"]))]


def s9_modes(s8: Path, s9: Path, summary: Path) -> str:
    """Geomean Triton/cuBLAS per set and mode: session 8 (calls D/E, another host); the
    session's start (76a2142, timed as the A/B reference in call E's process); calls A
    (holdout only), B, C, D (modes_summary.csv); call E in bold, its A/B geomean against
    76a2142, worst case, cases < 0.80."""
    old, new, summ = _rows(s8), _rows(s9), _summary(summary)
    sets = ("pr", "nightly", "holdout")
    ref = _reference_rows([r for r in new if r["label"].startswith("callE-")])
    return modes_table(
        ["session 8", "session start (A/B ref.)", "call A", "call B", "call C", "call D",
         "call E", "A/B vs 76a2142", "worst case", "cases < 0.80"],
        [(old, {"pr": "callD-pr", "nightly": "callE-nightly"}),
         (ref, {s: f"callE-{s}" for s in sets}),
         (summ, {"holdout": "callA-holdout"}),
         *((summ, {s: f"call{c}-{s}" for s in sets}) for c in "BCD")],
        (new, {s: f"callE-{s}" for s in sets}))


def s9_call_f(path: Path) -> str:
    """tf32 and fp8 after B is copied K-major from M >= 64 (call F), beside call E; the
    A/B is against 5419b01, the commit before the change."""
    rows = _rows(path)
    sets = ("pr", "nightly", "holdout")
    return modes_table(["call E", "call F", "A/B vs 5419b01", "worst case", "cases < 0.80"],
                       [(rows, {s: f"callE-{s}" for s in sets})],
                       (rows, {s: f"callF-{s}" for s in sets}))


def s10_modes(s9: Path, s10: Path) -> str:
    """Geomean Triton/cuBLAS per set and mode: session 9's closing figures (call E; tf32
    and fp8 call F); the table before the retune (c1d97ba, timed as the A/B reference in
    call D's process); call D with the retuned table in bold, its A/B geomean against
    c1d97ba, worst case, cases < 0.80."""
    old, new = _rows(s9), _rows(s10)
    sets = ("pr", "nightly", "holdout")
    ref = _reference_rows([r for r in new if r["label"].startswith("callD-")])
    return modes_table(
        ["session 9 call E", "session 9 call F", "before the retune (A/B ref.)", "call D",
         "A/B vs c1d97ba", "worst case", "cases < 0.80"],
        [(old, {s: f"callE-{s}" for s in sets}), (old, {s: f"callF-{s}" for s in sets}),
         (ref, {s: f"callD-{s}" for s in sets})],
        (new, {s: f"callD-{s}" for s in sets}))


def s10_call_e(path: Path) -> str:
    """Call E, another host: the session's final kernel and table (50465cb, timed as the
    A/B reference) beside the fit_k rule (reverted after this call) in bold, its A/B
    geomean against 50465cb, worst case, cases < 0.80."""
    rows = _rows(path)
    sets = ("pr", "nightly", "holdout")
    ref = _reference_rows([r for r in rows if r["label"].startswith("callE-")])
    return modes_table(["final: 50465cb (A/B ref.)", "fit_k", "A/B vs 50465cb", "worst case",
                        "cases < 0.80"],
                       [(ref, {s: f"callE-{s}" for s in sets})],
                       (rows, {s: f"callE-{s}" for s in sets}))


def s10_eager_calls(path: Path,
                    calls: tuple[str, ...] = ("callA-eager", "callB-eager", "callE-eager")
                    ) -> str:
    """Eager timing, `pr`: geomean Triton/cuBLAS per call and mode, beside the session's
    start (timed as the A/B reference in the same processes)."""
    rows = _rows(path)
    out = ["| call | mode | session start (A/B ref.) | this session | A/B |",
           "|---|---|---:|---:|---:|"]
    for call in calls:
        for mode in ALL_MODES:
            rs = _ratios(rows, call, mode)
            if not rs:
                continue
            ab = [_ab(r["extra"]) for r in rs]
            now = geomean([float(r["ratio"]) for r in rs])
            out.append(f"| {call.removesuffix('-eager')} | {mode} | {now / geomean(ab):.3f} | "
                       f"**{now:.3f}** | {geomean(ab):.3f} |")
    return "\n".join(out)


def s11_modes(s10: Path, s11: Path) -> str:
    """Geomean Triton/cuBLAS per set and mode: session 10's closing figures (call E); the
    session's start (66da261, timed as the A/B reference in call C's process); call C in
    bold (tma_split, retuned table, the staged-C copy kernel, fp8's output in the
    vendor's layout), its A/B geomean against 66da261, worst case, cases < 0.80."""
    old, new = _rows(s10), _rows(s11)
    sets = ("pr", "nightly", "holdout", "longk")
    ref = _reference_rows([r for r in new if r["label"].startswith("callC-")])
    return modes_table(
        ["session 10 call E", "session start (A/B ref.)", "call C", "A/B vs 66da261",
         "worst case", "cases < 0.80"],
        [(old, {s: f"callE-{s}" for s in sets}), (ref, {s: f"callC-{s}" for s in sets})],
        (new, {s: f"callC-{s}" for s in sets}))


def s11_call_d(path: Path) -> str:
    """Call D, another host: nightly with the BLOCK_K = 128 tiles retuned into the mid-K
    representatives, against the table before them (timed as the A/B reference)."""
    rows = _rows(path)
    ref = _reference_rows([r for r in rows if r["label"] == "callD-nightly"])
    return modes_table(["call C", "before (A/B ref.)", "call D", "A/B", "worst case",
                        "cases < 0.80"],
                       [(rows, {"nightly": "callC-nightly"}), (ref, {"nightly": "callD-nightly"})],
                       (rows, {"nightly": "callD-nightly"}))


_S12_SETS = {"pr": "callE-pr", "nightly": "callE-nightly", "holdout": "callE-holdout",
             "holdout2": "callE-holdout2", "longk": "callF-longk"}


def s12_modes(s11: Path, s12: Path) -> str:
    """Geomean Triton/cuBLAS per set and mode: session 11's closing figures (call C); the
    session's start (cb6bcf8, timed as the A/B reference in calls E and F); calls E and F
    in bold (retuned table, the transfer lookup, one-wave TMA split-K), their A/B geomean
    against cb6bcf8, worst case, cases < 0.80."""
    old, new = _rows(s11), _rows(s12)
    ref = _reference_rows([r for r in new if r["label"] in _S12_SETS.values()])
    return modes_table(
        ["session 11 call C", "session start (A/B ref.)", "calls E, F", "A/B vs cb6bcf8",
         "worst case", "cases < 0.80"],
        [(old, {s: f"callC-{s}" for s in ("pr", "nightly", "holdout", "longk")}),
         (ref, _S12_SETS)], (new, _S12_SETS))


def s12_call_g(path: Path) -> str:
    """Call G, another host: the tune set retuned (bf16, fp16) with the BLOCK_K = 128
    tiles earlier in the search, against call E's table (timed as the A/B reference)."""
    rows = _rows(path)
    sets = ("nightly", "holdout", "holdout2")
    ref = _reference_rows([r for r in rows if r["label"].startswith("callG-")])
    return modes_table(["call E", "before (A/B ref.)", "call G", "A/B", "worst case",
                        "cases < 0.80"],
                       [(rows, {s: f"callE-{s}" for s in sets}),
                        (ref, {s: f"callG-{s}" for s in sets})],
                       (rows, {s: f"callG-{s}" for s in sets}))


def tiles_table(path: Path, flush: str = "1", mode: str = "") -> str:
    """scripts/device/tiles.py's rows with the L2 flushed (as every run times), per shape
    fastest first: microseconds, TFLOP/s, speed ratio to cuBLAS (one mode's, if given)."""
    rows = [r for r in _rows(path) if r["flush"] == flush and mode in ("", r["mode"])]
    rows.sort(key=lambda r: (r["shape"], float(r["us"])))
    return "\n".join(["| shape | provider / tile | us | TFLOP/s | ratio |",
                      "|---|---|---:|---:|---:|"] +
                     [f"| {r['shape']} | {r['provider']} | {r['us']} | {r['tflops']} | "
                      f"{r['ratio']} |" for r in rows])


def _tiles_by_case(path: Path) -> dict[tuple[str, str], tuple[dict | None, list[dict]]]:
    """A tiles.py CSV's rows with the L2 flushed, per (shape, mode): the library's pick
    (None where it was not timed) and the named tiles."""
    by: dict[tuple[str, str], list[dict]] = {}
    for r in _rows(path):
        if r["flush"] == "1":
            by.setdefault((r["shape"], r["mode"]), []).append(r)
    return {k: (next((r for r in rs if r["provider"].startswith("pick")), None),
                [r for r in rs if ":" in r["provider"] and not r["provider"].startswith("pick")])
            for k, rs in by.items()}


def pick_vs_best(path: Path) -> str:
    """Per shape and mode of a tiles.py CSV (L2 flushed): the library's pick and the
    fastest named tile, each with its speed ratio to cuBLAS, and how much faster the
    best is than the pick."""
    out = ["| shape | mode | pick | ratio | best named tile | ratio | best / pick |",
           "|---|---|---|---:|---|---:|---:|"]
    for (shape, mode), (pick, named) in _tiles_by_case(path).items():
        if not (pick and named):
            continue
        best = min(named, key=lambda r: float(r["us"]))
        out.append(f"| {shape} | {mode} | {pick['provider'].removeprefix('pick ')} | "
                   f"{pick['ratio']} | {best['provider']} | {best['ratio']} | "
                   f"{float(pick['us']) / float(best['us']):.3f} |")
    return "\n".join(out)


def layout_geomeans(path: Path, label: str) -> str:
    """Per mode and operand layout (a case id's -rc, -cr, -cc; rr where none): cases,
    geomean Triton/cuBLAS, the worst case."""
    by: dict[tuple[str, str], list[dict]] = {}
    for r in _rows(path):
        if r["label"] == label and r["ratio"]:
            got = re.search(r"-(rr|rc|cr|cc)\b", r["case"])
            by.setdefault((r["mode"], got.group(1) if got else "rr"), []).append(r)
    out = ["| mode | layout | cases | geomean | worst |", "|---|---|---:|---:|---|"]
    for (mode, lay), rs in by.items():
        worst = min(rs, key=lambda r: float(r["ratio"]))
        out.append(f"| {mode} | {lay} | {len(rs)} | "
                   f"{geomean([float(r['ratio']) for r in rs]):.3f} | {worst['case']} "
                   f"{float(worst['ratio']):.2f} ({worst['tile']}) |")
    return "\n".join(out)


def best_of_kinds(path: Path, kind: str) -> str:
    """Per shape and mode of a tiles.py CSV (L2 flushed): the fastest named tile of `kind`
    (a provider prefix) against the fastest other named tile, and the table's pick."""
    out = [f"| shape | mode | pick ratio | best other tile | ratio | best {kind.rstrip(':')} | "
           "ratio | its speed / other's |", "|---|---|---:|---|---:|---|---:|---:|"]
    for (shape, mode), (pick, named) in _tiles_by_case(path).items():
        mine = [r for r in named if r["provider"].startswith(kind)]
        other = [r for r in named if not r["provider"].startswith(kind)]
        if not (mine and other and pick):
            continue
        m = min(mine, key=lambda r: float(r["us"]))
        o = min(other, key=lambda r: float(r["us"]))
        out.append(f"| {shape} | {mode} | {pick['ratio']} | {o['provider']} | {o['ratio']} | "
                   f"{m['provider']} | {m['ratio']} | {float(o['us']) / float(m['us']):.3f} |")
    return "\n".join(out)


def s12_inductor(path: Path, label: str = "callF-ind-losses") -> str:
    """Session 11's nine nightly shapes where inductor was faster, bf16, again (session
    12's call F; session 14's call E, with 1000^3)."""
    rows = [r for r in _rows(path) if r["label"] == label]
    out = ["| case | Triton/cuBLAS | inductor/Triton time | tile |", "|---|---:|---:|---|"]
    for r in sorted(rows, key=_vs_inductor):
        out.append(f"| {r['case']} | {float(r['ratio']):.3f} | {_vs_inductor(r):.3f} | "
                   f"{r['tile']} |")
    return "\n".join(out)


def design_best(path: Path) -> str:
    """Per call, dtype, M = 1 shape and L2 flush of a gemv design CSV (session 21): cuBLAS's
    time and the fastest design of each kind (pointer loads without and with B's
    evict-first hint, descriptor loads), with its speed ratio to cuBLAS."""
    by: dict[tuple, list[dict]] = {}
    for r in _rows(path):
        by.setdefault((r["call"], r["dtype"], r["shape"], r["flush"]), []).append(r)
    kinds = (("pointer", lambda d: d.startswith("ptr") and "cg0 ef0" in d or
              d.startswith("ptr") and d.endswith("u1 cg0")),
             ("pointer, evict-first", lambda d: d.startswith("ptr") and d.endswith("ef1")),
             ("descriptor", lambda d: d.startswith("tma")))
    out = ["| call | dtype | shape | L2 flushed | cuBLAS us | " +
           " | ".join(k for k, _ in kinds) + " |", "|---|---|---|---|---:|" + "---|" * 3]
    for (call, dtype, shape, flush), rs in by.items():
        vendor = next(r for r in rs if r["design"] == "vendor")
        cells = []
        for _, match in kinds:
            got = [r for r in rs if match(r["design"])]
            best = min(got, key=lambda r: float(r["us"])) if got else None
            cells.append(f"{best['design']}: {best['us']} us, {float(best['ratio']):.2f}"
                         if best else "-")
        out.append(f"| {call} | {dtype} | {shape} | {'yes' if flush == '1' else 'no'} | "
                   f"{vendor['us']} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def label_steps(path: Path) -> str:
    """Per label (in file order) and mode: cases, geomean Triton/cuBLAS, A/B geomean
    (where the label has an A/B reference), worst ratio, cases below 0.80."""
    rows = _rows(path)
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


def _vs_inductor(r: dict) -> float | None:
    """Inductor's time / Triton's from a row's `extra` (> 1: Triton is faster)."""
    m = re.search(r"inductor:([\d.]+)", r["extra"])
    return float(m.group(1)) if m else None


_INDUCTOR = (("nightly (calls A and B)", ("callA-ind-nightly", "callB-ind-nightly")),
             ("long-K, session start kernel (call A)", ("callA-ind-longk",)),
             ("long-K, tma_split (call B)", ("callB-ind-longk",)))


def s11_inductor(path: Path) -> str:
    """bf16 against torch.compile (max-autotune, Triton templates) in the same process:
    per group of labels, cases, geomean inductor/Triton time, cases Triton is slower."""
    rows = _rows(path)
    out = ["| shapes | cases | geomean Triton/cuBLAS | geomean vs inductor | slower than "
           "inductor | worst |", "|---|---:|---:|---:|---:|---|"]
    for name, labels in _INDUCTOR:
        rs = [r for r in rows if r["label"] in labels and _vs_inductor(r)]
        v = [_vs_inductor(r) for r in rs]
        worst = min(rs, key=_vs_inductor)
        out.append(f"| {name} | {len(rs)} | {geomean([float(r['ratio']) for r in rs]):.3f} | "
                   f"{geomean(v):.3f} | {sum(x < 1 for x in v)} | {worst['case']} "
                   f"{_vs_inductor(worst):.2f} |")
    return "\n".join(out)


def s11_inductor_losses(path: Path) -> str:
    """The nightly cases where inductor's Triton is faster than ours (bf16)."""
    rows = [r for r in _rows(path) if r["label"] in _INDUCTOR[0][1]
            and (_vs_inductor(r) or 1) < 1]
    out = ["| label | case | Triton/cuBLAS | inductor/Triton time | tile |",
           "|---|---|---:|---:|---|"]
    for r in sorted(rows, key=_vs_inductor):
        out.append(f"| {r['label']} | {r['case']} | {float(r['ratio']):.3f} | "
                   f"{_vs_inductor(r):.3f} | {r['tile']} |")
    return "\n".join(out)


def _long_tail(case: str) -> bool:
    """A case whose M, N, K or leading dimension is not a multiple of 16 (issue 11)."""
    dims = [int(x) for x in re.findall(r"[mnk](\d+)", case)]   # layouts hold no m, n, k
    pad = re.search(r"\+p(\d+)", case)
    return any(d % 16 for d in dims) or (pad is not None and int(pad.group(1)) % 16 != 0)


def s9_long_tail(path: Path, prefix: str, graph_only: bool = False) -> str:
    """Issue 11's long tail (M, N, K or leading dimension not a multiple of 16), over
    every set of the labels with `prefix` (`graph_only`: not the eager labels): per
    mode, how many cases reach 1.2x cuBLAS."""
    rows = [r for r in _rows(path) if r["label"].startswith(prefix) and r["ratio"]
            and _long_tail(r["case"]) and not (graph_only and r["label"].endswith("-eager"))]
    out = ["| mode | long-tail cases | geomean | ≥ 1.2x | < 0.80 | worst |",
           "|---|---:|---:|---:|---:|---|"]
    for mode in ALL_MODES:
        rs = [r for r in rows if r["mode"] == mode]
        if not rs:
            continue
        xs = [float(r["ratio"]) for r in rs]
        worst = min(rs, key=lambda r: float(r["ratio"]))
        out.append(f"| {mode} | {len(rs)} | {geomean(xs):.3f} | {sum(x >= 1.2 for x in xs)} "
                   f"| {sum(x < 0.8 for x in xs)} | {worst['case']} {float(worst['ratio']):.2f} |")
    return "\n".join(out)


def s9_odd(path: Path) -> str:
    """Which odd dimension costs speed: the probe of calls C (C stored by masked pointer
    stores) and D (C staged in an aligned buffer), Triton TFLOP/s and ratio."""
    rows = _rows(path)
    before = {(r["mode"], r["case"]): r for r in rows if r["label"] == "callC-odd"}
    out = ["| mode | case | call C TFLOP/s | ratio | call D TFLOP/s | ratio |",
           "|---|---|---:|---:|---:|---:|"]
    for r in (r for r in rows if r["label"] == "callD-odd"):
        b = before.get((r["mode"], r["case"]))
        cells = [b["triton_tflops"], f"{float(b['ratio']):.2f}"] if b else ["—", "—"]
        out.append(f"| {r['mode']} | {r['case']} | {' | '.join(cells)} | {r['triton_tflops']} "
                   f"| {float(r['ratio']):.2f} |")
    return "\n".join(out)


def s9_losses(path: Path, prefix: str, below: float) -> str:
    """The cases the session made slower: A/B against the session's start below `below`
    in the labels with `prefix` (same process, same inputs)."""
    rows = [r for r in _rows(path) if r["label"].startswith(prefix)
            and (_ab(r["extra"]) or 1) < below]
    out = ["| set | mode | case | ratio | A/B vs 76a2142 | tile |", "|---|---|---|---:|---:|---|"]
    for r in sorted(rows, key=lambda r: _ab(r["extra"])):
        out.append(f"| {r['label'].split('-', 1)[1]} | {r['mode']} | {r['case']} "
                   f"| {float(r['ratio']):.2f} | {_ab(r['extra']):.2f} | {r['tile']} |")
    return "\n".join(out)


def ratios_below(path: Path, prefix: str, under: float, strip: str | None = None) -> str:
    """The cases of the labels with `prefix` that ran below `under` of cuBLAS, slowest
    first (issue 11: no case below 0.80); the set column is the label less `strip`
    (default: the prefix)."""
    rows = [r for r in _rows(path) if r["label"].startswith(prefix) and r["ratio"]
            and float(r["ratio"]) < under]
    out = ["| set | mode | case | ratio | tile |", "|---|---|---|---:|---|"]
    for r in sorted(rows, key=lambda r: float(r["ratio"])):
        out.append(f"| {r['label'].removeprefix(prefix if strip is None else strip)} | "
                   f"{r['mode']} | {r['case']} | {float(r['ratio']):.2f} | {r['tile']} |")
    return "\n".join(out)


def s8_tuning(s7: Path, s8: Path) -> str:
    """The retuned keys: session 7's tile and ratio on `pr` (call 3), the tuner's pick
    (best of the configs it timed, ratio at tuning time) and the ratio in call D's run."""
    before = {(r["mode"], r["case"]): r for r in _rows(s7) if r["label"] == "call3-pr"}
    rows = _rows(s8)
    after = {(r["mode"], r["case"]): r for r in rows if r["label"] == "callD-pr"}
    out = ["| mode | case | session 7 tile | ratio | retuned tile | ratio (tuning) "
           "| ratio (call D) |", "|---|---|---|---:|---|---:|---:|"]
    for r in rows:
        if not r["label"].startswith("tune-"):
            continue
        k = (r["mode"], r["case"])
        b, a = before.get(k), after.get(k)
        cells = [b["tile"] if b else "—", f"{float(b['ratio']):.3f}" if b else "—",
                 r["tile"] or "—",
                 f"{float(r['ratio']):.3f}" if r["ratio"] else f"— ({r['accuracy']})",
                 f"{float(a['ratio']):.3f}" if a and a["ratio"] else "—"]
        out.append(f"| {k[0]} | {k[1]} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def s8_side(path: Path) -> str:
    """bf16, one process, interleaved: this kernel against cuBLAS and public Triton GEMMs
    (each figure: their time / this kernel's; > 1, this kernel is faster)."""
    rows = [r for r in _rows(path) if r["label"] == "callD-side"]
    names = [x.rsplit(":", 1)[0] for x in rows[0]["extra"].split()]
    out = ["| case | Triton TFLOP/s | Triton/cuBLAS | " + " | ".join(n.split(":")[1] for n in names)
           + " | tile |", "|---|---:|---:|" + "---:|" * len(names) + "---|"]
    for r in rows:
        got = dict(x.rsplit(":", 1) for x in r["extra"].split())
        out.append(f"| {r['case']} | {r['triton_tflops']} | {float(r['ratio']):.3f} | "
                   + " | ".join(f"{float(got[n]):.2f}" for n in names) + f" | {r['tile']} |")
    return "\n".join(out)


def tuned_summary(path: Path) -> str:
    """A tune call's entries (a session's tuned.csv) per call and mode: keys written, new
    keys, retuned keys whose tile changed, searches the budget cut short, entries kept."""
    by: dict[tuple[str, str], list[dict]] = {}
    for r in _rows(path):
        by.setdefault((r["call"], r["mode"]), []).append(r)
    out = ["| call | mode | keys | new | tile changed | cut short | kept |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for (call, mode), rs in by.items():
        cut = sum(int(a) < int(b) for a, _, b in (r["tried"].partition("/") for r in rs) if b)
        out.append(f"| {call} | {mode} | {len(rs)} | {sum(not r['before'] for r in rs)} | "
                   f"{sum(bool(r['before']) and r['before'] != r['after'] for r in rs)} | "
                   f"{cut} | {sum(r['kept'] == 'yes' for r in rs)} |")
    return "\n".join(out)


def _stacked(first: str, *more: str) -> str:
    """Markdown tables of one header as one table: `first`, then the rows of each of
    `more` (their header and rule lines dropped)."""
    return "\n".join([first, *(line for t in more for line in t.split("\n")[2:])])


def csv_table(path: Path) -> str:
    """A small CSV as a Markdown table, as measured."""
    rows = _rows(path)
    cols = list(rows[0])
    return "\n".join(["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)] +
                      ["| " + " | ".join(r[c] for c in cols) + " |" for r in rows])


def _block(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- perf_tables:{re.escape(name)} -->\n)(.*?)"
                      rf"(<!-- /perf_tables:{re.escape(name)} -->)", re.S)


def render(text: str) -> tuple[str, list[str]]:
    """PERF.md's text with every table regenerated, and the names of those that changed."""
    changed = []
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
