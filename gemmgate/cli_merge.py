"""`gemmgate baseline merge`: calibrations made on several machines (and fleets' run
files) pooled into one baseline; and the lines every baseline write prints (`levels`,
`summary_table`), shared with `baseline update|calibrate` (cli_gate)."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from gemmgate import baselines
from gemmgate.baseline_provenance import (
    MEASURED_BY,
    calibration_mark,
    commits,
    measured,
    run_id,
    run_ids,
)
from gemmgate.chips import GENERIC_GPU, other_model
from gemmgate.cli_outputs import BASELINE_OUTPUT, check_outputs
from gemmgate.compare import DEFAULT_FLOOR, band
from gemmgate.files import json_schema
from gemmgate.gate_levels import MACHINE, PROCESS, stored_tolerance
from gemmgate.reference import kernels_alike, kernels_differ
from gemmgate.results import REFERENCE, RUN_SCHEMA, RunRecord


def levels(base) -> str:
    """Which noise levels the written baseline holds, for the user to see."""
    n = len(base.cases)
    ab = sum(c.noise.ab is not None for c in base.cases.values())
    machine = sum(c.noise.machine is not None for c in base.cases.values())
    return (f"noise: A/B {ab}/{n} cases, machine-level {machine}/{n} cases over "
            f"{len(base.machines)} machine(s)")


LOST = {   # why a write loses a level, and what the user can do
    "machine-level": "these runs replace the runs the file held from other machines, whose "
                     "checks are now advisory; merge their calibrations again (`gemmgate "
                     "baseline merge`, the file among the inputs to pool with it)",
    "A/B": "these runs timed no A/B (calibrate with --ab-ref HEAD), or those that did were "
           "left out of the case (another tile), so `check --ab-ref` judges those cases at "
           "the floor (--floor, 1.5% by default)",
}


def warn_lost(err, old, new) -> None:
    """The warning every baseline write (update, calibrate, merge) gives for each noise
    level its cases held in the file and lost (`baselines.lost_levels`): a merge said
    nothing where update warned (a review)."""
    for level, keys in baselines.lost_levels(old, new).items():
        err.print(f"[yellow]warning:[/] {len(keys)} case(s) lost their {level} noise: "
                  f"{LOST[level]}: {escape(', '.join(keys[:5]))}"
                  + (" ..." if len(keys) > 5 else ""))


WIDE = 0.5   # a tolerance past which a slowdown by half passes: the gate is off there


def warn_wide(err, base) -> None:
    """The warning every baseline write gives for cases whose stored noise makes a
    tolerance past WIDE at the floor's default, per level: the process level (a check on
    a machine of the calibration) and the machine level (a check on another GPU without
    --ab-ref). The figure is honest, but such a case passes almost any slowdown (a
    calibration on a loaded machine stored +-548% and a 6x slowdown passed, silently; a
    review). The machine level was not looked at where a process figure existed, and two
    machines' 1% spread is -38%/+62% at x48.2 on a third GPU (a review)."""
    wide: dict[str, list[str]] = {"ratio": [], "machine": []}
    for key, c in base.cases.items():
        for level, tol in _widest(c).items():
            if tol > WIDE:   # (the band the gate prints: "+-54%" was -35%/+54%)
                wide[level].append(f"{key} ({band(tol)})")
    advice = {"ratio": ("", "calibrate them again on a quiet machine, with more runs"),
              "machine": (" at machine level (a check on another GPU without --ab-ref)",
                          "merge calibrations of three or more machines, or check with "
                          "--ab-ref")}
    for level, named in wide.items():
        if named:
            where, fix = advice[level]
            err.print(f"[yellow]warning:[/] {len(named)} case(s) store noise that passes a "
                      f"slowdown of over {WIDE:.0%}{where}: {escape(', '.join(named[:5]))}"
                      + (" ..." if len(named) > 5 else "") + f"; {fix}")


# a machine name no calibration lists: a check on another GPU
_OUTSIDE = "\0another machine"


