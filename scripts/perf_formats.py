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
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))   # `accum_model` reads with its sibling's reader

from gemmgate.stats import geomean  # noqa: E402
from gemmgate.trials import power  # noqa: E402
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


def _level(level: float) -> str:
    """An injected slowdown as a percentage, as `gemmgate trials` prints it ('0.5%': as
    whole percents, 0.5% read "0%", under the A/A row, and 1.5% and 2.5% both "2%")."""
    return f"{level * 100:g}%"


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
            what = _level(level) + (" (A/A: false alarms)" if level == 0 else "")
            out.append((f"| {name} " if label else "") +
                       f"| {what} | {p['checks']} | {p['judged']} | {p['regressed']} | {frac} |")
    return "\n".join(out)


def wrong_cases(rows: list[dict]) -> str:
    """The false alarms (0%) and misses (> 0%) of `power`, one case per line."""
    out = []
    for level, p in power(rows).items():
        if p["wrong"]:
            out.append(f"\n{'false alarms' if level == 0 else 'missed'} at {_level(level)}:")
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


def _extras(extra: str) -> dict[str, float]:
    """A cases.csv row's `extra` column (`ab:1.0500 inductor:0.9800`) by key; a
    `module:function` provider's key holds a colon: the figure is after the last."""
    return {k: float(v) for k, v in (x.rsplit(":", 1) for x in extra.split())}


def _extra(extra: str, key: str) -> float | None:
    """A figure of a cases.csv row's `extra` column (`_extras`), or None."""
    return _extras(extra).get(key)


def _ab(extra: str) -> float | None:
    return _extra(extra, "ab")


def _ratios(rows: list[dict], label: str | None, mode: str) -> list[dict]:
    return [r for r in rows if r["label"] == label and r["mode"] == mode and r["ratio"]]


Cell = tuple[Path, str]   # a cases.csv and the label of one run of a set


def targets_table(rows: dict[str, dict[str, Cell]], lowest: bool = False) -> str:
    """Where issue 11's graph-timed targets stand: per set (`rows`) and mode, the geomean
    Triton/cuBLAS of that set's run named for the cell (each from the latest run of that
    mode on that set, which may be another session's); the target first. `lowest`: each
    cell also gives its lowest case (the target: none below 0.80)."""
    modes = [m for m in ALL_MODES if any(m in cells for cells in rows.values())]
    out = ["| set | " + " | ".join(modes) + " |", "|---|" + "---:|" * len(modes),
           "| target | " + " | ".join(f"≥ {TARGETS[m]:.2f}" for m in modes) + " |"]
    for name, cells in rows.items():
        got = []
        for m in modes:
            xs = [float(r["ratio"]) for r in _ratios(_rows(cells[m][0]), cells[m][1], m)] \
                if m in cells else []
            low = f" ({min(xs):.3f})" if lowest and xs else ""
            got.append(f"{geomean(xs):.3f}{low}" if xs else "")
        out.append(f"| {name} | " + " | ".join(got) + " |")
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


def kernel_times(path: Path) -> str:
    """A kernels.csv (overhead.py --kernels's stderr, one row a shape, provider and kernel:
    device microseconds a call, torch.profiler, back to back, L2 warm) as a table: per shape
    our tile and kernel time, cuBLAS's kernel and time, and ours over theirs."""
    out = ["| shape | mode | tile | ours us | cuBLAS kernel | its us | ours / cuBLAS |",
           "|---|---|---|---:|---|---:|---:|"]
    for (shape, mode), rs in _grouped(_rows(path), lambda r: (r["shape"], r["mode"])).items():
        ours = [r for r in rs if r["provider"] == "triton"]
        theirs = [r for r in rs if r["provider"] == "vendor"]
        if not ours or not theirs:
            continue
        us, them = (sum(float(r["device_us"]) for r in x) for x in (ours, theirs))
        out.append(f"| {shape} | {mode} | {ours[0]['tile']} | {us:.2f} | "
                   f"{' + '.join(r['kernel'] for r in theirs)} | {them:.2f} | "
                   f"{us / them:.2f} |")
    return "\n".join(out)


