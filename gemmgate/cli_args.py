"""gemmgate's argument parser: every command's options, their defaults and help texts
(`build_parser`); gemmgate/cli.py parses with it and runs the command. Bad arguments are
UsageError (exit 2)."""

from __future__ import annotations

import argparse
import os
import sys

from gemmgate.compare import DEFAULT_FLOOR
from gemmgate.context import MAX_LIMIT_S
from gemmgate.deadline import DEFAULT_LIMIT_S
from gemmgate.precision import MODE_NAMES
from gemmgate.shapes import SETS
from gemmgate.timing_policy import TimingPolicy, cpu_policy


class UsageError(Exception):
    """Bad input from the user: exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits 2 too; keep our message format
        self.print_usage(sys.stderr)
        raise UsageError(message)


# The defaults of a command that runs its baseline's cases, timed as the baseline was
# (`check`, and `trials`' checks: cli_gate._set_up), where --help said "smoke on the CPU,
# pr on a GPU", "every mode the chip supports" and "graph", "1" (a review).
AS_BASELINE = {"shapes": "default: the baseline's shape set and every other case it holds",
               "modes": "default: the baseline's modes",
               "timing": "as the baseline was timed", "block": "as the baseline was timed"}
# bisect: timed as the --from-check check (else the --baseline) was (cli_run.timed_as)
AS_CHECKED = {"timing": "as the --from-check check, else the --baseline, was timed; else "
                        "graph on a GPU",
              "block": "as the --from-check check, else the --baseline, was timed; else 1"}


# --budget: asked only after the rounds every case times, and at whole round-order cycles
# (timing_policy.finished): `--block 100 --budget 0.1` timed 16 x 100 calls a provider on
# the CPU, where the help said "timing budget per case" (a review)
BUDGET_HELP = (f"timing budget per case, seconds (default {TimingPolicy().budget_s:g} on a "
               f"GPU, {cpu_policy().budget_s:g} on the CPU); a soft limit: every case times "
               "at least 10 rounds on a GPU and 16 on the CPU (30 and 18 with three "
               "providers, e.g. --ab-ref), each round --block calls of every provider, "
               "whatever the budget")


def _run_args(p: argparse.ArgumentParser, retune: bool = True,
              devices: str = "spread cases over these devices, one worker process each "
                             "(e.g. 0,1)", defaults: dict[str, str] | None = None) -> None:
    """What a run measures and how: every command that measures takes these (`retune`
    False: a command that tunes nothing or always, whose --help offered --retune, bisect
    refusing it and tune ignoring it; a review). `defaults`: the command's own defaults
    of shapes, modes, timing and block where they are not a plain run's (AS_BASELINE)."""
    d = defaults or {}
    p.add_argument("--chip", help="chip id (default: $GEMMGATE_CHIP, else detected)")
    p.add_argument("--shapes", help=f"shape set ({', '.join(SETS)}), a .csv/.yaml file or "
                                    "shapes MxNxK[-LAYOUT][+pPAD],... ("
                                    + d.get("shapes", "default: smoke on the CPU, pr on a GPU")
                                    + ")")
    p.add_argument("--modes", help=f"comma-separated precision modes ({','.join(MODE_NAMES)}); "
                                   + d.get("modes", "default: every mode the chip supports"))
    p.add_argument("--timing", choices=("graph", "eager"),
                   help="graph: CUDA-graph replay, device time only; eager: host launch "
                        "cost included (GPU only: the CPU times wall clock); default: "
                        + d.get("timing", "graph on a GPU"))
    p.add_argument("--budget", type=float, metavar="S", help=BUDGET_HELP)
    p.add_argument("--block", type=int, metavar="N",
                   help="time each provider N calls in a row ("
                        + (f"default: {d['block']}; 1" if "block" in d else "default 1")
                        + ": call by call, each round's order the last one's reversed: "
                        "A B, B A, ... for two; three, e.g. with --ab-ref, take each "
                        "rotation of their order forward and reversed, four to six a "
                        "cycle in which each follows each other alike); see "
                        "gemmgate/timing_policy.py on power-capped GPUs")
    p.add_argument("--devices", metavar="IDS", help=devices)
    _case_timeout_arg(p)
    if not retune:   # (kept, unlisted: the command says why it takes none)
        p.add_argument("--retune", action="store_true", help=argparse.SUPPRESS)
        return
    p.add_argument("--retune", action="store_true",
                   help="tune every Triton key afresh, ignoring pinned tiles, searching up to "
                        "20 s a key (tuning.TuningSetup.budget_s; --budget is the timing's "
                        "per case; default: no tuning, the kernel's own dispatch)")