def _widest(c) -> dict[str, float]:
    """Per level ("ratio": a check on a machine of the calibration; "machine": on another
    GPU), the widest tolerance the gate gives (`gate_levels.stored_tolerance`, at the
    floor's default) the figure that decides `c`'s stored judgement there: its speed
    ratio, or Triton's TFLOP/s where no ratio is stored (twice the floor; it had not been
    looked at: a 30% spread was -59%/+144% at the gate, unwarned; a review). Asked of the
    gate, so the warning cannot drift from the verdict:
    - on a machine of the calibration a machine of one run compares that run's figure
      (`compare.ONE_RUN_FACTOR`: after `baseline update`, a 13% spread of 5 runs was +56%
      at the gate, x3.21, and unwarned here at +42%, x2.5), and with no process figure
      (every machine gave one run) the machine level's spread judges there (three
      machines of one run, 6.5% apart: -36.6%/+57.7% on each, x6.78, where the warning
      took the machine level's x5.55 alone and said nothing; a review);
    - on another GPU, the pooled runs' machine-level figure."""
    n = c.noise
    figure = "ratio" if c.ratio is not None else "tflops"
    own, pooled = (n.ratio, n.machine) if figure == "ratio" else (n.tflops, n.tflops_machine)
    out: dict[str, float] = {}
    if (own is not None or pooled is not None) and n.machines:
        out["ratio"] = max(stored_tolerance(c, PROCESS, m, DEFAULT_FLOOR, figure).tolerance
                           for m in n.machines)
    if pooled is not None:
        out["machine"] = stored_tolerance(c, MACHINE, _OUTSIDE, DEFAULT_FLOOR,
                                          figure).tolerance
    return out


def merge_command(args, console, err) -> int:
    """`gemmgate baseline merge A.json B.json ... --output OUT`: calibrations made on
    several machines become one baseline with machine-level noise. Inputs may also be
    run JSONs (`gemmgate run/check --json`, e.g. a fleet's A/A checks): together they
    count as one more calibration, each run a fresh process on its own machine."""
    if len(args.inputs) < 2:
        raise ValueError("baseline merge needs at least two files")
    notes: list[str] = []
    parts, names = _merge_inputs(args.inputs, notes)
    merged = baselines.combine(parts)   # before the lock: bad inputs are exit 2 here
    given = args.output if args.output is not None else str(baselines.default_path(
        parts[0].chip))
    check_outputs((given, BASELINE_OUTPUT))
    out = Path(given)
    is_input = out.resolve() in {Path(p).resolve() for p in args.inputs}
    if is_input and any(Path(p).resolve() == out.resolve() and _is_run(p) for p in args.inputs):
        raise ValueError(f"--output {given} is a run file among the inputs: the baseline "
                         "written there would destroy it; give another path")
    if not is_input:
        baselines.existing(out, parts[0].chip)   # an unusable file is exit 2, unlocked
    with baselines.locked(out):
        old = None
        # the file as it was, for the levels its cases lose (`warn_lost`): onto one of its
        # inputs, as README advises, a merge said none (a review)
        before = baselines.existing(out, parts[0].chip)
        if is_input:   # read again under the lock: an update that landed since is merged
            parts, names = _merge_inputs(args.inputs)
            merged = baselines.combine(parts)
        else:
            old = before
        skipped = baselines.other_tiles(parts)
        # the file's cases that no input holds stay as they are (as `update` keeps them):
        # merging calibrations of a few cases onto the baseline loses none of the others
        merged, kept = baselines.merge(merged, old)
        baselines.save(out, merged)
    for note in notes:
        err.print(f"[yellow]note:[/] {escape(note)}")
    if kept:
        console.print(f"kept {len(kept)} case(s) of {escape(str(out))} that no input holds")
    if old:
        console.print(summary_table(baselines.summary(old), baselines.summary(merged)))
    console.print(f"wrote {escape(str(out))} ({len(merged.cases)} cases from "
                  f"{len(args.inputs)} files, {levels(merged)})")
    warn_lost(err, before, merged)
    warn_wide(err, merged)
    if skipped:
        console.print(f"{len(skipped)} case(s) ran on another tile in some inputs; those "
                      "inputs were left out of them (a kernel change is not machine "
                      "noise; `gemmgate baseline update` takes the new tiles):")
        for key, idx in skipped.items():
            console.print(f"  {key}: {escape(', '.join(names[i] for i in idx))}")
    return 0


