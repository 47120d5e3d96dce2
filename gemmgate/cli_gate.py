"""`gemmgate check` (the regression gate) and `gemmgate baseline update|calibrate`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.table import Table

from gemmgate import baselines
from gemmgate.compare import DEFAULT_FLOOR, REGRESSED


def add_gate_commands(sub, common) -> None:
    check = sub.add_parser("check", help="run the chip's set and compare with its baseline")
    common(check)
    check.add_argument("--baseline", metavar="FILE", help="default: baselines/<chip>.json")
    check.add_argument("--floor", type=float, default=DEFAULT_FLOOR,
                       help="smallest relative change ever flagged (default 0.015)")
    check.add_argument("--no-remeasure", action="store_true",
                       help="report suspected regressions without measuring them again")
    check.add_argument("--summary", metavar="PATH", default=os.environ.get("GITHUB_STEP_SUMMARY"),
                       help="append the Markdown summary here (default: $GITHUB_STEP_SUMMARY)")
    check.add_argument("--ab-ref", metavar="REF",
                       help="also time the kernel at git REF in the same process (A/B); "
                            "'baseline' means the baseline's commit")
    check.add_argument("--inject-slowdown", type=float, default=0.0, metavar="F",
                       help="VALIDATION ONLY: add F x Triton's time of extra device work")
    base = sub.add_parser("baseline", help="create or refresh baselines/<chip>.json")
    bsub = base.add_subparsers(dest="action", required=True, parser_class=type(base))
    for name, text in (("update", "one run; keeps the old file's noise per case"),
                       ("calibrate", "several A/A runs in fresh processes; stores noise")):
        p = bsub.add_parser(name, help=text)
        common(p)
        p.add_argument("--output", metavar="FILE", help="default: baselines/<chip>.json")
        p.add_argument("--runs", type=int, default=1 if name == "update" else 3,
                       help="independent runs (fresh processes)")
        if name == "calibrate":
            p.add_argument("--keep-runs", metavar="DIR",
                           help="also keep each calibration run's JSON here (run1.json ...)")
            p.add_argument("--ab-ref", metavar="REF",
                           help="also store each case's A/B noise, the spread `check "
                                "--ab-ref` sees when nothing changed: REF's kernels/ must "
                                "be the tree's (e.g. HEAD)")


def gate_command(args, console, err) -> int:
    if args.command == "check":
        return _check(args, console, err)
    return _baseline(args, console, err)


def _modes_arg(args, base: dict | None) -> str | None:
    if args.modes or not base:
        return args.modes
    return ",".join(base["provenance"].get("modes", [])) or None


def _check(args, console, err) -> int:
    from gemmgate.chips import select_chip
    from gemmgate.cli_run import execute
    from gemmgate.files import write_json_atomic
    from gemmgate.gate import annotations, clock_note, compare_run, markdown, remeasure
    from gemmgate.report import print_tables, run_json
    from gemmgate.session import make_session

    if not 0 <= args.inject_slowdown <= 10:
        raise ValueError("--inject-slowdown must be between 0 and 10")
    chip_id = select_chip(args.chip).chip.id
    path = args.baseline or baselines.default_path(chip_id)
    base = baselines.load(path, chip_id)  # before any work: a bad file is exit 2
    session = make_session(args.chip, args.shapes or base["provenance"].get("shapes"),
                           _modes_arg(args, base), args.timing, args.budget, args.devices,
                           pins_from=path, retune=args.retune,
                           block=args.block or base["provenance"].get("block"))
    ab_sha = _ab_commit(args.ab_ref, base)
    if ab_sha:
        err.print(f"A/B: the kernel at {ab_sha[:12]} is timed beside the current one")
        if not any("ab" in c["noise"] for c in base["cases"].values()):
            err.print("[yellow]warning:[/] the baseline has no A/B noise: every A/B "
                      f"tolerance is the {args.floor:.1%} floor (small kernels differ by "
                      "more between processes); recalibrate with --ab-ref HEAD")
    env, results = execute(session, console, err, slowdown=args.inject_slowdown,
                           reference=ab_sha)
    gate = compare_run(results, base, args.floor)
    if not args.no_remeasure:
        results, gate = remeasure(session, results, gate, base, args.floor,
                                  args.inject_slowdown)
    print_tables(results, console, title=f"{chip_id} {session.shapes_label}")
    held = clock_note(results)
    md = markdown(gate, chip_id, ab_sha, held)
    console.print(_gate_table(gate))
    if held:
        err.print(f"[yellow]note:[/] {held}")
    for line in annotations(gate):
        print(line, flush=True)
    if args.summary:
        with open(args.summary, "a") as f:
            f.write(md + "\n")
    if args.json:
        data = run_json(env, results, session.shapes_label)
        data["gate"] = {"baseline": str(path), "failed": gate.failed,
                        "verdicts": [v.to_json() for v in gate.verdicts],
                        "missing": list(gate.missing), "extra": list(gate.extra),
                        "inject_slowdown": args.inject_slowdown, "ab_ref": ab_sha}
        write_json_atomic(args.json, data)
    return 1 if gate.failed else 0


def _ab_commit(ref: str | None, base: dict) -> str | None:
    """The commit id for --ab-ref (before any work: a bad ref is exit 2)."""
    if not ref:
        return None
    from gemmgate.reference import resolve

    if ref == "baseline":
        ref = base["provenance"].get("commit") or ""
        if not ref:
            raise ValueError("--ab-ref baseline: the baseline records no commit")
    return resolve(ref)


def _gate_table(gate) -> Table:
    from gemmgate.gate import GATE_HEAD, verdict_row

    t = Table(title="regression gate", title_justify="left")
    for h in GATE_HEAD:
        t.add_column(h, no_wrap=h == "case")
    for v in gate.verdicts:
        style = "red" if v.verdict in (REGRESSED, "failed") else None
        t.add_row(*verdict_row(v), style=style)
    return t


def _baseline(args, console, err) -> int:
    from gemmgate.chips import select_chip
    from gemmgate.session import make_session

    if args.runs < 1:
        raise ValueError("--runs must be at least 1")
    chip_id = select_chip(args.chip).chip.id
    path = Path(args.output or baselines.default_path(chip_id))
    old = None
    if path.exists():
        try:
            old = baselines.load(path, chip_id)
        except baselines.BaselineError as e:
            err.print(f"[yellow]warning:[/] replacing an unusable baseline: {e}")
    ab_sha = _same_kernels(getattr(args, "ab_ref", None))
    pins = str(path) if old and not args.retune else None  # keep the baseline's tiles
    session = make_session(args.chip, args.shapes, args.modes, args.timing, args.budget,
                           args.devices, pins_from=pins, retune=args.retune, block=args.block)
    try:
        runs = _runs(args, session, console, err, ab_sha)
    except RuntimeError as e:
        err.print(f"[red]{e}[/]; baseline not written")
        return 1
    bad = [c["id"] for r in runs for c in r["cases"] if not c["passed"]]
    if bad:
        err.print(f"[red]accuracy failures, baseline not written:[/] {', '.join(sorted(set(bad)))}")
        return 1
    new = baselines.carry_noise(baselines.build(runs, chip_id, session.shapes_label), old)
    new, kept = baselines.merge(new, old)
    baselines.save(path, new)
    if kept:
        console.print(f"kept {len(kept)} case(s) of the old baseline that this run did not "
                      "measure")
    if old:
        console.print(_summary_table(baselines.summary(old), baselines.summary(new)))
    console.print(f"wrote {path} ({len(new['cases'])} cases, {len(runs)} run(s))")
    return 0


def _same_kernels(ref: str | None) -> str | None:
    """The commit for calibrate --ab-ref: its kernels/ must be the working tree's, or the
    stored "A/A" noise would hold a real difference (exit 2 before any work)."""
    if not ref:
        return None
    from gemmgate.reference import resolve

    sha = resolve(ref)
    diff = subprocess.run(["git", "diff", "--quiet", sha, "--", "kernels"],
                          capture_output=True, timeout=60)
    if diff.returncode != 0:
        raise ValueError(f"--ab-ref {ref}: kernels/ differs from {sha[:12]}; A/B noise is "
                         "measured against the same kernel (commit first, or use HEAD)")
    return sha


def _runs(args, session, console, err, ab_sha: str | None = None) -> list[dict]:
    """One run in this process, or --runs fresh processes (A/A calibration)."""
    if args.runs == 1:
        from gemmgate.cli_run import execute
        from gemmgate.report import run_json

        env, results = execute(session, console, err, reference=ab_sha)
        return [json.loads(json.dumps(run_json(env, results, session.shapes_label)))]
    # On a GPU a priming run goes first and is not recorded: it compiles every kernel and
    # tunes (--retune) while the GPU idles between cases, and a run measured like that
    # is unlike every later one (H200: it set a 5-run noise of 4-6% on 1024^3 cases whose
    # checks then agreed within 1%). The recorded runs reuse its tiles from the cache.
    prime = session.chip.device_type != "cpu"
    keep = Path(args.keep_runs) if getattr(args, "keep_runs", None) else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(-1 if prime else 0, args.runs):
            out = Path(tmp) / f"run{i}.json"
            cmd = [sys.executable, "-m", "gemmgate", "run", "--chip", session.chip.id,
                   "--shapes", session.shapes_label,
                   "--modes", ",".join(m.name for m in session.modes), "--json", str(out)]
            if args.timing:
                cmd += ["--timing", args.timing]
            if args.budget:
                cmd += ["--budget", str(args.budget)]
            if args.block:
                cmd += ["--block", str(args.block)]
            if ab_sha:
                cmd += ["--ab-ref", ab_sha]
            first = i == (-1 if prime else 0)
            if session.tuning.retune and first:
                cmd += ["--retune"]  # the others then find its tiles in the local cache
            elif session.tuning.pins_from:
                cmd += ["--pin-tiles", session.tuning.pins_from]
            label = "priming run (not recorded)" if i < 0 else \
                f"calibration run {i + 1}/{args.runs}"
            err.print(label)
            proc = subprocess.run(cmd, stdout=subprocess.DEVNULL)
            if proc.returncode not in (0, 1) or not out.exists():
                raise RuntimeError(f"{label} failed (exit {proc.returncode})")
            if i >= 0:
                runs.append(json.loads(out.read_text()))
                if keep:
                    shutil.copyfile(out, keep / f"run{i + 1}.json")
    return runs


def _summary_table(old: dict, new: dict) -> Table:
    t = Table(title="baseline: old beside new", title_justify="left")
    for h in ("mode", "old cases", "old geomean ratio", "new cases", "new geomean ratio"):
        t.add_column(h)
    for m in sorted(set(old) | set(new)):
        o, n = old.get(m, {}), new.get(m, {})
        t.add_row(m, str(o.get("cases", "—")), f"{o['geomean_ratio']:.3f}" if o else "—",
                  str(n.get("cases", "—")), f"{n['geomean_ratio']:.3f}" if n else "—")
    return t
