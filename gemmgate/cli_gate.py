"""`gemmgate check` (the regression gate) and `gemmgate baseline update|calibrate`
(`merge`: cli_merge.py): parse-level checks, then the harness (gate.py, baselines.py,
calibrate.py), then output."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from gemmgate import baselines
from gemmgate.baseline_provenance import (
    measured,
    recorded_commit,
    unlike_kept,
    unlike_model,
    unlike_software,
)
from gemmgate.calibrate import CalibrationError, fresh_runs
from gemmgate.chips import select_chip
from gemmgate.cli_merge import levels, merge_command, summary_table, warn_lost, warn_wide
from gemmgate.cli_outputs import BASELINE_OUTPUT, baseline_shapes_file, check_outputs, shapes_file
from gemmgate.cli_run import (
    RUNNING,
    append_summary,
    check_floor,
    context_from_args,
    execute,
    keep_partial,
    mark_running,
    provider_files,
    say_stderr,
    stops_before_cases,
    timed_as,
    write_partial,
)
from gemmgate.compare import REGRESSED
from gemmgate.context import MeasurementError, first_device
from gemmgate.files import clear_outputs, write_json_atomic, write_text_atomic
from gemmgate.gate import compare_run, remeasure
from gemmgate.gate_text import (
    GATE_HEAD,
    annotations,
    clock_note,
    comment,
    injected_note,
    markdown,
    software_note,
    verdict_row,
)
from gemmgate.precision import parse_modes
from gemmgate.reference import resolve, same_kernels
from gemmgate.report import print_tables
from gemmgate.results import RunRecord
from gemmgate.shapes import resolve as shape_set
from gemmgate.stop_signal import stopped_by


def _modes_arg(args, base) -> str | None:
    if args.modes is not None or not base:
        return args.modes
    return ",".join(base.provenance.get("modes") or []) or None   # (null: every mode)


def check_command(args, console, err) -> int:
    floor = check_floor(args.floor)
    if not 0 <= args.inject_slowdown <= 10:
        raise ValueError("--inject-slowdown must be between 0 and 10")
    pr_comment = getattr(args, "comment", None)
    with stops_before_cases(args.json, args.shapes or "", checked=False):   # (the chip:
        chip_id = select_chip(args.chip, first_device(args)).chip.id   # CUDA starts,
        # seconds)
        path = args.baseline if args.baseline is not None else \
            baselines.default_path(chip_id)
        check_outputs((args.json, "--json"), (pr_comment, "--comment"),
                      append=args.summary,
                      inputs=((str(path), "--baseline"), shapes_file(args.shapes),
                              *provider_files(args)))   # (a provider's source was
    # written over by --json, which run refuses; a review)
    with stops_before_cases(args.json, args.shapes or ""):   # a stop here: a run of no
        base, ab_sha, ctx = _set_up(args, err, path, chip_id, floor)   # case, incomplete
    clear_outputs(pr_comment)   # written at the end: a check that stopped (Ctrl-C, exit 3)
    # left an earlier check's comment there, whole, looking like this one's (a review)
    try:
        record = execute(ctx, err, args.json)
    except MeasurementError as e:   # judged nothing: what was measured is kept, unjudged
        keep_partial(e, args.json, err)
        raise
    env = record.environment

    def first_pass(reason: str) -> RunRecord:   # measured in full, judged by nothing
        return RunRecord({**env, "incomplete": f"re-measure: {reason}"}, record.shapes,
                         record.cases)

    def last_words() -> None:   # a re-measured case stuck past --case-timeout
        write_partial(args.json, first_pass("a case was stuck past --case-timeout"),
                      say_stderr)

    software = software_note(base.provenance, env)
    try:   # judged, then kept in --json before anything is printed
        gate = compare_run(record.cases, base, floor, env)
        results = record.cases
        if not args.no_remeasure:
            mark_running(args.json, first_pass(RUNNING), err)   # the first pass, marked
            results, gate = remeasure(ctx, results, gate, base, floor, env, last_words)
        if args.json:
            data = type(record)(record.environment, record.shapes, tuple(results)).to_json()
            data["gate"] = {"baseline": str(path), "failed": gate.failed, "floor": floor,
                            "verdicts": [v.to_json() for v in gate.verdicts],
                            "missing": list(gate.missing), "extra": list(gate.extra),
                            "inject_slowdown": args.inject_slowdown, "ab_ref": ab_sha,
                            "software": software}
            write_json_atomic(args.json, data)
    except MeasurementError as e:   # in the re-measure
        e.partial = first_pass(str(e))
        keep_partial(e, args.json, err)
        raise
    except KeyboardInterrupt as e:   # Ctrl-C or SIGTERM: the first pass is kept
        write_partial(args.json, first_pass(stopped_by(e)), say_stderr)
        raise
    print_tables(results, console, title=f"{chip_id} {ctx.shapes_label}")
    clocks = clock_note(results)
    injected = injected_note(args.inject_slowdown)
    notes = "\n\n".join(n for n in (injected, software, clocks) if n)
    console.print(_gate_table(gate))
    for what, keys_ in (("not run (in the baseline)", gate.missing),
                        ("not in the baseline (new cases: accuracy, and A/B with "
                         "--ab-ref)", gate.extra)):
        if keys_:
            err.print(f"[yellow]note:[/] {len(keys_)} {what}: {', '.join(keys_)}")
    for note in (injected, software, clocks):
        if note:
            # (the baseline's provenance text: "2.0[/]" was a MarkupError, exit 1; a review)
            err.print(f"[yellow]note:[/] {escape(note)}")
    for line in annotations(gate, args.inject_slowdown):
        print(line, flush=True)
    if pr_comment:  # after --json, before the summary; posted by .github/workflows/gpu.yml
        write_text_atomic(pr_comment, comment(gate, chip_id, ab_sha, notes))
    append_summary(args.summary, markdown(gate, chip_id, ab_sha, notes), err)
    return 1 if gate.failed else 0


def _set_up(args, err, path, chip_id: str, floor: float):
    """`check`'s baseline, A/B commit and run context, before any work (ValueError on bad
    input), with its warnings."""
    base = baselines.load(path, chip_id)  # before any work: a bad file is exit 2
    check_outputs((args.json, "--json"), (getattr(args, "comment", None), "--comment"),
                  append=args.summary,
                  inputs=(baseline_shapes_file(args, base.provenance),))
    ab_sha = _ab_commit(args.ab_ref, base)
    timed_as(args, base.provenance)   # --timing and --block as the baseline's
    modes = _modes_arg(args, base)
    own = None if args.shapes else _own_cases(base, modes, err)
    ctx = context_from_args(args, shapes=args.shapes or base.provenance.get("shapes"),
                            modes=modes, reference=ab_sha, slowdown=args.inject_slowdown,
                            cases=own, cases_label="the baseline's cases")
    model = unlike_model(base.chip, base.provenance,
                         {"device_name": ctx.selection.device_name}, len(base.cases))
    if model:   # (merge and update refuse another model's cases; a check judged them)
        err.print(f"[yellow]warning:[/] the baseline {escape(str(path))} was measured on "
                  f"{escape(str(base.provenance.get('device_name')))}, this GPU is "
                  f"{escape(ctx.selection.device_name)}: a {escape(base.chip)} baseline is "
                  "one GPU model's, and its stored figures are not this GPU's")
    for given, key, what in ((ctx.policy.method, "timing", "--timing"),
                             (ctx.policy.block, "block", "--block")):
        was = measured(base.provenance, key)   # (no block recorded: 1)
        if was not in (None, given):
            err.print(f"[yellow]warning:[/] {what} {given}, but the baseline was measured "
                      f"with {escape(str(was))}: its figures are not this timing's")
    if not args.shapes:   # the baseline's own cases too: a merge or update that added
        ctx = _with_baseline_cases(args, ctx, base, own is None)   # cases keeps its first
        # shapes label
    keys = {c.key(m.name) for m, c in ctx.items}
    if not keys & set(base.cases) and not ab_sha:   # before any work: nothing to judge is
        # not a pass (with --ab-ref, a case the baseline lacks is judged by A/B alone)
        raise ValueError(f"no case of {ctx.shapes_label} ({', '.join(m.name for m in ctx.modes)})"
                         f" is in the baseline {path} ({len(base.cases)} cases): nothing to "
                         "judge; pick its --shapes and --modes, or `baseline update` it")
    no_ab = sorted(k for k in keys if k not in base.cases or base.cases[k].noise.ab is None)
    if ab_sha and not base.has_ab_noise:
        err.print("[yellow]warning:[/] the baseline has no A/B noise: every A/B "
                  f"tolerance is the {floor:.1%} floor (small kernels differ by "
                  "more between processes); recalibrate with --ab-ref HEAD")
    elif ab_sha and no_ab:   # (said only where none had it: a review)
        err.print(f"[yellow]warning:[/] {len(no_ab)} case(s) have no A/B noise in the "
                  f"baseline (or are not in it): their A/B tolerance is the {floor:.1%} "
                  f"floor; recalibrate them with --ab-ref HEAD: "
                  f"{escape(', '.join(no_ab[:5]))}"
                  + (" ..." if len(no_ab) > 5 else ""))
    return base, ab_sha, ctx


def _own_cases(base, modes: str | None, err) -> list | None:
    """The baseline's own cases (of `modes`, where named) where its shapes label names no
    shape set here, else None (the label's set is run). A label that a merge of check
    files took from them ("pr and 2 more case(s) of the baseline"), or a shape file's path
    relative to where it was updated, made `check` exit 2 on a usable baseline (a review)."""
    label = base.provenance.get("shapes")
    if label is None:
        return None
    try:
        shape_set(label)
        return None
    except (ValueError, OSError) as e:
        err.print(f"note: the baseline's shapes {escape(repr(label))} name no shape set here "
                  f"({escape(str(e))}); checking the baseline's own cases")
    # (parsed as --modes is everywhere: " fp32" held no case, "FP32" was not unknown)
    own = _cases_of(base, {m.name for m in parse_modes(modes)} if modes else None)
    if not own:
        raise ValueError(f"the baseline holds no case of --modes {modes}: nothing to judge")
    return own


def _with_baseline_cases(args, ctx, base, of_a_set: bool):
    """`ctx` with the baseline's cases of its modes that its shape set lacks (a baseline
    merged or updated from other shapes keeps its first --shapes label: those cases were
    left out, said only as a note, and the check passed), each in the modes the baseline
    holds it in; `of_a_set`: `ctx` runs a shape set in every mode (else the baseline's
    own cases, each in its own modes alone)."""
    modes = {m.name for m in ctx.modes}
    held = frozenset((c.mode, c.case) for c in base.cases.values() if c.mode in modes)
    only = held | {(m.name, c) for m in ctx.modes for c in ctx.cases} if of_a_set else held
    have = set(ctx.cases)
    more = [c for c in _cases_of(base, modes) if c not in have]
    if more:
        ctx = context_from_args(args, modes=",".join(m.name for m in ctx.modes),
                                block=ctx.policy.block, reference=ctx.reference,
                                slowdown=ctx.slowdown, cases=(*ctx.cases, *more),
                                cases_label=f"{ctx.shapes_label} and {len(more)} more "
                                            "case(s) of the baseline")
    return replace(ctx, only=only)


def _cases_of(base, modes: set[str] | None) -> list:
    """The baseline's cases of `modes` (None: every mode), each once, in its order."""
    return list(dict.fromkeys(c.case for c in base.cases.values()
                              if modes is None or c.mode in modes))