def _case_timeout_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--case-timeout", type=_seconds, metavar="S",
                   help="stop the run (exit 3) when one case takes longer: a provider "
                        f"that hangs (default {DEFAULT_LIMIT_S:g}; tune adds twice "
                        "--budget-per-key; 0: no limit)")


def _seconds(text: str) -> float:
    """A time limit in seconds: finite, >= 0."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= x <= MAX_LIMIT_S:
        raise argparse.ArgumentTypeError(f"{text!r}: give seconds >= 0 and up to "
                                         f"{MAX_LIMIT_S:.0e} (0: no limit)")
    return x


def _providers_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--providers", metavar="LIST",
                   help="who computes: triton,vendor (the default, always: the list must "
                        "hold both, in any order), plus inductor "
                        "(torch.compile, Triton GEMM templates; GPU), vendor_fast (fp8: "
                        "cuBLASLt's fast accumulation) and/or module:function "
                        "GEMMs with the kernels.matmul contract; shown, never gated")


def _json_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", metavar="PATH", help="write the full results as JSON")


def _ref(text: str) -> str:
    """--ab-ref's value: an empty one (an unset CI variable) would turn A/B off silently."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: give a commit, branch or tag")
    return text


def _folder(text: str) -> str:
    """A folder option's value: an empty one (an unset CI variable) would write into the
    current directory (`report -o ""` wrote index.html there)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is an empty path: give a folder")
    return text


def _ab_arg(p: argparse.ArgumentParser, extra: str = "") -> None:
    p.add_argument("--ab-ref", metavar="REF", type=_ref,
                   help="also time the kernel at git REF in the same process (A/B)" + extra)


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="gemmgate", description="Triton GEMM vs vendor BLAS, per chip.")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="check accuracy and time Triton against the vendor")
    _run_args(run)
    _json_arg(run)
    run.add_argument("--pin-tiles", metavar="FILE",
                     help="use the Triton tiles recorded in this baseline file")
    _ab_arg(run, "; the JSON then holds a 'reference' provider")
    _providers_arg(run)
    run.add_argument("--copies", choices=("kept", "per-call"), default="kept",
                     help="kept (default): the kernel keeps its operand copies through a "
                          "case, as a weight's; per-call: it makes them on every call, as a "
                          "library caller whose operands change (cache_copies off; fp8's vendor "
                          "lays out its operands in every call too; the JSON records it)")
    chips = sub.add_parser("chips", help="list the chip table and what is detected here")
    chips.add_argument("--chip", help="chip id to select (default: $GEMMGATE_CHIP, else "
                                      "detected)")
    chips.add_argument("--ids", action="store_true", help="print chip ids only")
    _check_parser(sub)
    _baseline_parsers(sub)
    _trials_parser(sub)
    _bisect_parser(sub)
    _report_parser(sub)
    _sweep_parser(sub)
    _tune_parser(sub)
    return ap


def _check_parser(sub) -> None:
    check = sub.add_parser("check", help="run the chip's set and compare with its baseline")
    _run_args(check, defaults=AS_BASELINE)
    _providers_arg(check)
    _json_arg(check)
    check.add_argument("--baseline", metavar="FILE", help="default: baselines/<chip>.json")
    check.add_argument("--floor", type=float, default=DEFAULT_FLOOR,
                       help=f"smallest relative change ever flagged (default {DEFAULT_FLOOR})")
    check.add_argument("--no-remeasure", action="store_true",
                       help="report suspected regressions without measuring them again")
    check.add_argument("--summary", metavar="PATH", default=_step_summary(),
                       help="append the Markdown summary here (default: $GITHUB_STEP_SUMMARY)")
    _ab_arg(check, "; 'baseline' means the baseline's commit")
    check.add_argument("--inject-slowdown", type=float, default=0.0, metavar="F",
                       help="VALIDATION ONLY: add F x Triton's time of extra device work")
    check.add_argument("--comment", metavar="PATH",
                       help="write a Markdown PR comment here: changed cases, then the rest")


def _baseline_parsers(sub) -> None:
    base = sub.add_parser("baseline", help="create or refresh baselines/<chip>.json")
    bsub = base.add_subparsers(dest="action", required=True, parser_class=_Parser)
    for name, text in (("update", "one run; keeps the old file's noise per case"),
                       ("calibrate", "several A/A runs in fresh processes; stores noise")):
        p = bsub.add_parser(name, help=text)
        _run_args(p)
        p.add_argument("--output", metavar="FILE", help="default: baselines/<chip>.json")
        p.add_argument("--runs", type=int, default=1 if name == "update" else 5,
                       help="independent runs (fresh processes), 2 or more" if name ==
                       "calibrate" else "1 only: update measures once (calibrate: N)")
        if name == "calibrate":
            p.add_argument("--keep-runs", metavar="DIR", type=_folder,
                           help="also keep each calibration run's JSON here (run1.json ...)")
            _ab_arg(p, ": stores each case's A/B noise, the spread `check --ab-ref` sees "
                       "when nothing changed; REF's kernels/ must be the tree's (e.g. HEAD)")
    merge = bsub.add_parser("merge", help="combine calibrations from several machines into "
                                          "one baseline with machine-level noise")
    merge.add_argument("inputs", nargs="+", metavar="FILE",
                       help="baseline files to combine; run JSONs (run/check --json, no "
                            "injected slowdown) count together as one more calibration")
    merge.add_argument("--output", metavar="FILE", help="default: baselines/<chip>.json")


def _trials_parser(sub) -> None:
    t = sub.add_parser("trials", help="gate power: fresh-process checks with injected "
                                      "slowdowns, counted per case (validation)")
    _run_args(t, defaults=AS_BASELINE)
    t.add_argument("--levels", default="0,0.03",
                   help="comma-separated injected slowdowns, 0 = A/A (default 0,0.03)")
    t.add_argument("--repeats", type=int, default=1, help="checks per level (default 1)")
    t.add_argument("--deadline", type=float, metavar="S",
                   help="start no check S seconds after the command started, --calibrate "
                        "included (default: no deadline)")
    t.add_argument("--baseline", metavar="FILE", help="default: baselines/<chip>.json; "
                                                      "--rejudge needs it given")
    t.add_argument("--calibrate", type=int, metavar="RUNS",
                   help="first recalibrate the baseline with this many runs (A/B noise too "
                        "with --ab-ref)")
    _ab_arg(t, " in every check")
    t.add_argument("--rejudge", nargs="+", metavar="CHECK.json",
                   help="measure nothing: judge these recorded `check --json` files again "
                        "against --baseline (e.g. a baseline that leaves their machine out)")
    t.add_argument("--floor", type=float, default=None,
                   help="with --rejudge: minimum tolerance (default: each check's own)")
    t.add_argument("--out", required=True, metavar="DIR", type=_folder,
                   help="folder for each check's JSON and the summary checks.csv")


def _bisect_parser(sub) -> None:
    b = sub.add_parser("bisect", help="find the first commit that slowed the named cases "
                                      "(A/B against GOOD in one process, binary search)")
    b.add_argument("good", metavar="GOOD",
                   help="a commit where the cases were fast; 'baseline': the baseline's commit")
    b.add_argument("bad", metavar="BAD", help="a later commit where they are slow (e.g. HEAD)")
    b.add_argument("--case", action="append", metavar="ID",
                   help="a case id as the tables print it, e.g. bf16-m4096-n4096-k4096 or "
                        "fp32-m64-n32-k96-cr (repeat for more)")
    b.add_argument("--from-check", metavar="FILE",
                   help="bisect the cases this `gemmgate check --json` file calls regressed")
    b.add_argument("--baseline", metavar="FILE",
                   help="the baseline whose commit GOOD 'baseline' means "
                        "(default with GOOD 'baseline': baselines/<chip>.json)")
    _run_args(b, retune=False, devices="the one device to time on (bisect times both "
                                        "kernels of a step in one process)",
              defaults=AS_CHECKED)
    _json_arg(b)
    b.add_argument("--floor", type=float, default=DEFAULT_FLOOR,
                   help=f"smallest A/B slowdown called a regression (default {DEFAULT_FLOOR})")
    b.add_argument("--summary", metavar="PATH", default=_step_summary(),
                   help="append the Markdown summary here (default: $GITHUB_STEP_SUMMARY)")


def _report_parser(sub) -> None:
    r = sub.add_parser("report", help="draw runs and baselines as an offline HTML page "
                                      "(PNG figures): ratio maps, roofline, errors, history")
    r.add_argument("runs", nargs="*", metavar="RUN.json",
                   help="run files (gemmgate run --json, check --json)")
    r.add_argument("--baseline", action="append", default=[], metavar="FILE",
                   help="a baseline file (baselines/<chip>.json), for history and cross-chip; "
                        "repeat it for several (one file a flag: run files after it stay "
                        "run files)")
    r.add_argument("-o", "--output", required=True, metavar="DIR", type=_folder,
                   help="folder for index.html and the PNGs")


def _sweep_parser(sub) -> None:
    s = sub.add_parser("sweep", help="one case across one tile parameter (e.g. num_stages): "
                                     "the rise-then-collapse curve")
    s.add_argument("--param", required=True, metavar="NAME",
                   help="an integer field of the kernel's tile: num_stages, num_warps, "
                        "block_m, block_n, block_k, group_m, occupancy (split_k where the "
                        "tile has it)")
    s.add_argument("--values", metavar="V,..", help="comma-separated values (default per "
                   "parameter, e.g. num_stages 1..7, block sizes 16..256)")
    s.add_argument("--shape", required=True, metavar="MxNxK", help="e.g. 4096x4096x4096")
    s.add_argument("--mode", required=True, help=f"one precision mode ({','.join(MODE_NAMES)})")
    s.add_argument("--chip", help="chip id (default: $GEMMGATE_CHIP, else detected)")
    s.add_argument("--layout", default="rr", help="rr (default), cr, rc or cc")
    s.add_argument("--timing", choices=("graph", "eager"), help="as for run")
    s.add_argument("--budget", type=float, metavar="S", help="timing budget per value, seconds")
    _case_timeout_arg(s)
    s.add_argument("--csv", metavar="PATH", help="write one row per value")
    s.add_argument("--plot", metavar="PATH.png", help="draw TFLOP/s against the values")
    _json_arg(s)


def _tune_parser(sub) -> None:
    t = sub.add_parser("tune", help="search Triton tiles offline and write the kernel's "
                                    "tuning table (kernels/tuned/<chip>.json)")
    _run_args(t, retune=False)   # (tune always searches: --budget-per-key)
    _json_arg(t)
    t.add_argument("--budget-per-key", type=float, default=10.0, metavar="S",
                   help="tuning seconds per key, at most 30 configs timed (default 10)")
    t.add_argument("--table", metavar="FILE", help="default: kernels/tuned/<chip>.json")
    t.add_argument("--stale", action="store_true",
                   help="retune only the table's entries tuned on other kernel source")


def _step_summary() -> str | None:
    """$GITHUB_STEP_SUMMARY, set and not empty: empty, check said "--summary is an empty
    path", an option never given (a review)."""
    return os.environ.get("GITHUB_STEP_SUMMARY") or None