def first_calls(path: Path, parts: Path | None, tree: str) -> str:
    """overhead.py's first calls of trees (`tree` column: its commit) on shapes new to the
    process, as a table: per shape each tree's first call less its compile-or-load part
    (`own_ms`), then `tree`'s second call, the target (twice that) and whether `tree`
    meets it; then, given `parts` (`--parts`), each library step's inclusive time, median
    over the shapes, per tree. The process's first shape (it reads the table) is left out
    of both."""
    rows = _rows(path)
    trees = [t for t in dict.fromkeys(r["tree"] for r in rows) if t != tree] + [tree]
    first = rows[0]["shape"]
    out = ["| shape | mode | " + " | ".join(f"{t} own ms" for t in trees)
           + " | second call ms | target ms | met |",
           "|---|---|" + "---:|" * (len(trees) + 2) + "---|"]
    for (shape, mode), rs in _grouped(rows, lambda r: (r["shape"], r["mode"])).items():
        if shape == first:
            continue
        by = {r["tree"]: r for r in rs}
        last = by[trees[-1]]
        second, own = float(last["second_call_ms"]), float(last["own_ms"])
        out.append(f"| {shape} | {mode} | "
                   + " | ".join(f"{float(by[t]['own_ms']):.3f}" if t in by else ""
                                for t in trees)
                   + f" | {second:.3f} | {2 * second:.3f} | "
                   + ("yes |" if own <= 2 * second else "no |"))
    if parts is None:
        return "\n".join(out)
    steps = _rows(parts)
    out += ["", "| mode | step | " + " | ".join(f"{t} ms" for t in trees) + " |",
            "|---|---|" + "---:|" * len(trees)]
    for (mode, step), rs in _grouped([r for r in steps if r["shape"] != first],
                                     lambda r: (r["mode"], r["part"])).items():
        cells = [statistics.median(float(r["ms"]) for r in rs if r["tree"] == t)
                 if any(r["tree"] == t for r in rs) else None for t in trees]
        out.append(f"| {mode} | {step} | "
                   + " | ".join("" if c is None else f"{c:.3f}" for c in cells) + " |")
    return "\n".join(out)


def plan_times(*paths: Path) -> str:
    """plan_time.py CSVs (the CPU, trees timed in the same rounds; `steady`: decide +
    lookup on unseen random shapes in one process, `cold`: a fresh process's first plans,
    `eager`: a repeated call's host path, `--calls`) as a table: per state and mode each
    tree's best and median round (us a plan, or a call) and each best over the last
    tree's (the tree measured: `plan_time.py` puts it last)."""
    out = ["| state | mode | tree | commit | best us | median us | shapes x rounds | "
           "from the table | best over the last tree's |",
           "|---|---|---|---|---:|---:|---|---:|---:|"]
    rows = [r for path in paths for r in _rows(path)]
    for (state, mode), rs in _grouped(rows, lambda r: (r["state"], r["mode"])).items():
        last = float(rs[-1]["best_us"])
        for r in rs:
            out.append(f"| {state} | {mode} | {r['tree']} | {r['sha']} | {r['best_us']} | "
                       f"{r['median_us']} | {r['shapes']} x {r['rounds']} | "
                       f"{r['table_hits']} | x{float(r['best_us']) / last:.2f} |")
    return "\n".join(out)


def tile_kernels(path: Path) -> str:
    """A tiles.py --kernels CSV (one call of each provider under torch.profiler, L2 warm):
    per shape and provider its kernel, grid, threads, registers a thread, shared memory
    and device microseconds."""
    out = ["| shape | provider | kernel | grid | block | registers | smem KB | us |",
           "|---|---|---|---|---|---:|---:|---:|"]
    for r in _rows(path):
        out.append(f"| {r['shape']} | {r['provider']} | {r['kernel']} | {r['grid']} | "
                   f"{r['block']} | {r['registers']} | {int(r['smem']) / 1024:.0f} | "
                   f"{float(r['us']):.2f} |")
    return "\n".join(out)