def _merge_inputs(inputs: list[str], notes: list[str] | None = None
                  ) -> tuple[list, list[str]]:
    """(the parts `combine` pools, each part's name for the messages): the baselines, and
    the run files built into one more calibration. What was left out of a run is said in
    `notes`."""
    notes = [] if notes is None else notes
    parts, runs, names, run_names = [], [], [], []
    # An input given twice would pool its runs twice. A run file is its content once (two
    # runs of a second may hold the same environment, never the same timing samples: a
    # copy of a run is the run); a calibration, its provenance.
    seen: dict[str, str] = {}
    for p in inputs:
        if _is_run(p):
            runs.append(_calibration_run(p, notes))
            run_names.append(p)
            mark = "run " + hashlib.sha256(Path(p).read_bytes()).hexdigest()
        else:
            parts.append(baselines.load(p))
            if not parts[-1].cases:   # (as a run with none: merged, two such wrote a
                # baseline of 0 cases, exit 0, and one beside a calibration counted its
                # runs in the provenance, 5 runs where 3 were behind the cases; a review)
                raise ValueError(f"{p}: the baseline holds no cases, so it cannot calibrate "
                                 "a baseline")
            names.append(p)
            mark = calibration_mark(parts[-1])
        if mark in seen:
            raise ValueError(f"baseline merge: {p} holds the same calibration as "
                             f"{seen[mark]}; give each input once (its runs would count "
                             "twice)")
        seen[mark] = p
    _one_chip([(p.chip, n) for p, n in zip(parts, names)]
              + [(r.environment.get("chip"), n) for r, n in zip(runs, run_names)])
    records = [(p.provenance, n) for p, n in zip(parts, names)] + \
        [(r.environment, n) for r, n in zip(runs, run_names)]
    _same_measurement(records)
    _one_model(parts[0].chip if parts else runs[0].environment.get("chip"), records)
    _same_software(records, notes)
    _same_kernels([(commits(p), p.provenance.get("dirty"), n) for p, n in zip(parts, names)]
                  + [([r.environment.get("commit")], r.environment.get("dirty"), n)
                     for r, n in zip(runs, run_names)], notes)
    _each_run_once([(run_ids(p), n) for p, n in zip(parts, names)]
                   + [([run_id(r)], n) for r, n in zip(runs, run_names)])
    if runs:
        names.append("the run files")
        parts.append(baselines.build(runs, runs[0].environment["chip"], runs[0].shapes))
    return parts, names


def _one_chip(chips: list[tuple[str | None, str]]) -> None:
    """ValueError unless every input is of one chip, said first: two chips' files were
    refused for another timing method, the first difference found (a review)."""
    none = [n for c, n in chips if not isinstance(c, str)]
    if none:
        raise ValueError(f"baseline merge: {none[0]} records no chip")
    seen: dict[str, str] = {}
    for c, n in chips:
        seen.setdefault(c, n)
    if len(seen) > 1:
        said = ", ".join(f"{c} ({n})" for c, n in seen.items())
        raise ValueError(f"baseline merge: the inputs are of different chips: {said}; "
                         "a baseline is one chip's")


def _each_run_once(held_by: list[tuple[list[str], str]]) -> None:
    """ValueError where a run is behind two inputs (a calibration and its own --keep-runs
    file, or two merges of one run): pooled twice, its medians would count as two runs,
    and the tolerance's factor for few runs would shrink (2 runs: x48; 4: x3.4)."""
    held: dict[str, str] = {}
    for ids, name in held_by:
        for rid in ids:
            if rid in held and held[rid] != name:
                raise ValueError(f"baseline merge: a run is in both {held[rid]} and {name} "
                                 "(a calibration's --keep-runs file, or an input merged "
                                 "already); give each run once (it would count twice)")
            held.setdefault(rid, name)


