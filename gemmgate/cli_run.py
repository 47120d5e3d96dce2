"""`gemmgate run` and `gemmgate chips`, and the pieces every measuring command shares:
turning parsed arguments into a RunContext and running with a progress bar (output paths
are checked in gemmgate/cli_outputs.py)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from gemmgate import baseline_schema
from gemmgate.chips import CHIPS, select_chip
from gemmgate.cli_outputs import check_outputs, shapes_file
from gemmgate.compare import is_floor
from gemmgate.context import MeasurementError, RunContext, first_device, make_context
from gemmgate.deadline import cli_limit
from gemmgate.execute import preflight, run_cases
from gemmgate.files import write_json_atomic
from gemmgate.precision import PrecisionMode
from gemmgate.reference import resolve
from gemmgate.report import print_tables
from gemmgate.results import CaseResult, RunRecord, failures, holds_a_run
from gemmgate.run import environment_of, own_kernels
from gemmgate.shapes import Case
from gemmgate.stop_signal import stopped_by


def context_from_args(args, *, shapes: str | None = None, modes: str | None = None,
                      pins_from: str | None = None, block: int | None = None,
                      reference: str | None = None, slowdown: float = 0.0,
                      cases: Sequence[Case] | None = None,
                      cases_label: str = "named cases") -> RunContext:
    """The run context for parsed run arguments (keywords override them; `cases`
    replaces the shape set); commands without --providers run triton and vendor."""
    return make_context(args.chip, shapes or args.shapes, modes if modes is not None
                        else args.modes, args.timing, args.budget, args.devices,
                        pins_from=pins_from, retune=args.retune,
                        block=block if block is not None else args.block,
                        reference=reference, slowdown=slowdown, cases=cases,
                        cases_label=cases_label, providers=getattr(args, "providers", None),
                        copies=getattr(args, "copies", None) or "kept",
                        case_timeout=cli_limit(args.case_timeout,
                                               getattr(args, "budget_per_key", 0.0)))


def timed_as(args, *records: dict) -> None:
    """--timing and --block, where not given, as the first of `records` (a run's
    environment, a baseline's provenance) that names a usable one was timed: a check or a
    bisect timed otherwise than what it compares with (graph against an eager baseline)
    compared figures without launch costs to figures with them."""
    for attr in ("timing", "block"):
        if getattr(args, attr) is not None:
            continue
        for rec in records:
            value = rec.get(attr)
            if (value in ("graph", "eager")) if attr == "timing" else \
                    (type(value) is int and value >= 1):
                setattr(args, attr, value)
                break


def check_floor(x: float) -> float:
    """--floor: the smallest relative change ever flagged (check, bisect)."""
    if not is_floor(x):
        raise ValueError(f"--floor must be a fraction between 0 and 1 (e.g. 0.015), got {x}")
    return x


def append_summary(path: str | None, text: str, err: Console) -> None:
    """Append Markdown to a CI step summary; a failure is reported and changes no verdict."""
    if not path:
        return
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as f:
            f.write(text + "\n")
    except OSError as e:  # the result stands: report, keep the exit code
        err.print(f"[yellow]warning:[/] could not append the summary to "
                  f"{escape(f'{path}: {e}')}")


def progress_bar(console: Console) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=True)


RUNNING = "running: the process ended before the run did"   # (an --json's mark meanwhile)


def execute(ctx: RunContext, err: Console, partial_to: str | None = None) -> RunRecord:
    """Run the context's cases with a progress bar. `partial_to`: the run's --json, where
    a case stuck past --case-timeout leaves the cases measured before it (the process
    ends then: gemmgate/deadline.py); any other stop leaves them on the raised
    MeasurementError (`keep_partial`)."""
    sel = ctx.selection
    if sel.warning:
        err.print(f"[yellow]warning:[/] {sel.warning}")
    err.print(f"chip {sel.chip.id} ({sel.source}: {sel.device_name}), "
              + (f"{len(ctx.cases)} cases x {len(ctx.modes)} modes, " if ctx.only is None
                 else f"{len(ctx.items)} cases of {len(ctx.modes)} modes, ")
              + f"timing {ctx.policy.method}, devices {','.join(map(str, ctx.devices))}")
    if ctx.reference:
        err.print(f"A/B: the kernel at {ctx.reference[:12]} is timed beside the current one")
    if ctx.providers[2:]:
        err.print(f"also timed, not gated: {escape(', '.join(ctx.providers[2:]))}")
    with stops_before_cases(partial_to, ctx.shapes_label):
        env = environment_of(ctx)
        preflight(ctx)   # bad input leaves the --json as it was (not marked running)
    done: list[CaseResult] = []

    def partial(reason: str) -> RunRecord:
        return RunRecord({**env, "incomplete": reason}, ctx.shapes_label,
                         in_case_order(done, ctx.items))

    def last_words() -> None:   # from the watchdog thread, the measuring one stuck
        write_partial(partial_to, partial("a case was stuck past --case-timeout "
                                          f"({ctx.case_timeout_s:g} s)"), say_stderr)

    mark_running(partial_to, partial(RUNNING), err)

    with progress_bar(err) as bar:
        task = bar.add_task("running", total=len(ctx.items))

        def tick(r: CaseResult) -> None:
            done.append(r)
            bar.update(task, advance=1, description=f"{r.mode} {r.case.id}")

        with keeps_partial(partial_to, partial):
            results = run_cases(ctx, on_case=tick, last_words=last_words)
    return RunRecord(env, ctx.shapes_label, tuple(results))


def in_case_order(done: Sequence[CaseResult],
                  items: Sequence[tuple[PrecisionMode, Case]]) -> tuple[CaseResult, ...]:
    """The cases a stopped run measured (`on_case`'s, as they finished: under --devices,
    in the order its workers finished them), in the run's order, as a whole run's are: a
    stopped --devices run's --json listed them 16, 8, 32, 24 (a review)."""
    order = {c.key(m.name): i for i, (m, c) in enumerate(items)}
    return tuple(sorted(done, key=lambda r: order.get(r.key, len(order))))


@contextlib.contextmanager
def keeps_partial(path: str | None, partial: Callable[[str], RunRecord]):
    """What a run measured before it stopped is not lost: `partial(reason)`, its record
    so far, goes on a MeasurementError raised in the block (`keep_partial` writes it), and
    a stop (Ctrl-C, or SIGTERM: stop_signal.Terminated) writes it to `path` at once."""
    try:
        yield
    except MeasurementError as e:
        e.partial = partial(str(e))
        raise
    except KeyboardInterrupt as e:
        write_partial(path, partial(stopped_by(e)), say_stderr)
        raise


@contextlib.contextmanager
def stops_before_cases(path: str | None, label: str = "", checked: bool = True):
    """A stop (Ctrl-C, SIGTERM) while a run is set up, before its first case: its --json
    is a run of no case, marked incomplete, as a stop during the cases leaves it (an
    earlier run's file at that path stayed, complete and unmarked: the setup was not
    covered, a review). Bad input raises on untouched. `checked` False: the path is not
    checked yet (`check_outputs`), so only an earlier run's file there is written over
    (a baseline or a user's file is not: `results.holds_a_run`)."""
    try:
        yield
    except KeyboardInterrupt as e:
        if checked or holds_a_run(path):
            write_partial(path, RunRecord.stopped_before_cases(stopped_by(e), label),
                          say_stderr)
        raise


def mark_running(path: str | None, record: RunRecord, err: Console) -> None:
    """`record` (marked RUNNING) at the run's --json while it measures: a process ended
    outright (SIGKILL, the alarm, the hard stop after SIGTERM, a provider's os._exit) left
    an earlier run's file there, complete and unmarked (a review). Best effort: where it
    cannot be written, the run goes on and its end says why its file cannot be."""
    if not path:
        return
    try:
        write_json_atomic(path, record.to_json())
    except OSError as e:
        err.print(f"[yellow]warning:[/] cannot mark {escape(path)} as running: "
                  f"{escape(str(e))}")


def write_partial(path: str | None, record: RunRecord | None,
                  say: Callable[[str], None]) -> None:
    """Write a run that stopped before its end (its environment marked `incomplete` with
    the reason: such a run calibrates nothing) to its --json, and `say` so. With no case
    measured too: an earlier run's file at that path stayed, complete and unmarked, for
    an artifact upload or a script to read as this run's (a review)."""
    if path and record is not None:
        write_json_atomic(path, record.to_json())
        say(f"wrote the {len(record.cases)} case(s) measured before it stopped to {path} "
            "(environment.incomplete)")


def say_stderr(text: str) -> None:
    """A line on stderr from the watchdog thread (gemmgate/deadline.py), the console's
    owner stuck."""
    print(f"gemmgate: {text}", file=sys.stderr, flush=True)


def keep_partial(e: MeasurementError, path: str | None, err: Console) -> None:
    """`write_partial` of the cases a run measured before a MeasurementError (`execute`
    attaches them)."""
    write_partial(path, getattr(e, "partial", None), lambda text: err.print(escape(text)))


def provider_files(args) -> list[tuple[str, str]]:
    """(file, option) of each `module:function` provider's module, an input an output
    must not name: `--json prov.py` wrote the run over the provider's source (a review).
    Where the module is not found here, nothing: its import is the error then."""
    out = []
    for name in (getattr(args, "providers", None) or "").split(","):
        module = name.strip().partition(":")[0]
        if ":" not in name or not module:
            continue
        if os.getcwd() not in sys.path:   # as load_function finds it
            sys.path.append(os.getcwd())
        origin = _module_file(module)
        if origin is not None:
            out.append((origin, f"--providers {name.strip()}"))
    return out


def _module_file(module: str) -> str | None:
    """The file `module` would be imported from, found without running any module:
    importlib.util.find_spec imports a dotted name's parent packages, so a `pkg.mod:fn`
    provider's package ran here, before the context: one that raised was a traceback
    (exit 1), one that exited set the exit code, one that imported `kernels` did so
    before the CPU's interpreter was on (Triton then failed accuracy; a review). None
    where it cannot be told; its import is then load_function's to report."""
    path, spec = None, getattr(sys.modules.get(module), "__spec__", None)
    try:
        parts = module.split(".") if spec is None else []
        for i in range(len(parts)):
            name = ".".join(parts[:i + 1])
            loaded = sys.modules.get(name)
            spec = getattr(loaded, "__spec__", None) if loaded is not None else None
            if spec is None:
                spec = next((s for f in sys.meta_path if hasattr(f, "find_spec")
                             if (s := f.find_spec(name, path)) is not None), None)
            if spec is None:
                return None
            path = spec.submodule_search_locations
            if path is None and name != module:   # a module, not a package, as a parent
                return None
    except Exception:  # noqa: BLE001 - a finder's own error: the import's to say
        return None
    origin = spec.origin if spec is not None else None
    return origin if origin and Path(origin).is_file() else None


def _check_pins(path: str, base) -> None:
    """ValueError naming the case where a pinned tile is not one the kernel's tile class
    makes (a field it lacks, a block of 48, a "32"): the pin was dropped and the kernel's
    own tile ran in its place, exit 0, said only by the run file's tuning source (a
    review). Checked before any work. A kernels/ that does not import is own_kernels'
    ValueError (exit 2), as without --pin-tiles (imported bare here: a traceback, exit 1,
    the regression code; a review)."""
    own_kernels()
    from kernels.tile import TileConfig

    for key, c in base.cases.items():
        cfg = (c.tuning or {}).get("config")
        if cfg is None:
            continue
        try:
            TileConfig(**cfg)
        except (TypeError, ValueError) as e:
            raise ValueError(f"--pin-tiles {path}: case {key}'s tile {cfg} is not one the "
                             f"kernel makes ({e}); give a baseline of this kernel's "
                             "tiles") from None


def run_command(args, console: Console, err: Console) -> int:
    with stops_before_cases(args.json, args.shapes or "", checked=False):
        check_outputs((args.json, "--json"), inputs=((args.pin_tiles, "--pin-tiles"),
                                                     shapes_file(args.shapes),
                                                     *provider_files(args)))
    with stops_before_cases(args.json, args.shapes or ""):
        if args.pin_tiles is not None:   # a baseline of this chip, checked before any work
            if not Path(args.pin_tiles).is_file():
                raise ValueError(f"--pin-tiles {args.pin_tiles}: "
                                 + ("a directory, not a baseline file"
                                    if Path(args.pin_tiles).is_dir() else "no such file"))
            pins = baseline_schema.load(args.pin_tiles,
                                        select_chip(args.chip, first_device(args)).chip.id)
        ref = resolve(args.ab_ref) if args.ab_ref else None
        ctx = context_from_args(args, pins_from=args.pin_tiles, reference=ref)
        if args.pin_tiles is not None:   # (kernels imported after the context: on the
            _check_pins(args.pin_tiles, pins)   # CPU it sets TRITON_INTERPRET first)
    try:
        record = execute(ctx, err, args.json)
    except MeasurementError as e:
        keep_partial(e, args.json, err)
        raise
    unwritten = None
    if args.json:   # first: what follows printing must not lose the measurements
        try:
            write_json_atomic(args.json, record.to_json())
        except OSError as e:   # (a full disk: the table is printed all the same)
            unwritten = e
    print_tables(record.cases, console, title=f"{ctx.chip.id} {ctx.shapes_label}")
    if unwritten is not None:
        raise unwritten
    if args.json:
        err.print(f"wrote {escape(args.json)}")
    bad = failures(record.cases)
    if bad:
        err.print(f"[red]{len(bad)} case(s) failed accuracy[/]")
        return 1
    return 0


def _table_of(chip) -> str:
    """The kernel's tuning table a chip's device reads (kernels/tuned; 'lent': another
    chip's, `borrowed_by`, alone or under the chip's own), '—' where none names it (the
    heuristic's picks)."""
    from kernels import table_file

    if chip.device_type == "cpu":
        return "—"
    path, _, lent, _ = table_file.table_for_device(chip.name)
    if not path:
        return "—"
    return Path(lent).name + " (lent)" if path == lent else \
        Path(path).name + (f" over {Path(lent).name} (lent)" if lent else "")


def chips_command(args, console: Console, err: Console) -> int:
    sel = select_chip(args.chip)   # a bad --chip (or GEMMGATE_CHIP) is exit 2 first,
    if args.ids:                   # --ids too (it printed the ids, exit 0: a review)
        console.print("\n".join(CHIPS), highlight=False)
        return 0
    table = Table(title="chips")
    for h in ("id", "name", "SM/CU", "smem/block KiB", "L2/LLC MiB", "GB/s", "modes",
              "dense peak TFLOP/s", "tuning table"):
        table.add_column(h, overflow="fold")
    for c in CHIPS.values():
        peaks = " ".join(f"{m}:{v:g}" for m, v in c.peak_tflops.items()) or "—"
        table.add_row(c.id, c.name, str(c.compute_units or "—"), f"{c.smem_per_block / 1024:g}",
                      f"{c.llc_bytes / 2**20:g}", f"{c.mem_bw_gbs:g}",
                      ",".join(c.modes) + (f" (not {','.join(c.refused)})" if c.refused else ""),
                      peaks, _table_of(c))
    console.print(table)
    console.print(f"selected: [bold]{sel.chip.id}[/] ({sel.source}; device {sel.device_name!r})")
    if sel.warning:
        console.print(f"[yellow]warning:[/] {sel.warning}")
    return 0
