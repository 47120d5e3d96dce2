"""`gemmgate sweep --param P [--values V,..] --shape MxNxK --mode M`: one case across one
tile parameter (gemmgate/sweep.py): a table, and optionally --csv, --json and --plot (PNG).

Checked before any measuring, exit 2 otherwise: the parameter (an integer field of the
kernel's TileConfig), the values, the shape text, the layout, the mode on this chip, the
budget, the output paths. A value that fails (invalid tile, compile or launch error,
wrong result) is a failed point, not an error. Exit 0 when at least one value ran as
asked; 1 when every value failed, or none shaped a launch (a split K the case cannot
make; on the CPU the interpreter's ignored stages and warps are exempt). The outputs are
written at the end: a sweep stopped part-way (exit 3, Ctrl-C) leaves none (an earlier
sweep's at those paths are removed as it starts measuring). matplotlib is imported only with --plot.
"""

from __future__ import annotations

import io
import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gemmgate import sweep
from gemmgate.cli_outputs import check_outputs
from gemmgate.cli_run import progress_bar
from gemmgate.deadline import cli_limit
from gemmgate.files import (
    clear_outputs,
    write_bytes_atomic,
    write_json_atomic,
    write_text_atomic,
)


def _f(x: float | None, fmt: str) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def print_sweep(result: sweep.Sweep, console: Console) -> None:
    s = result.spec
    table = Table(title=f"sweep {s.param}: {s.chip} {s.mode.name} {s.case.id}",
                  title_justify="left")
    for h in (s.param, "config", "Triton ms", "Triton TFLOP/s", "vendor TFLOP/s", "ratio",
              "status"):
        table.add_column(h, justify="left" if h in ("config", "status") else "right")
    style = {sweep.OK: None, sweep.FAILED: "red", sweep.IGNORED: "yellow"}
    for p in result.points:
        status = p.status + (f": {p.message}" if p.message else "")
        table.add_row(str(p.value), p.config or "—", _f(p.triton_ms, ".4g"),
                      _f(p.triton_tflops, ".4g"), _f(p.vendor_tflops, ".4g"),
                      _f(p.ratio, ".3g"), escape(status), style=style[p.status])
    console.print(table)
    best = result.best
    line = f"vendor {_f(result.vendor_tflops, '.4g')} TFLOP/s (median over the values)"
    if best is not None:
        line += (f"; best {s.param}={best.value}: {_f(best.triton_tflops, '.4g')} TFLOP/s, "
                 f"ratio {_f(best.ratio, '.3g')} (vendor time / Triton time)")
    console.print(line, highlight=False)


def sweep_png(result: sweep.Sweep) -> bytes:
    """The sweep's figure as PNG bytes."""
    from gemmgate import plots  # matplotlib: only with --plot

    s = result.spec
    fig = plots.sweep_curve(s.param, s.values, [p.triton_tflops for p in result.points],
                            [p.status for p in result.points], result.vendor_tflops,
                            f"{s.chip} {s.mode.name} {s.case.id}")
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=plots.DPI, metadata={"Software": None})
    return png.getvalue()


def sweep_command(args, console: Console, err: Console) -> int:
    if args.plot and not args.plot.lower().endswith(".png"):
        raise ValueError(f"--plot {args.plot}: the figure is a PNG; give a path ending .png")
    check_outputs((args.csv, "--csv"), (args.json, "--json"), (args.plot, "--plot"))
    spec = sweep.plan(args.param, args.shape, args.mode, args.values, chip=args.chip,
                      layout=args.layout, budget_s=args.budget, timing=args.timing,
                      case_timeout=cli_limit(args.case_timeout))
    ctx = spec.contexts[0]
    if ctx.selection.warning:
        err.print(f"[yellow]warning:[/] {ctx.selection.warning}")
    err.print(f"chip {spec.chip} ({ctx.selection.source}: {ctx.selection.device_name}), "
              f"{spec.mode.name} {spec.case.id}, {spec.param} over "
              f"{','.join(map(str, spec.values))}, timing {ctx.policy.method}")
    clear_outputs(args.csv, args.json, args.plot)   # written at the end: a stopped sweep
    with progress_bar(err) as bar:                   # leaves none, not an earlier one's
        task = bar.add_task("sweeping", total=len(spec.values))

        def tick(p: sweep.SweepPoint) -> None:
            bar.update(task, advance=1, description=f"{spec.param}={p.value} {p.status}")

        result = sweep.run_sweep(spec, on_point=tick)
    print_sweep(result, console)
    # the figure drawn before any file is written: a stop while matplotlib imports and
    # draws (most of a second) left --csv and --json without --plot, exit 130 or 143,
    # where a stopped sweep keeps none (a review). A figure that cannot be drawn still
    # leaves the data written, then is the error it was.
    png, not_drawn = None, None
    if args.plot:
        try:
            png = sweep_png(result)
        except Exception as e:  # noqa: BLE001 - raised once the data is written
            not_drawn = e
    if args.csv:
        write_text_atomic(args.csv, result.csv_text())
        err.print(f"wrote {escape(args.csv)}")
    if args.json:
        write_json_atomic(args.json, result.to_json())
        err.print(f"wrote {escape(args.json)}")
    if not_drawn is not None:
        raise not_drawn
    if png is not None:
        # as --csv and --json: through a symbolic link to its target (a link was replaced
        # by a file and its target deleted, a review), an OSError naming the file
        write_bytes_atomic(args.plot, png)
        err.print(f"wrote {escape(args.plot)}")
    if all(p.status == sweep.FAILED for p in result.points):
        err.print(f"[red]every value of {spec.param} failed[/]")
        return 1
    if not any(p.status == sweep.OK for p in result.points) and not (
            ctx.chip.device_type == "cpu" and spec.param in sweep.INTERPRETER_IGNORES):
        # (the interpreter has no stages nor warps; a split K cannot make is ignored on
        # the CPU as on a GPU: exit 0 there, a review)
        err.print(f"[red]no value of {spec.param} shaped a launch: none was measured as "
                  "asked (see each row's note)[/]")   # exit 0 on nothing; a review
        return 1
    return 0