def _same_measurement(records: list[tuple[dict, str]]) -> None:
    """The inputs of a merge were timed alike (method, --block), where they record it:
    pooled, another method's offset would pass for machine noise."""
    for key, what in MEASURED_BY:
        said = _differing(records, lambda rec, k=key: measured(rec, k))
        if said:
            raise ValueError(f"baseline merge: the inputs were measured with another "
                             f"{what}: {said}; merge calibrations timed alike")


# a compiler's or library's offset on one input would pass for machine noise (a review:
# a 3.6 calibration pooled with 3.9 ones widened the tolerance 4x, and the merged file said
# 3.9): refused; a driver or CUDA runtime of its own is said, as fleets differ there
_ONE_STACK, _SAID_STACK = ("triton", "torch"), ("cuda", "hip", "driver")


def _one_model(chip: str | None, records: list[tuple[dict, str]]) -> None:
    """ValueError where the inputs ran on other GPU models (`chips.other_model`): of the
    generic profile (every GPU no profile names shares its id), GPUs of other names (an
    Ada card's and a V100's calibrations pooled as one chip's machine noise); of a named
    chip, a device that is not its own part (an H200 run as nvidia-h100; a review)."""
    said = _differing(records, lambda rec: rec.get("device_name") or None)
    names = list(dict.fromkeys(str(rec.get("device_name")) for rec, _ in records
                               if rec.get("device_name")))
    if not said or not any(other_model(str(chip), a, b) for a in names for b in names):
        return
    if chip == GENERIC_GPU.id:
        raise ValueError(f"baseline merge: the inputs are {GENERIC_GPU.id}s of other "
                         f"names: {said}; a baseline of the generic profile is one GPU "
                         "model's: merge calibrations of one model")
    # (a named chip: an H200's run with GEMMGATE_CHIP=nvidia-h100, warned of when it ran,
    # pooled with H100s' as machine noise, the file naming the first's device; a review)
    raise ValueError(f"baseline merge: the {chip} inputs ran on other GPU models or "
                     f"parts: {said}; a baseline is one GPU model's: merge calibrations "
                     "of one model")


def _same_software(records: list[tuple[dict, str]], notes: list[str]) -> None:
    """The inputs of a merge ran one Triton and one torch (ValueError otherwise); other
    CUDA/HIP runtimes or drivers are said in `notes`."""
    for key in (*_ONE_STACK, *_SAID_STACK):
        said = _differing(records, lambda rec, k=key: str(rec[k]) if rec.get(k) else None)
        if said and key in _ONE_STACK:
            raise ValueError(f"baseline merge: the inputs ran another {key}: {said}; its "
                             "offset would pass for machine noise: merge calibrations of "
                             "one Triton and torch")
        if said:
            notes.append(f"the inputs ran another {key} ({said}): its offset counts as "
                         "machine noise here")


def _same_kernels(inputs: list[tuple[list, object, str]], notes: list[str]) -> None:
    """ValueError where an input was measured on other kernels/ than the first input's
    commit holds (git says so): pooled, a kernel change passed for machine noise (a
    30 ms sleep in kernels.matmul took a case's stored noise from 5% to 36%, no tile
    moved; a review). An input whose kernels git cannot tell (no commit recorded, one not
    in this repository, a dirty tree) is said in `notes`."""
    first = next((c for shas, _, _ in inputs for c in shas if c), None)
    unknown = []
    for shas, dirty, name in inputs:
        said = [c for c in shas if c]
        if dirty is True or len(said) < len(shas) or first is None:
            unknown.append(name)
            continue
        differ = [kernels_differ(first, c) if c != first else False for c in said]
        if any(d is True for d in differ):
            other = said[differ.index(True)]
            raise ValueError(f"baseline merge: {name} was measured at {other[:12]}, whose "
                             f"kernels/ is not {first[:12]}'s: a kernel change is not "
                             "machine noise; merge calibrations of one kernel "
                             "(`gemmgate baseline update` measures a new one)")
        if any(d is None for d in differ):
            unknown.append(name)
    if unknown:
        notes.append(f"whether the kernels/ of {', '.join(unknown)} "
                     f"{'is' if len(unknown) == 1 else 'are'} the first input's could not be "
                     "told (no commit, a commit git does not hold, or a tree that differed "
                     "from its commit): they are pooled as one kernel's")


