"""`gemmgate run` and `gemmgate chips`."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from gemmgate.chips import CHIPS


def progress_bar(console: Console) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=True)


def execute(session, console: Console, err: Console, slowdown: float = 0.0,
            reference: str | None = None):
    """Run a session's cases with a progress bar; returns (environment, results)."""
    from gemmgate.env import environment
    from gemmgate.run import run_cases

    sel = session.selection
    if sel.warning:
        err.print(f"[yellow]warning:[/] {sel.warning}")
    env = environment(sel.chip.id, session.policy.method)
    env["devices"] = list(session.devices)
    env["block"] = session.policy.block
    total = len(session.modes) * len(session.cases)
    err.print(f"chip {sel.chip.id} ({sel.source}: {sel.device_name}), "
              f"{len(session.cases)} cases x {len(session.modes)} modes, "
              f"timing {session.policy.method}, devices {','.join(map(str, session.devices))}")
    with progress_bar(err) as bar:
        task = bar.add_task("running", total=total)

        def tick(label: str) -> None:
            bar.update(task, advance=1, description=label)

        if len(session.devices) > 1:
            from gemmgate.parallel import run_parallel

            results = run_parallel(sel.chip, session.modes, session.cases, session.policy,
                                   session.devices, on_case=tick, slowdown=slowdown,
                                   tuning_setup=session.tuning, reference=reference)
        else:
            results = run_cases(sel.chip, session.modes, session.cases, session.policy,
                                session.device, session.devices[0], on_case=tick,
                                slowdown=slowdown, tuning_setup=session.tuning,
                                reference=reference)
    return env, results


def run_command(args, console: Console, err: Console) -> int:
    from gemmgate.files import write_json_atomic
    from gemmgate.report import print_tables, run_json
    from gemmgate.run import failures
    from gemmgate.session import make_session

    if args.pin_tiles and not Path(args.pin_tiles).is_file():
        raise ValueError(f"--pin-tiles {args.pin_tiles}: no such file")
    session = make_session(args.chip, args.shapes, args.modes, args.timing, args.budget,
                           args.devices, pins_from=args.pin_tiles, retune=args.retune,
                           block=args.block)
    ab_sha = None
    if args.ab_ref:
        from gemmgate.reference import resolve

        ab_sha = resolve(args.ab_ref)
    env, results = execute(session, console, err, reference=ab_sha)
    print_tables(results, console, title=f"{session.chip.id} {session.shapes_label}")
    if args.json:
        write_json_atomic(args.json, run_json(env, results, session.shapes_label))
        err.print(f"wrote {args.json}")
    bad = failures(results)
    if bad:
        err.print(f"[red]{len(bad)} case(s) failed accuracy[/]")
        return 1
    return 0


def chips_command(args, console: Console) -> int:
    if args.ids:
        console.print("\n".join(CHIPS), highlight=False)
        return 0
    from gemmgate.chips import select_chip

    table = Table(title="chips")
    for h in ("id", "name", "SM/CU", "smem/block KiB", "L2/LLC MiB", "GB/s", "modes",
              "peak TFLOP/s"):
        table.add_column(h)
    for c in CHIPS.values():
        peaks = " ".join(f"{m}:{v:g}" for m, v in c.peak_tflops.items()) or "—"
        table.add_row(c.id, c.name, str(c.compute_units or "—"), f"{c.smem_per_block / 1024:g}",
                      f"{c.llc_bytes / 2**20:g}", f"{c.mem_bw_gbs:g}", ",".join(c.modes), peaks)
    console.print(table)
    sel = select_chip(getattr(args, "chip", None))
    console.print(f"selected: [bold]{sel.chip.id}[/] ({sel.source}; device {sel.device_name!r})")
    if sel.warning:
        console.print(f"[yellow]warning:[/] {sel.warning}")
    return 0
