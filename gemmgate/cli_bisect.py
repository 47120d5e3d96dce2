"""`gemmgate bisect GOOD BAD`: the first commit that slowed the named cases
(gemmgate/bisect.py). Checks every input before measuring (refs, the range, case ids,
GOOD's and BAD's kernels, output paths: exit 2), then binary-searches the first-parent
history, printing the step table after each step, re-measures the boundary, and writes
`--json` and the Markdown summary (their text: gemmgate/bisect_text.py).

Exit codes: 0 a culprit was found (or nothing regressed at BAD); 1 inconclusive (the
boundary re-measure did not confirm it, skipped commits hide it, or BAD could not be
measured); 2 usage or input error; 3 a measurement failed (--json then holds the steps
measured before it, outcome "stopped").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rich.markup import escape

from gemmgate import baselines
from gemmgate.baseline_provenance import recorded_commits
from gemmgate.bisect import (
    BAD,
    CLEAN,
    FAILED,
    FOUND,
    GOOD,
    SKIP,
    Commit,
    SearchResult,
    Step,
    commit_range,
    expected_steps,
    load_kernels,
    measure_step,
    narrowed,
    parse_case_id,
    regressed_in_check,
    search,
)
from gemmgate.bisect_text import CULPRIT, conclusion, markdown, outcome_of, steps_table
from gemmgate.chips import GENERIC_GPU, select_chip
from gemmgate.cli_outputs import check_outputs, shapes_file
from gemmgate.cli_run import append_summary, check_floor, timed_as
from gemmgate.compare import band
from gemmgate.context import (
    MeasurementError,
    RunContext,
    first_device,
    make_context,
    parse_devices,
)
from gemmgate.deadline import cli_limit
from gemmgate.files import clear_outputs, read_text, write_json_atomic
from gemmgate.gate_levels import ab_tolerance
from gemmgate.reference import common_ancestor, kernels_alike, resolve
from gemmgate.run import environment_of
from gemmgate.stop_signal import stopped_by

SCHEMA = "gemmgate.bisect/1"
NONE_REGRESSED = "none-regressed"   # --from-check's check called no case regressed
STOPPED = "stopped"   # a measurement failed (exit 3) or the run was interrupted


def _check_file(path: str) -> tuple[list[str], str | None, dict]:
    """(regressed case ids, the chip it ran on, its environment) of a `gemmgate check
    --json` file."""
    text = read_text(path, "--from-check file")   # (a missing file was "not JSON")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"--from-check {path} is not JSON ({e})") from None
    env = data.get("environment") if isinstance(data, dict) else None
    chip = env.get("chip") if isinstance(env, dict) else None
    regressed = regressed_in_check(data, path)
    injected = [x for x in (data["gate"].get("inject_slowdown"),
                            env.get("inject_slowdown") if isinstance(env, dict) else None)
                if type(x) in (int, float) and x > 0]
    if regressed and injected:   # a slowdown no commit made: bisect found "nothing
        # regressed at BAD", and blamed "Triton, driver, machine" (a review)
        raise ValueError(f"--from-check {path}: the check ran with --inject-slowdown "
                         f"{injected[0]:g}: its regressions were injected, not made by a "
                         "commit; bisect a check run without it")
    return (regressed, chip if isinstance(chip, str) else None,
            env if isinstance(env, dict) else {})


def _case(case_id, args):
    """parse_case_id of an id given by --case, or read from the --from-check file (an error
    then names the file, not --case: a review)."""
    if case_id in (args.case or ()):
        return parse_case_id(case_id)
    return parse_case_id(str(case_id), f"--from-check {args.from_check}: a regressed "
                                       "verdict's id")


def _context(args, chip: str | None, items, pins_from: str | None) -> RunContext:
    """The run context: the named cases (validated by make_context like any other,
    memory included), else --shapes/--modes."""
    common = dict(timing=args.timing, budget_s=args.budget, devices=args.devices,
                  pins_from=pins_from, retune=args.retune, block=args.block,
                  case_timeout=cli_limit(args.case_timeout))
    if not items:
        return make_context(chip, args.shapes, args.modes, **common)
    modes = ",".join(dict.fromkeys(m.name for m, _ in items))
    return make_context(chip, None, modes, cases=[c for _, c in items], **common)


def bisect_command(args, console, err) -> int:
    floor = check_floor(args.floor)
    if len(parse_devices(args.devices)) > 1:
        raise ValueError("--devices: bisect times both kernels of a step in one process; "
                         "give one device")
    if args.retune:
        raise ValueError("--retune: bisect tunes nothing (each commit runs its own "
                         "dispatch, so a commit that retuned its table is found like any other)")
    check_outputs((args.json, "--json"), append=args.summary,
                  inputs=((args.from_check, "--from-check"), (args.baseline, "--baseline"),
                          shapes_file(args.shapes)))
    for ref, what in ((args.good, "GOOD"), (args.bad, "BAD")):   # before a clean check's
        if ref != "baseline":                                      # exit 0: bad refs are 2
            resolve(ref, ".", what)
    ids, check_chip, check_env = list(args.case or []), None, {}
    if args.from_check:
        named, check_chip, check_env = _check_file(args.from_check)
        ids += named
        nothing = not ids   # said once the range, chip and baseline are checked: a swapped
        # range, a bad --chip or a missing --baseline were exit 0 here (a review)
    if ids and (args.shapes or args.modes):
        raise ValueError("--shapes/--modes pick the cases only when neither --case nor "
                         "--from-check names them")
    items = list(dict.fromkeys(_case(i, args) for i in ids))
    empty = [m.name + "-" + c.id for m, c in items if c.m == 0 or c.n == 0]
    if empty:   # (each step "good", nothing timed: "nothing regressed", exit 0; a review)
        raise ValueError(f"{', '.join(empty)}: an empty output (M or N is 0), nothing to "
                         "time: bisect needs a case it can time")
    chip = args.chip if args.chip is not None else check_chip
    # the generic profile (a GPU no profile names) is no chip id --chip takes: it is
    # detected (a check on such a GPU was "unknown chip id 'generic-gpu'", and no --chip
    # could bisect it there; a review)
    generic = args.chip is None and check_chip == GENERIC_GPU.id
    if generic:
        chip = None
    try:
        selected = select_chip(chip, first_device(args)).chip
        chip_id = selected.id
        if generic and chip_id != GENERIC_GPU.id:
            raise ValueError(f"it ran on a GPU no profile names, this device is {chip_id}")
    except ValueError as e:
        if args.chip is not None or check_chip is None:
            raise
        raise ValueError(f"--from-check {args.from_check}: its environment.chip "
                         f"{check_chip!r}: {e}; give --chip to bisect elsewhere") from None
    good_ref, base = args.good, None
    if args.good == "baseline" or args.baseline:
        path = Path(args.baseline or baselines.default_path(chip_id))
        base = baselines.load(path, chip_id)  # exit 2 on any problem
        if args.good == "baseline":   # each commit its cases were measured at was good
            what = f"GOOD baseline ({path})"   # for them: bisect from their common ancestor
            shas = recorded_commits(base, what)
            # kept cases of a file that recorded a date were left out, and GOOD could be
            # past their culprit, unsaid (a review)
            if None in shas:
                raise ValueError(f"{what}: the baseline holds cases of a commit it does "
                                 "not record (provenance kept_from or merged_from): name "
                                 "GOOD")
            good_ref = common_ancestor(shas, what=what)
    good, bad, commits = commit_range(good_ref, args.bad)
    if args.from_check and nothing:
        return _none_regressed(args, check_chip, good, bad, console, err)
    if args.from_check:
        _checked_elsewhere(args.from_check, check_env, bad, err)
    given = args.timing
    timed_as(args, check_env, base.provenance if base else {})   # as the check (else
    # its baseline) was timed
    if given is None and selected.device_type == "cpu":   # the CPU times wall clock only:
        args.timing = None   # a GPU check's graph timing made `--chip cpu` "--timing graph
        # needs a GPU", an option nobody gave, and no --timing the CPU takes could undo it
    # No pins: each commit's kernel runs its own dispatch (its tuning table), so a
    # commit that changed the table is found like any other.
    ctx = _context(args, chip, items, None)
    items = items or ctx.items
    if all(c.m == 0 or c.n == 0 for _, c in items):   # (--shapes 0x16x16: every step "good",
        # nothing timed, "nothing regressed", exit 0, as --case's empty outputs were)
        raise ValueError(f"--shapes {args.shapes}: every case has an empty output (M or N "
                         "is 0), nothing to time: bisect needs a case it can time")
    for what, c in (("GOOD", good), ("BAD", bad)):
        try:
            load_kernels(ctx, c.sha)
        except ValueError as e:
            raise ValueError(f"{what} {c.short}: {e}") from None
    keys = [c.key(m.name) for m, c in items]
    # each case's A/B tolerance as `check --ab-ref` has it: the baseline's A/B noise
    tolerances = {k: ab_tolerance(base.cases.get(k) if base else None, floor) for k in keys}
    info = {c.sha: c for c in (good, bad, *commits)}
    err.print(f"bisect on {ctx.chip.id}: {len(commits)} commit(s) after GOOD {good.short} up "
              f"to BAD {bad.short}, about {expected_steps(len(commits))} steps; each times a "
              f"commit's kernel against GOOD's in this process ({ctx.policy.method}); "
              f"{len(keys)} case(s): {', '.join(keys)}")
    noisy = sum(t > floor for t in tolerances.values())
    err.print(f"A/B tolerance: {noisy} of {len(keys)} case(s) wider than the {floor:.1%} "
              "floor from the baseline's A/B noise, the rest the floor; "
              + ", ".join(f"{k} {band(t)}" for k, t in tolerances.items()))
    steps: list[Step] = []

    def is_bad(sha: str) -> bool | None:
        err.print(f"step {len(steps) + 1}: {info[sha].short} {escape(info[sha].subject)}")
        steps.append(_alike(sha, steps, good, info)
                     or _measured_step(ctx, items, sha, good.sha, tolerances, err))
        console.print(steps_table(steps, keys, info, good.sha))
        return None if steps[-1].verdict == SKIP else steps[-1].verdict == BAD

    clear_outputs(args.json)   # a stop the process cannot outlive (a case stuck past
    # --case-timeout in native code) leaves no earlier bisect's file looking like this one's
    result = None
    try:
        found = search([c.sha for c in commits], is_bad)
        result = narrowed(found, found.last_good or good.sha, kernels_alike)
        boundary = None
        if result.status == FOUND:
            parent = result.last_good or good.sha
            err.print(f"re-measure: {info[result.first_bad].short} against the commit "
                      f"before it, {info[parent].short}")
            # measured again where noise left it inconclusive, as each step is (once, it
            # made a 3x culprit "inconclusive", exit 1; review rbis)
            boundary = _measured_step(ctx, items, result.first_bad, parent, tolerances, err,
                                      boundary=True)
            console.print(steps_table([*steps, boundary], keys, info, good.sha))
    except (MeasurementError, KeyboardInterrupt) as e:   # the steps measured are kept
        if args.json:
            write_json_atomic(args.json, {
                # the search's end where it had one (stopped in the boundary's
                # re-measure, first_bad was null though the search had found it; a review)
                **_record(ctx, floor, tolerances, good, bad, commits, steps, None, result,
                          STOPPED, info),
                "stopped": stopped_by(e) if isinstance(e, KeyboardInterrupt) else str(e)})
            err.print(f"wrote the {len(steps)} step(s) measured before it stopped to "
                      f"{escape(args.json)}")
        raise
    outcome = outcome_of(result, boundary)
    text = conclusion(outcome, result, steps[0] if steps else None, boundary, info, good, bad,
                       steps)
    console.print(("[bold]" if outcome == CULPRIT else "") + escape(text))
    if args.json:  # before the summary: a summary that fails must not lose the results
        write_json_atomic(args.json, _record(ctx, floor, tolerances, good, bad, commits,
                                             steps, boundary, result, outcome, info))
        err.print(f"wrote {escape(args.json)}")
    all_steps = [*steps, boundary] if boundary else steps
    append_summary(args.summary, markdown(ctx.chip.id, outcome, text, all_steps, keys, info,
                                            good.sha), err)
    return 0 if outcome in (CULPRIT, CLEAN) else 1


def _none_regressed(args, chip: str | None, good: Commit, bad: Commit, console, err) -> int:
    """A check that calls no case regressed: said, and its --json written with GOOD and BAD
    as every outcome writes them (they were the refs as given; a review)."""
    msg = f"the check {args.from_check} calls no case regressed: nothing to bisect"
    console.print(msg)
    if args.json:   # (an earlier bisect's file stayed, looking like this one's)
        write_json_atomic(args.json, {
            "schema": SCHEMA, "chip": chip, "outcome": NONE_REGRESSED,
            "from_check": args.from_check, "good": good.to_json(), "bad": bad.to_json(),
            "cases": [], "steps": []})
        err.print(f"wrote {escape(args.json)}")
    append_summary(args.summary, f"### gemmgate bisect: {msg}\n", err)
    return 0


def _checked_elsewhere(path: str, env: dict, bad: Commit, err) -> None:
    """A warning where the check did not run BAD's committed kernels/: its commit is
    another, or its tree had uncommitted changes (a slowdown there is in no commit, and
    the bisect said "no commit's kernels/ to blame" without a word of it; a review)."""
    commit, dirty = env.get("commit"), env.get("dirty")
    other = isinstance(commit, str) and commit and not bad.sha.startswith(commit[:12])
    if other or dirty:
        err.print(f"[yellow]warning:[/] the check {escape(path)} ran on "
                  + (f"{commit[:12]}, not BAD {bad.short}" if other else f"BAD {bad.short}")
                  + (" with uncommitted changes" if dirty else "")
                  + ": a slowdown it saw may be in no commit's kernels/")


def _alike(sha: str, steps: Sequence[Step], good: Commit, info: dict) -> Step | None:
    """The verdict of a commit whose kernels/ is GOOD's (good: an A/A) or a judged step's
    (its verdict), untimed; None otherwise. Noise alone had made such commits skips, the
    culprit unisolated (a review: one kernels/ tree judged skip, good and skip)."""
    if kernels_alike(sha, good.sha):
        return Step(sha, good.sha, GOOD, (), "kernels/ as at GOOD: not timed")
    for s in steps:
        if (s.verdict in (GOOD, BAD) or _unmeasurable(s)) and kernels_alike(sha, s.commit):
            # (a skip that could not be measured too: the same kernels/ was measured again
            # for the same end, a review; a skip for noise is measured again, and may judge)
            return Step(sha, good.sha, s.verdict, (),
                        f"kernels/ as at {info[s.commit].short}: its verdict, not timed"
                        + (f" ({s.note})" if s.verdict == SKIP and s.note else ""))
    return None


def _unmeasurable(step: Step) -> bool:
    """A skip the same kernels/ would meet again: nothing measured, or a case failed
    (not `_measured_step`'s inconclusive twice, which is noise)."""
    return step.verdict == SKIP and (not step.cases
                                     or any(c.verdict == FAILED for c in step.cases))


def _measured_step(ctx: RunContext, items, sha: str, against: str, tolerances: dict,
                   err, boundary: bool = False) -> Step:
    """`measure_step`, and once more where every case it could not judge was
    inconclusive (measured, a CI reaching past the tolerance): a skip is left for
    noise that repeats, or a commit that cannot be measured. `boundary`: the re-measure
    against the last good commit."""
    step = measure_step(ctx, items, sha, against, tolerances, boundary=boundary)
    if step.verdict == SKIP and step.cases and \
            all(c.verdict != FAILED for c in step.cases):
        err.print("  inconclusive: measured again")
        again = measure_step(ctx, items, sha, against, tolerances, boundary=boundary)
        step = again if again.verdict != SKIP else replace(
            again, note=f"inconclusive twice (noise): {again.note}")
    return step


def _record(ctx: RunContext, floor: float, tolerances: dict[str, float], good: Commit,
            bad: Commit, commits,
            steps: Sequence[Step], boundary: Step | None, result: SearchResult | None,
            outcome: str, info: dict[str, Commit]) -> dict:
    """The --json record; `result` None: the search stopped before its end."""
    def step_json(s: Step) -> dict:
        return {**s.to_json(), "subject": info[s.commit].subject}

    culprit = info[result.first_bad].to_json() if outcome == CULPRIT else None
    return {"schema": SCHEMA, "chip": ctx.chip.id, "outcome": outcome, "culprit": culprit,
            "first_bad": result and result.first_bad,
            "last_good": result and result.last_good,
            "candidates": list(result.candidates) if result else [], "good": good.to_json(),
            "bad": bad.to_json(), "commits": [c.to_json() for c in commits],
            "cases": list(tolerances), "floor": floor, "tolerances": tolerances,
            "steps": [step_json(s) for s in steps],
            "boundary": step_json(boundary) if boundary else None,
            "environment": environment_of(ctx)}