def _differing(records: list[tuple[dict, str]], value_of) -> str:
    """'value (input), ...', each value with the first input recording it, where the
    inputs record more than one (`value_of(record)`, None where one records none); ''."""
    seen: dict = {}
    for rec, name in records:
        value = value_of(rec)
        if value is not None:
            seen.setdefault(value, name)
    return ", ".join(f"{v} ({n})" for v, n in seen.items()) if len(seen) > 1 else ""


def _is_run(path: str) -> bool:
    """A run JSON (schema gemmgate.run/1) rather than a baseline file; unreadable or
    non-JSON files are left to the baseline loader, whose message names the file."""
    return json_schema(path) == RUN_SCHEMA


def _calibration_run(path: str, notes: list[str]) -> RunRecord:
    """A run that may calibrate: no injected slowdown, no accuracy failure, no extras.
    Its A/B samples count as A/B noise only against the same kernels (`_ab_is_aa`);
    otherwise they are left out, said in `notes`."""
    rec = RunRecord.load(path)
    if not rec.cases:
        raise ValueError(f"{path}: the run holds no cases, so it cannot calibrate a baseline")
    env = rec.environment
    if env.get("incomplete"):
        raise ValueError(f"{path}: a run that stopped part way ({env['incomplete']}) cannot "
                         "calibrate a baseline")
    if env.get("inject_slowdown"):
        raise ValueError(f"{path}: a run with an injected slowdown "
                         f"({env['inject_slowdown']}) cannot calibrate a baseline")
    if env.get("providers"):
        raise ValueError(f"{path}: a run with extra providers ({env['providers']}) cannot "
                         "calibrate a baseline")
    if env.get("copies") == "per-call":
        raise ValueError(f"{path}: a run with --copies per-call cannot calibrate a baseline "
                         "(baselines are measured with kept copies)")
    bad = [c.key for c in rec.cases if not c.gate_passed]
    if bad:
        raise ValueError(f"{path}: accuracy failures cannot calibrate a baseline: "
                         f"{', '.join(bad[:5])}")
    ref = env.get("ab_ref")
    if ref and any(REFERENCE in c.providers for c in rec.cases) and not _ab_is_aa(ref, env):
        notes.append(f"{path}: its A/B samples were left out: its kernels/ is not known to "
                     f"be --ab-ref {str(ref)[:12]}'s (a kernel change is not A/B noise)")
        rec = RunRecord(rec.environment, rec.shapes, tuple(
            replace(c, providers={n: p for n, p in c.providers.items() if n != REFERENCE})
            for c in rec.cases))
    return rec


def _ab_is_aa(ref: str, env: dict) -> bool:
    """Whether a run's A/B timed its own kernels against themselves (A/A): its kernels/
    was the reference's when it ran (`ab_kernels_same`, recorded since session 71: an edit
    elsewhere in the tree, as on a device's copy, is no kernel change); for an older run,
    its tree was its commit's (not dirty) and the reference commit holds the same kernels/
    (that commit, or git says so). A PR check's --json is timed against its merge base:
    pooled, its medians made a kernel change of 30% into A/B noise (a review); `calibrate
    --ab-ref` refuses such a reference (`same_kernels`)."""
    same = env.get("ab_kernels_same")
    if isinstance(same, bool):
        return same
    commit = env.get("commit")
    if env.get("dirty") is not False or not isinstance(commit, str) or not commit:
        return False
    return ref == commit or kernels_alike(ref, commit)


def summary_table(old: dict, new: dict) -> Table:
    t = Table(title="baseline: old beside new", title_justify="left")
    for h in ("mode", "old cases", "old geomean ratio", "new cases", "new geomean ratio"):
        t.add_column(h)
    for m in sorted(set(old) | set(new)):
        o, n = old.get(m, {}), new.get(m, {})
        t.add_row(m, str(o.get("cases", "—")), f"{o['geomean_ratio']:.3f}" if o else "—",
                  str(n.get("cases", "—")), f"{n['geomean_ratio']:.3f}" if n else "—")
    return t
