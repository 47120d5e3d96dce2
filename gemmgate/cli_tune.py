"""`gemmgate tune`: search tiles for a shape set and write the kernel's tuning table
(gemmgate/tune.py). Exit 0 when every tuned case passed accuracy, 1 otherwise (those
keys are not written), 2 on bad input or on the CPU (the interpreter runs one tile)."""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from gemmgate.cli_outputs import TABLE_OUTPUT, check_outputs, shapes_file
from gemmgate.cli_run import (
    context_from_args,
    in_case_order,
    keep_partial,
    keeps_partial,
    progress_bar,
)
from gemmgate.context import MeasurementError
from gemmgate.execute import preflight
from gemmgate.files import clear_outputs, write_json_atomic
from gemmgate.precision import get_mode
from gemmgate.results import CaseResult, RunRecord
from gemmgate.run import environment_of, own_kernels
from gemmgate.tune import (
    KeyWriter,
    claimed_elsewhere,
    entry_of,
    holdout_shapes,
    in_kernel_folder,
    incumbents_of,
    lent_table,
    orphans,
    own_incumbents,
    stale_entries,
    stale_items,
    table_data,
    table_for,
    table_path,
    tune,
    tune_context,
    write_table,
)
from gemmgate.tuning import KEEP_MARGIN, config_name

# an hour a key: past any search of at most 30 configs (the case limit adds twice it,
# and inf or 1e10 had been refused naming --case-timeout, which nobody gave; a review)
MAX_BUDGET_PER_KEY_S = 3600.0


