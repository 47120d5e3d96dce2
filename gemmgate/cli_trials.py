"""`gemmgate trials`: the gate's power and false-alarm rate, from fresh-process checks
with injected slowdowns (gemmgate/trials.py). Replaces the per-experiment device
scripts: one command with levels, repeats, a deadline, a reference and an output folder.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from gemmgate import baselines
from gemmgate.baseline_provenance import MEASURED_BY, measured
from gemmgate.chips import select_chip
from gemmgate.cli_outputs import baseline_shapes_file, check_outputs, shapes_file
from gemmgate.cli_run import check_floor, context_from_args
from gemmgate.context import first_device
from gemmgate.reference import resolve
from gemmgate.starter import starter_env
from gemmgate.trials import (
    MEASURED,
    TrialError,
    earlier_trials,
    parse_levels,
    power,
    rejudge,
    run_trials,
)

_FORWARD = ("chip", "shapes", "modes", "timing", "budget", "block", "devices", "case_timeout")


def _forwarded(args) -> list[str]:
    out = []
    for name in _FORWARD:
        value = getattr(args, name)
        if value is not None:
            out += [f"--{name.replace('_', '-')}", str(value)]
    return out + (["--retune"] if args.retune else [])


def trials_command(args, console, err) -> int:
    started = time.monotonic()   # --deadline counts from here, a calibration included
    if args.rejudge:
        return _rejudge(args, console, err)
    levels = parse_levels(args.levels)
    if args.floor is not None:
        raise ValueError("--floor is --rejudge's (a fresh check takes the baseline's own)")
    if args.deadline is not None and not args.deadline > 0:
        raise ValueError(f"--deadline must be > 0 seconds, got {args.deadline}")
    if args.repeats < 1:
        raise ValueError(f"--repeats must be at least 1, got {args.repeats}")
    if args.calibrate is not None and args.calibrate < 2:
        raise ValueError("--calibrate needs at least 2 runs (noise is their spread)")
    out = Path(args.out)
    check_outputs(*_outputs(out, measuring=True),
                  inputs=(shapes_file(args.shapes), (args.baseline, "--baseline")))
    earlier = earlier_trials(out)
    if earlier:   # hours of checks, not overwritten nor mixed with this run's
        raise ValueError(f"--out {out} holds an earlier trials run ({', '.join(earlier[:3])}"
                         f"{', ...' if len(earlier) > 3 else ''}: {len(earlier)} file(s)); "
                         "give a new folder, or move them away")
    chip_id = select_chip(args.chip, first_device(args)).chip.id
    base = Path(args.baseline or baselines.default_path(chip_id))
    ab = resolve(args.ab_ref) if args.ab_ref else None
    context_from_args(args)   # the checks' own arguments: bad ones are exit 2 here, not
    # in each child check
    common = _forwarded(args)
    if args.calibrate:
        cmd = [sys.executable, "-m", "gemmgate", "baseline", "calibrate", *common,
               "--runs", str(args.calibrate), "--output", str(base),
               "--keep-runs", str(out / "calibration")] + (["--ab-ref", ab] if ab else [])
        err.print(f"calibrating {escape(str(base))} ({args.calibrate} runs)")
        rc = subprocess.run(cmd, env=starter_env()).returncode
        if rc != 0:
            err.print(f"[red]calibration failed (exit {rc})[/]")
            return rc
    stored = baselines.load(base, chip_id)  # exit 2 before any check when unusable
    check_outputs(*_outputs(out, measuring=True),   # (and the baseline's shape file,
                  inputs=(baseline_shapes_file(args, stored.provenance),))   # each check's)
    _timed_as_baseline(args, stored.provenance, base)
    check_args = [*common, "--baseline", str(base)] + (["--ab-ref", ab] if ab else [])
    try:
        rows = run_trials(check_args, levels, args.repeats, out, args.deadline, err.print,
                          started)
    except TrialError as e:   # the child's exit: 2 bad input, 3 not measured to its end
        err.print(f"[red]gemmgate: error:[/] {escape(str(e))}")
        return e.code
    if not rows:   # the deadline passed before the first check: no power was measured
        err.print("[red]gemmgate: error:[/] no check ran (--deadline passed before the "
                  "first): nothing measured, no power to report")
        return 3
    ran = {float(r["injected"] or 0) for r in rows}
    unrun = [f"{lv * 100:g}%" for lv in dict.fromkeys(levels) if float(f"{lv:.5g}") not in ran]
    if unrun:   # a level the deadline left without a check was simply absent from the table
        err.print(f"[yellow]warning:[/] no check at injected {', '.join(unrun)} "
                  "(--deadline): not in the table")
    _print_power(rows, chip_id, out, console)
    return 0


def _outputs(out: Path, measuring: bool) -> tuple[tuple[str, str], ...]:
    """What a trials run writes in --out, for `check_outputs` before any work: checks.csv
    and the two summaries (only checks.csv was checked: a --shapes file there named
    cases_summary.csv was overwritten after the first check), and where it measures, a
    check's JSON as the first one is named (--out kernels/tuned failed in the first child
    check, after any --calibrate)."""
    names = ["checks.csv", "checks_summary.csv", "cases_summary.csv"]
    return tuple((str(out / n), "--out") for n in names + ["check_1_0.json"] * measuring)


def _timed_as_baseline(args, provenance: dict, base: Path) -> None:
    """--timing or --block given otherwise than the baseline was measured: every check
    warned only in its log, and its figures were judged against the baseline's (an A/A
    at --block 3 against a block-1 baseline: 100% false alarms, exit 0), where `trials
    --rejudge` refuses those very checks (trials._timed_as)."""
    for key, what in MEASURED_BY:
        given, was = getattr(args, key), measured(provenance, key)
        if given is not None and was is not None and given != was:
            raise ValueError(f"{what} {given}, but the baseline {base} was measured with "
                             f"{was}: the checks' figures would not be the baseline's; "
                             f"leave {what} out or give a baseline timed alike")


def _rejudge(args, console, err) -> int:
    """`trials --rejudge CHECK.json ... --baseline FILE --out DIR`: the recorded checks'
    cases judged again, offline, against another baseline."""
    if args.floor is not None:
        check_floor(args.floor)
    ignored = [flag for flag, given in (("--levels", args.levels != "0,0.03"),
                                        ("--repeats", args.repeats != 1),
                                        ("--calibrate", args.calibrate is not None),
                                        ("--deadline", args.deadline is not None),
                                        ("--ab-ref", args.ab_ref is not None),
                                        ("--retune", args.retune),
                                        *((f"--{name.replace('_', '-')}",
                                           getattr(args, name) is not None)
                                          for name in _FORWARD)) if given]
    if ignored:
        raise ValueError(f"--rejudge judges recorded checks: {', '.join(ignored)} would "
                         "change nothing; leave them out")
    out = Path(args.out)
    check_outputs(*_outputs(out, measuring=False),
                  inputs=((args.baseline, "--baseline"),
                          *((p, "--rejudge") for p in args.rejudge)))
    measured = [f for f in earlier_trials(out) if MEASURED.fullmatch(f)]
    if measured:   # its checks.csv (the children's exits, its own judgement) was replaced
        # by this one's, beside check files judged otherwise (a review); an earlier
        # rejudge's output there is replaced, as asked
        raise ValueError(f"--out {out} holds a measured trials run ({', '.join(measured[:3])}"
                         f"{', ...' if len(measured) > 3 else ''}): its checks.csv would be "
                         "replaced; give another folder")
    if not args.baseline:  # offline: the chip comes from the file, no device is needed
        raise ValueError("--rejudge needs --baseline FILE")
    base = baselines.load(Path(args.baseline))
    rows = rejudge(args.rejudge, base, out, args.floor, said=lambda m: err.print(escape(m)))
    _print_power(rows, base.chip, out, console)
    return 0


def _print_power(rows, chip_id: str, out: Path, console) -> None:
    t = Table(title=f"gate power on {chip_id}", title_justify="left")
    for h in ("injected", "checks", "case checks", "flagged regressed", "fraction",
              "improved", "checks red"):
        t.add_column(h, justify="right")
    for level, p in power(rows).items():
        frac = p["regressed"] / p["judged"] if p["judged"] else float("nan")
        t.add_row(f"{level * 100:g}%", str(p["checks"]), str(p["judged"]),   # 0.4%, not 0%
                  str(p["regressed"]), "—" if frac != frac else f"{frac:.1%}",
                  str(p["improved"]), str(p["red"]))
    console.print(t)
    console.print(f"wrote {escape(str(out / 'checks.csv'))}")