def _ab_commit(ref: str | None, base) -> str | None:
    """The commit id for --ab-ref (before any work: a bad ref is exit 2)."""
    if not ref:
        return None
    if ref == "baseline":
        ref = recorded_commit(base, "--ab-ref baseline")
    return resolve(ref)


def _gate_table(gate) -> Table:
    t = Table(title="regression gate", title_justify="left")
    for h in GATE_HEAD:
        t.add_column(h, no_wrap=h == "case")
    for v in gate.verdicts:
        style = "red" if v.verdict in (REGRESSED, "failed") else None
        t.add_row(*map(escape, verdict_row(v)), style=style)   # (a note's "[/dev/x]" was
        # a MarkupError before the comment and the summary were written; a review)
    return t


def _software() -> dict:
    """This process's Triton and torch, as its runs' environment records them."""
    import torch
    import triton

    return {"triton": triton.__version__, "torch": torch.__version__}


def baseline_command(args, console, err) -> int:
    if args.action == "merge":
        return merge_command(args, console, err)
    # update measures once and keeps the stored noise; calibrate measures the noise, the
    # runs' spread. Each took the other's --runs and became it, said nowhere (calibrate
    # --runs 1 kept the old noise; update --runs 2 replaced it; a review)
    if args.action == "update" and args.runs != 1:
        raise ValueError(f"--runs {args.runs}: update measures once and keeps the stored "
                         "noise; `baseline calibrate --runs N` measures the noise")
    if args.action == "calibrate" and args.runs < 2:
        raise ValueError(f"--runs {args.runs}: calibrate needs at least 2 runs (the noise "
                         "is their spread); `baseline update` measures once")
    chip_id = select_chip(args.chip, first_device(args)).chip.id
    out = args.output if args.output is not None else str(baselines.default_path(chip_id))
    keep = Path(args.keep_runs) if getattr(args, "keep_runs", None) else None
    if keep is not None and any(keep.glob("run*.json")):   # merged later, runs of two
        raise ValueError(f"--keep-runs {keep} holds runs of an earlier calibration "   # mix
                         "(run*.json): give an empty folder")
    # every run's file, not only the first's: an --output at run2.json was refused only
    # after all the runs (a review)
    kept_runs = [(str(keep / f"run{i}.json"), "--keep-runs")
                 for i in range(1, args.runs + 1)] if keep else []
    check_outputs((out, BASELINE_OUTPUT), *kept_runs,
                  inputs=(shapes_file(args.shapes),))
    path = Path(out)
    old = baselines.existing(path, chip_id)   # before any work: an unusable file is exit 2
    ab_sha = same_kernels(args.ab_ref) if getattr(args, "ab_ref", None) else None
    # No pins: the kernel's own dispatch (its committed tuning table) is what is measured,
    # so a retuned table shows up in the next baseline and in a PR's check.
    ctx = context_from_args(args, reference=ab_sha)
    if old:   # before any work: cases kept beside these must have been timed alike
        keys = {c.key(m.name) for m, c in ctx.items}
        kept_n = sum(k not in keys for k in old.cases)
        unlike = unlike_kept(old.provenance, {"timing": ctx.policy.method,
                                              "block": ctx.policy.block}, kept_n) or \
            unlike_software(old.provenance, _software(), kept_n) or \
            unlike_model(old.chip, old.provenance,
                         {"device_name": ctx.selection.device_name}, kept_n)
        if unlike:
            raise baselines.BaselineError(f"{path}: {unlike}; nothing measured")
    try:
        if keep:
            keep.mkdir(parents=True, exist_ok=True)
        if args.runs == 1:
            records = [execute(ctx, err)]
            if keep:
                write_json_atomic(keep / "run1.json", records[0].to_json())
        else:
            records = fresh_runs(ctx, args.runs, keep, on_run=err.print)
    except CalibrationError as e:
        raise CalibrationError(f"{e}; baseline not written") from None   # exit 3
    bad = sorted({c.key for r in records for c in r.cases if not c.passed})
    if bad:
        err.print(f"[red]accuracy failures, baseline not written:[/] {', '.join(bad)}")
        return 1
    measured = baselines.build(records, chip_id, ctx.shapes_label)
    new, old, kept = baselines.write_merged(
        path, chip_id, measured, on_wait=lambda m: err.print(f"note: {escape(m)}"))
    if len(records) < 2 and baselines.noise_timed_otherwise(old, measured):
        err.print("[yellow]warning:[/] the file's stored noise was measured with another "
                  "timing method or --block than this update, so none is kept: its cases "
                  "are judged at the floor until `baseline calibrate` measures it again")
    if kept:
        console.print(f"kept {len(kept)} case(s) of the old baseline that this run did not "
                      "measure")
    if old:
        console.print(summary_table(baselines.summary(old), baselines.summary(new)))
    console.print(f"wrote {escape(str(path))} ({len(new.cases)} cases, {len(records)} run(s), "
                  f"{levels(new)})")
    warn_lost(err, old, new)
    warn_wide(err, new)
    return 0