def tune_command(args, console, err) -> int:
    if not 0 < args.budget_per_key <= MAX_BUDGET_PER_KEY_S:
        raise ValueError(f"--budget-per-key must be > 0 and at most "
                         f"{MAX_BUDGET_PER_KEY_S:g} seconds, got {args.budget_per_key}")
    if args.retune:   # (accepted and ignored: --help offered it; a review)
        raise ValueError("--retune: tune always searches afresh (--budget-per-key a key); "
                         "leave it out")
    if args.stale and (args.shapes or args.modes):
        raise ValueError("--stale retunes the table's stale entries, their own modes and "
                         "shapes: leave out --shapes and --modes")
    ctx = context_from_args(args)
    own_kernels()   # (table_path imports kernels: a syntax error there was a traceback,
    # exit 1, the regression code, where `run` says so with exit 2; a review)
    table = args.table if args.table is not None else str(table_path(ctx.chip.id))
    held = holdout_shapes(c for _, c in ctx.items) if in_kernel_folder(Path(table)) else []
    if held:
        raise ValueError(f"{', '.join(held[:6])}{' ...' if len(held) > 6 else ''}: "
                         f"{len(held)} case(s) of a holdout set, which no table in the "
                         f"kernel's folder may tune (they measure how {table} carries to "
                         "shapes it was not tuned on): leave them out, or tune into a "
                         "--table outside kernels/tuned to measure them")
    if ctx.chip.device_type == "cpu":
        raise ValueError("gemmgate tune needs a GPU: on the CPU the Triton interpreter runs "
                         "one fixed tile, so there is nothing to tune")
    if ctx.selection.mismatched:   # its timings would go into another device's table
        named = ctx.selection.chip.names(ctx.selection.device_name) or \
            ctx.selection.source == "detected"   # (an MI325X, found by its architecture)
        raise ValueError(f"{ctx.selection.warning}: gemmgate tune writes what it measures "
                         f"into {ctx.chip.id}'s table, so it tunes on that device only "
                         + ("(a device of other SMs, or another part, has no table of its "
                            "own here)" if named
                            else "(leave out --chip and GEMMGATE_CHIP to tune this "
                                 "device's)"))
    name = ctx.selection.device_name   # the kernel finds its table by this name
    if not ctx.chip.names(name):   # a generic GPU's empty match,
        # an MI300X found by its architecture ("AMD Radeon Graphics"): exit 0, written, and
        # never read (a review)
        raise ValueError(f"this device ({name!r}) is {ctx.chip.id} ({ctx.selection.source}), "
                         f"whose table names devices by {list(ctx.chip.match)}, none in its "
                         "name: the kernel would never read what tune writes; give it a chip "
                         "profile whose `match` is in the device's name (gemmgate/chips.py)")
    check_outputs((table, TABLE_OUTPUT), (args.json, "--json"), inputs=(shapes_file(args.shapes),))
    path = Path(table)
    if args.stale and args.table is not None and not path.exists():
        raise ValueError(f"--table {table}: no such file, so no stale entries to retune")
    table_for(path, ctx.chip.id)   # unusable or another chip's: said before any tuning
    own = claimed_elsewhere(path, name)
    if own:
        raise ValueError(f"--table {table}: {own} already names this device ({name!r}) in "
                         "the kernel's table folder, and a device reads one table of its "
                         "own there (a second makes every kernel call on it fail): tune into "
                         f"{own}, or write a candidate table outside {path.parent}")
    lent, lent_entries = lent_table(ctx.chip.name, path)
    if lent:
        err.print(f"{ctx.chip.id} reads {lent} (lent to it: `borrowed_by`) where "
                  f"{escape(str(path))} has no fresh entry for a case's bucket and shape; a "
                  f"key tuned here goes into {escape(str(path))}, and where {lent} has its "
                  "shape its tile is timed first and kept "
                  f"unless another measures {KEEP_MARGIN:.0%} faster on this chip")
    items = None
    if args.stale:
        stale = stale_items(path)
        if not stale:   # an earlier tune's --json there is not this one's: removed, as a
            clear_outputs(args.json)   # tune that measures removes it (a review)
            err.print(f"no stale entries in {escape(str(path))}: nothing to retune"
                      + (f"; no {escape(args.json)} written" if args.json else ""))
            return 0
        ctx = context_from_args(args, modes=",".join(dict.fromkeys(m for m, _ in stale)),
                                cases=tuple(c for _, c in stale), cases_label="stale entries")
        items = [(get_mode(m), c) for m, c in stale]
    first = tune_first(path, lent_entries)
    if first:
        ctx = replace(ctx, tuning=replace(ctx.tuning, first=first))
    # an unusable tuning cache (the search saves each key there) is exit 2 before the
    # --json is cleared: found in the Runner's start, it had removed an earlier run's
    # file for a tune that measured nothing (a review)
    preflight(tune_context(ctx, args.budget_per_key))
    written = KeyWriter(path, ctx.chip.id, tuple(ctx.chip.match), environment_of(ctx))
    clear_outputs(args.json)   # a tune stopped part way left an earlier run's file there,
    done: list[CaseResult] = []   # looking like its own (a review): its keys go in instead

    def partial(reason: str) -> RunRecord:
        return RunRecord({**written.env, "incomplete": reason}, ctx.shapes_label,
                         in_case_order(done, items if items is not None else ctx.items))

    with progress_bar(err) as bar:
        task = bar.add_task("tuning", total=len(items if items is not None else ctx.items))

        def tick(r: CaseResult) -> None:
            bar.update(task, advance=1, description=f"{r.mode} {r.case.id}")
            written(r)
            done.append(r)

        try:
            with keeps_partial(args.json, partial):   # (the keys measured before a stop)
                results = tune(ctx, args.budget_per_key, items, tick)
        except MeasurementError as e:
            keep_partial(e, args.json, err)
            raise
    entries = written.entries
    gone = orphans(path, entries) if args.stale else []
    if gone:
        write_table(path, ctx.chip.id, tuple(ctx.chip.match), [], drop=gone)
        err.print(f"dropped {len(gone)} stale entries whose cases now tune under another "
                  "bucket: " + ", ".join(f"{e['bucket']} m{e['m']}-n{e['n']}-k{e['k']}"
                                         for e in gone))
    data = table_data(path)
    _print(console, entries, f"tuned {len(entries)} keys into {path} "
                             f"({len(data['entries'])} entries)")
    left, cases = len(stale_entries(path)), len(stale_items(path))
    if left:   # said by the tune, not only by a lookup's warning (a review; the count was
        # of cases, an entry per bucket a case is in)
        err.print(f"[yellow]{left} entries of {escape(str(path))} are stale (tuned on other "
                  "kernel source) and never used: `gemmgate tune --stale` retunes them"
                  + (f" ({cases} cases)" if cases != left else "") + "[/]")
    line = budget_cut_line(entries, args.budget_per_key)
    if line:
        err.print(f"[yellow]{line}[/]")
    hint = moved_hint(*_device(ctx), path) if entries else ""
    if hint:
        err.print(hint)
    if args.json:
        record = RunRecord(written.env, ctx.shapes_label, tuple(results))
        write_json_atomic(args.json, record.to_json())
    failed = [r for r in results if r.providers["triton"].accuracy != "pass"]
    untuned = [r for r in results if r not in failed and entry_of(r, written.env) is None]
    for r in untuned:   # (M or N 0: no tile chosen; counted nowhere, exit 0, a review)
        err.print(f"[yellow]{r.mode} {r.case.id}: the kernel chose no tile for it (nothing "
                  "to tune), not written[/]")
    for r in failed:
        err.print(f"[red]{r.mode} {r.case.id}: Triton {r.providers['triton'].accuracy}, "
                  f"not written[/]")
    return 1 if failed else 0