def call_audit(summary: Path, flagged: Path) -> str:
    """scripts/call_audit.py's CSVs (one Triton version): per kernel function its compiled
    kernels and limits, then the flagged kernels (refused, spilling, serialized) grouped
    by function, warps, stages, shared memory and registers, with their spills (bytes a
    thread; spill instructions in the K loop), the programs a persistent one asks of an SM
    and how many fit, and the calls that launched them."""
    out = ["| kernel | kernels | calls | most shared KiB | most registers | spilling | "
           "serialized | refused |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in _rows(summary):
        out.append(f"| {r['kernel']} | {r['kernels']} | {r['calls']} | "
                   f"{int(r['max_shared']) / 1024:.1f} | {r['max_registers']} | "
                   f"{r['spilling']} | {r['serialized']} | {r['refused']} |")
    groups: dict[tuple, list[dict]] = {}
    for r in _rows(flagged):
        key = (r["kernel"], r["warps"], r["stages"], r["shared"], r["registers"],
               r["serialized"], r["verdict"], r.get("asked", ""), r.get("resident", ""))
        groups.setdefault(key, []).append(r)
    out += ["", "| kernel | warps | stages | shared KiB | registers | verdict | serialized | "
            "spill stores B | in the K loop | programs an SM: asked / fit | kernels | calls | "
            "a call |", "|---|---:|---:|---:|---:|---|---|---|---|---|---:|---:|---|"]
    for (name, warps, stages, shared, regs, ser, verdict, asked, fit), rs in groups.items():
        spills = [int(r["spill_stores"]) for r in rs if r["spill_stores"] not in ("", "0")]
        loops = [int(r["k_loop_spills"]) for r in rs if r["k_loop_spills"] != ""]
        out.append(f"| {name} | {warps} | {stages} | {int(shared) / 1024:.1f} | {regs} | "
                   f"{verdict} | {'yes' if ser == '1' else ''} | {_span(spills)} | "
                   f"{_span(loops)} | {f'{asked} / {fit}' if asked else ''} | {len(rs)} | "
                   f"{sum(int(r['calls']) for r in rs)} | "
                   f"{rs[0]['first_call']} |")
    return "\n".join(out)


def call_audit_versions(csvs: dict[str, Path]) -> str:
    """scripts/call_audit.py's `--all --csv` of one set of calls under several Triton
    versions ({label: CSV}): per GEMM tile (kernel function, BMxBNxBK, warps, stages) the
    registers and K-loop spill instructions each version compiled it to (spans over its
    specializations), and how many kernels each compiled. Other kernels (operand copies,
    split-K reductions) are left out."""
    tiles: dict[tuple, dict[str, list[dict]]] = {}
    for label, path in csvs.items():
        for r in _rows(path):
            blocks = dict(kv.split("=", 1) for kv in r["constexprs"].split() if "=" in kv)
            if "BLOCK_M" not in blocks or r["kernel"] in ("_copy_kernel", "_reduce_kernel"):
                continue
            tile = (r["kernel"], f"{blocks['BLOCK_M']}x{blocks['BLOCK_N']}x{blocks['BLOCK_K']}",
                    int(r["warps"]), int(r["stages"]))
            tiles.setdefault(tile, {}).setdefault(label, []).append(r)
    head = " | ".join(f"{v} registers | {v} K-loop spills" for v in csvs)
    out = [f"| kernel | tile | warps | stages | {head} | kernels |",
           "|---|---|---:|---:|" + "---:|---:|" * len(csvs) + "---|"]
    for (name, tile, warps, stages), by in sorted(tiles.items()):
        cells = []
        for label in csvs:
            rs = by.get(label, [])
            cells += [_span([int(r["registers"]) for r in rs]),
                      _span([int(r["k_loop_spills"] or 0) for r in rs])]
        counts = " / ".join(str(len(by.get(label, []))) for label in csvs)
        out.append(f"| {name} | {tile} | {warps} | {stages} | {' | '.join(cells)} | "
                   f"{counts} |")
    return "\n".join(out)


def _span(values: list[int]) -> str:
    """'' for none, 'x' for one value, 'lo-hi' for several."""
    lo, hi = (min(values), max(values)) if values else (None, None)
    return "" if lo is None else f"{lo}" if lo == hi else f"{lo}-{hi}"


# --- accuracy tables (session 58) ------------------------------------------------------


def errors_by_k(path: Path, mode: str) -> str:
    """`mode`'s rows of an errors CSV (mode, case, k, triton_error, vendor_error: a
    baseline's figures, extracted) by K, with Triton's error over the vendor's (an
    accumulation below fp32 grows with K on its side alone)."""
    out = ["| case | K | Triton error | vendor error | Triton / vendor |",
           "|---|---:|---:|---:|---:|"]
    for r in (r for r in _rows(path) if r["mode"] == mode):
        t, v = float(r["triton_error"]), float(r["vendor_error"])
        out.append(f"| {r['case']} | {r['k']} | {t:.2e} | {v:.2e} | {t / v:.2f} |")
    return "\n".join(out)


def ptxas_promote(path: Path) -> str:
    """scripts/ptxas_check.py's figures for tiles compiled as they are and promoted."""
    out = ["| tile | table entries | registers | promoted | spill stores promoted | "
           "serialized promoted |", "|---|---:|---:|---:|---:|---|"]
    for r in _rows(path):
        spill = int(r["spill_bytes_promoted"])
        out.append(f"| {r['tile']} | {r['entries']} | {r['registers']} | "
                   f"{r['registers_promoted']} | {f'{spill} B' if spill else '0'} | "
                   f"{'yes' if r['serialized_promoted'] == '1' else 'no'} |")
    return "\n".join(out)


def accum_table(path: Path, mode: str, settings: tuple[str, ...] = ("default",)) -> str:
    """scripts/device/accum.py's rows of one mode: per shape (by K), the relative error and
    TFLOP/s of each provider at each of `settings` (its `promote` column: `default`, or
    `block` where each K block's sum went into fp32), side by side; a provider timed in
    several processes (cuBLAS beside each setting) from the first."""
    rows = [r for r in _rows(path) if r["mode"] == mode and r["promote"] in settings]
    cols = list(dict.fromkeys((r["provider"], r["promote"]) for r in rows))

    def head(col: tuple[str, str]) -> str:
        return col[0] if col[1] == "default" else f"{col[0]} ({col[1]})"

    out = ["| shape | K | " + " | ".join(f"{head(c)} error" for c in cols) + " | "
           + " | ".join(f"{head(c)} TFLOP/s" for c in cols) + " |",
           "|---|---:|" + "---:|" * (2 * len(cols))]
    by_shape = _grouped(rows, lambda r: r["shape"])
    for shape, rs in sorted(by_shape.items(), key=lambda x: int(x[0].split("x")[2])):
        got: dict = {}
        for r in rs:   # a provider timed in several processes: the first one's row
            got.setdefault((r["provider"], r["promote"]), r)
        err = [f"{float(got[c]['error']):.2e}" if c in got else "-" for c in cols]
        tf = [f"{float(got[c]['tflops']):.0f}" if c in got else "-" for c in cols]
        out.append(f"| {shape} | {shape.split('x')[2]} | " + " | ".join(err + tf) + " |")
    return "\n".join(out)


def accum_model(model: Path, *measured: tuple[str, Path]) -> str:
    """scripts/accum_model.py's predicted fp8 error per K and split, beside Triton's
    measured error (accum.py's default rows, named by chip, as the fit reads them:
    `accum_model.measured`; '-' where none has that K) and fp8's band."""
    from accum_model import measured as by_k  # the fit's own reading of the file

    from gemmgate.precision import MODES

    rows = _rows(model)
    splits = sorted({int(r["split"]) for r in rows})
    got = {(int(r["k"]), int(r["split"])): float(r["error"]) for r in rows}
    meas = [by_k(path) for _, path in measured]
    band = MODES["fp8"].max_error
    bits = rows[0]["bits"] if rows else "?"
    out = ["| K | " + " | ".join(f"{name} measured" for name, _ in measured)
           + (" | " if measured else "")
           + " | ".join(f"model, split {s}" for s in splits) + " |",
           "|---:|" + "---:|" * (len(measured) + len(splits))]
    for k in sorted({k for k, _ in got}):
        cells = [f"{m[k]:.2e}" if k in m else "-" for m in meas]
        cells += [(f"**{got[k, s]:.2e}**" if got[k, s] > band else f"{got[k, s]:.2e}")
                  if (k, s) in got else "-" for s in splits]
        out.append(f"| {k} | " + " | ".join(cells) + " |")
    out.append(f"\n(model: {bits} bits a sum; bold: past fp8's `max_error` {band:.0e}, where a "
               "run reports the mode as downgraded)")
    return "\n".join(out)


def accum_fit(*named: tuple[str, Path]) -> str:
    """scripts/accum_model.py --fit-csv files side by side, one per chip: per BITS, the
    model's error over the measured one (geomean, min-max over the measured K)."""
    fits = [{r["bits"]: r for r in _rows(path)} for _, path in named]
    out = ["| bits | " + " | ".join(f"{name}: model/measured | {name}: min-max"
                                    for name, _ in named) + " |",
           "|---:|" + "---:|---:|" * len(named)]
    for bits in fits[0]:
        out.append(f"| {bits} | " + " | ".join(
            f"{f[bits]['geomean']} | {f[bits]['min']}-{f[bits]['max']}" if bits in f
            else "- | -" for f in fits) + " |")
    return "\n".join(out)


def split_outcome(measured: Path, model: Path, price: Path) -> str:
    """accum.py --max-range's rows against the predictions: per shape, the pick's and its
    split's measured error and time, accum_model.py's predicted error of each (`model`: its
    --csv at those K and splits) and the step model's predicted speed of the split
    (`price`: --price's CSV)."""
    rows = [r for r in _rows(measured) if r["provider"] in ("triton", "triton_split")]
    predicted = {(int(r["k"]), int(r["split"])): float(r["error"]) for r in _rows(model)}
    speed = {(r["shape"], int(r["split"])): float(r["speed"]) for r in _rows(price)}
    out = ["| shape | split | error | predicted | split's error | predicted | ms | split's ms "
           "| speed | predicted |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for shape, rs in _grouped(rows, lambda r: r["shape"]).items():
        got = {r["provider"]: r for r in rs}
        pick, split = got["triton"], got["triton_split"]
        k, ways = int(shape.split("x")[2]), int(split["promote"].rsplit(" k", 1)[1])
        p = speed.get((shape, ways))
        out.append(f"| {shape} | {ways} | {_sci(float(pick['error']))} | "
                   f"{_sci(predicted.get((k, 1)))} | {_sci(float(split['error']))} | "
                   f"{_sci(predicted.get((k, ways)))} | {float(pick['ms']):.3f} | "
                   f"{float(split['ms']):.3f} | "
                   f"x{float(pick['ms']) / float(split['ms']):.3f} | "
                   f"{'-' if p is None else f'x{p:.3f}'} |")
    return "\n".join(out)


def _sci(x: float | None) -> str:
    return "-" if x is None else f"{x:.2e}"


def split_prices(path: Path) -> str:
    """scripts/accum_model.py --price's rows: per shape, its pick and each split's
    predicted time and speed against the unsplit tile."""
    out = ["| shape | pick | split | predicted ms | speed |", "|---|---|---:|---:|---:|"]
    out += [f"| {r['shape']} | {r['pick']} | {r['split']} | {r['ms']} | {r['speed']} |"
            for r in _rows(path)]
    return "\n".join(out)


def host_calls(before: Path, after: Path) -> str:
    """Two `plan_time.py --calls` CSVs (a reference tree and this tree, before and after a
    change): per mode, the best round's us a call of each, and this tree's excess over the
    reference's in the same rounds."""
    out = ["| mode | reference | us a call | this tree before | excess | this tree after | "
           "excess |", "|---|---|---:|---:|---:|---:|---:|"]
    runs = [{r["mode"]: r for r in _rows(p) if r["tree"] == "tree"} for p in (before, after)]
    refs = [{r["mode"]: r for r in _rows(p) if r["tree"] != "tree"} for p in (before, after)]
    for mode, ref in refs[0].items():
        cells = []
        for i in (0, 1):
            t, r = float(runs[i][mode]["best_us"]), float(refs[i][mode]["best_us"])
            cells += [f"{t:.1f}", f"{t - r:+.1f}"]
        out.append(f"| {mode} | {ref['sha'][:7]} | {ref['best_us']} | " + " | ".join(cells)
                   + " |")
    return "\n".join(out)


def provider_cases(path: Path, label: str, provider: str) -> str:
    """One run beside an extra provider (`--providers`), case by case: the tile that ran,
    Triton's speed ratio to cuBLAS and to the provider (> 1: Triton faster), then their
    geomeans and how many cases Triton ran faster than the provider."""
    rows = [(r, _extra(r["extra"], provider)) for r in _rows(path) if r["label"] == label]
    rows = [(r, x) for r, x in rows if x]
    if not rows:
        raise ValueError(f"{path}: no case labelled {label} with {provider}")
    name = provider.rpartition(":")[2]
    out = [f"| case | mode | tile | Triton/cuBLAS | Triton/{name} |", "|---|---|---|---:|---:|"]
    out += [f"| {r['case']} | {r['mode']} | {r['tile']} | {float(r['ratio']):.3f} | {x:.3f} |"
            for r, x in rows]
    faster = sum(x > 1 for _, x in rows)
    out.append(f"| geomean ({faster} of {len(rows)} faster than {name}) | | | "
               f"{geomean([float(r['ratio']) for r, _ in rows]):.3f} | "
               f"{geomean([x for _, x in rows]):.3f} |")
    return "\n".join(out)


def block_excess(path: Path, label: str) -> str:
    """Per mode of a run (cases.csv, `bx_`/`xs_` figures): the provider-cases with a block
    excess, the largest (whose, where) beside that case's whole excess, and the largest
    block-to-whole ratio."""
    out = ["| mode | provider-cases | max block excess | where | its whole excess | "
           "max block / whole |", "|---|---:|---:|---|---:|---:|"]
    rows = [r for r in _rows(path) if r["label"] == label]
    for mode, rs in _grouped(rows, lambda r: r["mode"]).items():
        got = [(x[f"bx_{p}"], x.get(f"xs_{p}"), p, r["case"]) for r in rs
               for x in (_extras(r["extra"]),) for p in ("triton", "vendor")
               if f"bx_{p}" in x]
        if not got:
            continue
        bx, xs, who, case = max(got)
        ratio = max(b / w for b, w, _, _ in got if w)
        out.append(f"| {mode} | {len(got)} | {bx:.2e} | {who} {case} | {_sci(xs)} | "
                   f"{ratio:.1f} |")
    return "\n".join(out)


def tuned_against_lookup(path: Path, lookup: str, tuned: str) -> str:
    """The same shapes run at the lookup's picks (`lookup`) and at a fresh tune's
    (`tuned`, `gemmgate tune --json`), each against cuBLAS in its own run: case by case
    the two tiles, their ratios and the tune's gain, then geomeans."""
    rows = _rows(path)
    # by mode and case: a run of two modes had kept one mode's row a case (a review)
    picks = {(r["mode"], r["case"]): r for r in rows if r["label"] == lookup}
    fresh = {(r["mode"], r["case"]): r for r in rows if r["label"] == tuned}
    cases = [c for c in picks if c in fresh]
    if not cases:
        raise ValueError(f"{path}: no case in both {lookup} and {tuned}")
    out = ["| case | mode | lookup tile | lookup/cuBLAS | tuned tile | tuned/cuBLAS | "
           "tuned over lookup |", "|---|---|---|---:|---|---:|---:|"]
    a = [float(picks[c]["ratio"]) for c in cases]
    b = [float(fresh[c]["ratio"]) for c in cases]
    out += [f"| {case} | {mode} | {picks[mode, case]['tile']} | {x:.3f} | "
            f"{fresh[mode, case]['tile']} | {y:.3f} | x{y / x:.3f} |"
            for (mode, case), x, y in zip(cases, a, b)]
    out.append(f"| geomean ({len(cases)}) | | | {geomean(a):.3f} | | {geomean(b):.3f} | "
               f"x{geomean(b) / geomean(a):.3f} |")
    return "\n".join(out)


def block_k_best(path: Path) -> str:
    """From a tune's timings (mode, case, tile, ms): per case, the fastest tile reading K
    128 deep a step and the fastest 64 deep, with K's last step's fill at each depth."""
    best: dict[tuple[str, str], dict[int, tuple[float, str]]] = {}
    for r in _rows(path):
        depth = int(r["tile"].split()[1].split("x")[2])
        got = best.setdefault((r["mode"], r["case"]), {})
        if depth not in got or float(r["ms"]) < got[depth][0]:
            got[depth] = (float(r["ms"]), r["tile"])
    out = ["| case | mode | K | last step filled, 128 / 64 deep | fastest 128 deep | us | "
           "fastest 64 deep | us | 128 over 64 |", "|---|---|---:|---|---|---:|---|---:|---:|"]
    for (mode, case), got in best.items():
        if 128 not in got or 64 not in got:
            continue
        k = int(case.split("-k")[1].split("-")[0])
        fill = " / ".join(f"{(k - 1) % d + 1}/{d}" for d in (128, 64))
        (t1, c1), (t2, c2) = got[128], got[64]
        out.append(f"| {case} | {mode} | {k} | {fill} | {c1} | {t1 * 1e3:.2f} | {c2} | "
                   f"{t2 * 1e3:.2f} | x{t1 / t2:.3f} |")
    return "\n".join(out)


def worst_elements(path: Path, labels: tuple[str, ...], limit: float) -> str:
    """Per mode over the runs `labels` (cases.csv, `el_` figures: the worst element's
    error over a typical element's size, session 79 on): each provider's largest, its case,
    and how far under the element check's `limit` it stays."""
    out = ["| mode | provider | cases | worst element | case | limit over it |",
           "|---|---|---:|---:|---|---:|"]
    rows = [r for r in _rows(path) if r["label"] in labels]
    for mode, rs in _grouped(rows, lambda r: r["mode"]).items():
        for p in ("triton", "vendor", "vendor_fast"):
            got = [(x[f"el_{p}"], r["case"]) for r in rs
                   for x in (_extras(r["extra"]),) if f"el_{p}" in x]
            if got:
                el, case = max(got)
                out.append(f"| {mode} | {p} | {len(got)} | {el:.2e} | {case} | "
                           f"{limit / el:.1f}x |" if el else
                           f"| {mode} | {p} | {len(got)} | 0 | {case} | |")
    if len(out) == 2:
        raise ValueError(f"{path}: no element figure under {', '.join(labels)}")
    return "\n".join(out)