def _device(ctx) -> tuple[str, int, tuple[int, int]]:
    """(name, SM count, compute capability) of the GPU the tune ran on: the card's own, as
    the kernel's lookup prices on it (an H100 PCIe matches the nvidia-h100 profile's 132
    SMs but has 114)."""
    import torch

    props = torch.cuda.get_device_properties(ctx.device_index)
    return props.name, props.multi_processor_count, (props.major, props.minor)


def moved_hint(device_name: str, sms: int, capability: tuple[int, int], path: Path) -> str:
    """What to measure before new keys in the kernel's table are committed: the untuned
    shapes whose nearest pick they move (session 65: an H100's pr tf32 keys moved nightly's
    8192 x 8192 x 28672 to a tile that ran x0.575 there). '' for a table elsewhere
    (`--table`: the kernel does not read it, and lookup_diff compares kernels/tuned), and
    for a chip other than sm_90 (lookup_diff decides as an sm_90 with TMA does)."""
    if not in_kernel_folder(path) or capability != (9, 0):
        return ""
    cmd = ["python3", "scripts/lookup_diff.py", "--ref", "HEAD", "--device", device_name,
           "--sms", str(sms), "--forms", "--csv", "moved.csv"]
    return (f"before committing {path.name}: `{shlex.join(cmd)}` lists the shapes whose "
            "nearest pick the new keys move; `gemmgate run --shapes moved.csv --ab-ref HEAD` "
            "measures them")


def tune_first(path: Path, lent_entries) -> tuple:
    """TuningSetup.first for a tune of the table at `path`: its own entries' tiles, stale
    or not, then the lent tiles (`lent_table`'s entries; a prefix's first match wins:
    `tuning.incumbent`). Each is timed first and kept unless a candidate measures
    KEEP_MARGIN faster: a plain tune of current entries traded a table's tile for one
    0.45% faster, within the search's noise (a review)."""
    return own_incumbents(path) + incumbents_of(lent_entries)


def budget_cut_line(entries, budget_s: float) -> str | None:
    """A warning when the budget ended some keys' search before every candidate was timed
    (session 11: mid-K keys stopped at 19-21 of 29, short of the tiles that won), else
    None."""
    cut = [e for e in entries if e["tried"] < e.get("offered", 0)]
    if not cut:
        return None
    worst = min(cut, key=lambda e: e["tried"] / e["offered"])
    return (f"{len(cut)} of {len(entries)} keys spent --budget-per-key {budget_s:g} s before "
            f"timing every candidate (fewest: {worst['mode']} m{worst['m']}-n{worst['n']}-"
            f"k{worst['k']}, {worst['tried']} of {worst['offered']}); a larger budget "
            "searches them all")


def _print(console, entries, title: str) -> None:
    t = Table(title=title)
    for h in ("mode", "case", "bucket", "tile", "tried", "Triton ms", "vendor ms", "ratio"):
        t.add_column(h)
    for e in entries:
        tri, ven = e["triton_ms"], e["vendor_ms"]
        ratio = f"{ven / tri:.3f}" if tri and ven else "—"
        t.add_row(e["mode"], f"m{e['m']}-n{e['n']}-k{e['k']}", e["bucket"],
                  config_name(e["config"]), _tried(e),
                  f"{tri:.4f}" if tri else "—", f"{ven:.4f}" if ven else "—", ratio)
    console.print(t)


def _tried(e: dict) -> str:
    """'21 of 29' where the candidates offered are known, else the count timed."""
    return f"{e['tried']} of {e['offered']}" if e.get("offered") else str(e["tried"])
