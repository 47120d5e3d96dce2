"""The host time of a first call's plan, on the CPU: `kernels.decide.decide` and
`kernels.table.lookup` on shapes the process has not seen, this tree against others.

    python3 scripts/plan_time.py [--ref REV ...] [--modes bf16,fp16,fp8,tf32,fp32]
                                 [--shapes 200] [--rounds 6] [--seed 0] [--cold | --calls N]
                                 [--set NAME] [--csv FILE]

A first call on an unseen shape plans in Python before it launches: the dispatcher's
decision (bucket, copies, variants) and the nearest lookup over the H200 table (docs/
PERF.md: most of a first call's own part). Per round, `--shapes` random row-major shapes
(M, N, K each 16-8192), laid out and decided as the harness calls them (lookup_diff's
`_decided`: copies kept; the layouts made before timing), the same for every tree, each
tree's package timed on them in turn (`--ref` trees loaded beside this one:
gemmgate.reference.load), so the rounds share the host's state. A tree's time per plan
is its best round's mean (the host is noisy; the best round is the least disturbed) and
its median round's. The heuristic's fallback (no near entry) is not timed: the count of
shapes that took a table tile is printed. Pure CPU work: both calls are pure, no device.
Exit 0; 2 on bad input.

`--cold`: plans as a process's first calls make them. Each round starts a fresh process
per tree, which plans one shape untimed (it reads the table: the process's first call)
and then times each of `--shapes` new shapes alone: the lookup's per-entry and per-tile
caches empty and the interpreter's code not yet warm, as on a library user's first calls
(session 39 measured 0.16-0.33 ms of lookup in such first calls on the H200's host, where
the steady figure is a third of that). A round's figure is its shapes' mean.

`--calls N`: a repeated eager call's whole host path instead (state `eager`):
`kernels.matmul` itself, N times a case on the same operands, as the harness calls it on
a device (gemmgate/providers.py's `kernel_call`): meta operands laid out as the harness
lays them, an `out` of the harness's shape at an address of its own (so the out-overlap
check and the version bump run), `cache_copies=True`, autograd enabled (the harness
does not turn it off), as an H200 plans it (call_audit's stand-in driver and device
facts). The launch is a bound launch that does nothing, kept and taken as a device's is
from the second call on: the checks, the resolved-call cache, the kept copies' lookup and
the recipe's path up to the bound launch are timed. Where an eager A/B moves, this says
how much of it is host code the CPU can see. A round's figure is the mean over its cases
of a call's time. `--set NAME`: the cases of a shape set (gemmgate/shape_sets.py, their
layouts and paddings: e.g. pr, what the eager A/B measures) every round, in place of
`--shapes` random row-major ones. (Session 60's rows, state `call`, passed no `out` and
made every launch's arguments: no bound launch was kept.)
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from lookup_diff import DEVICE, SMEM, _decided, laid_out  # noqa: E402

_FIELDS = ("state", "tree", "sha", "mode", "shapes", "rounds", "best_us", "median_us",
           "table_hits")


def draw(seed: int, count: int) -> list[tuple[int, int, int]]:
    """`count` random (M, N, K), each 16-8192."""
    rng = random.Random(seed)
    return [(rng.randint(16, 8192), rng.randint(16, 8192), rng.randint(16, 8192))
            for _ in range(count)]


def _cases(mode: str, shapes: list[tuple[int, int, int]]) -> list[tuple]:
    """(case, its operands as the harness lays them out: `laid_out`) of each row-major
    shape, made before any timing."""
    from gemmgate.shapes import Case

    return [(c, laid_out(mode, c)) for c in (Case(*s) for s in shapes)]


def _planner(pkg, mode_name: str, sms: int = 132):
    """plan(case, laid) -> whether the table gave a tile: `pkg`'s decide (as the harness
    calls it, copies kept: lookup_diff's) and lookup."""
    lookup = pkg.table.lookup

    def plan(case, laid) -> bool:
        _, _, bucket, _, _, variants = _decided(pkg, mode_name, case, laid=laid)
        return lookup(DEVICE, bucket, case.m, case.n, case.k, variants=variants, sms=sms,
                      smem=SMEM) is not None

    return plan


def measure(trees: list[tuple[str, str, object]], modes: list[str], shapes: int,
            rounds: int, seed: int) -> list[dict]:
    """One row per tree and mode (`_FIELDS`): `trees` are (label, sha, kernels package)."""
    rows = []
    for mode in modes:
        plans = [(label, sha, _planner(pkg, mode)) for label, sha, pkg in trees]
        first = _cases(mode, [(1000, 1000, 1000)])[0]
        for _, _, plan in plans:   # each package reads its table once, untimed
            plan(*first)
        times: dict[str, list[float]] = {label: [] for label, _, _ in plans}
        hits: dict[str, int] = {label: 0 for label, _, _ in plans}
        for r in range(rounds):
            drawn = _cases(mode, draw(seed * 1000 + r, shapes))
            for label, _, plan in plans:
                t = time.perf_counter()
                got = [plan(*c) for c in drawn]
                times[label].append((time.perf_counter() - t) / shapes * 1e6)
                hits[label] += sum(got)
        rows += [_row("steady", label, sha, mode, shapes, times[label], hits[label])
                 for label, sha, _ in plans]
    return rows


def _row(state: str, label: str, sha: str, mode: str, shapes: int, times: list[float],
         hits: int) -> dict:
    return dict(state=state, tree=label, sha=sha[:12], mode=mode, shapes=shapes,
                rounds=len(times), best_us=f"{min(times):.1f}",
                median_us=f"{statistics.median(times):.1f}", table_hits=hits)


def first_plans(pkg, mode: str, seed: int, count: int) -> list[tuple[float, bool]]:
    """(us, from the table) of each of `count` new shapes' plans in this process, after
    one untimed plan (the table read): `--cold`'s child."""
    plan = _planner(pkg, mode)
    plan(*_cases(mode, [(1000, 1000, 1000)])[0])
    out = []
    for case, laid in _cases(mode, draw(seed, count)):
        t = time.perf_counter()
        hit = plan(case, laid)
        out.append(((time.perf_counter() - t) * 1e6, hit))
    return out


def measure_cold(trees: list[tuple[str, str, str | None]], modes: list[str], shapes: int,
                 rounds: int, seed: int) -> list[dict]:
    """`measure` for a fresh process per tree, mode and round (`first_plans`): `trees` are
    (label, sha, the commit to load, None for this tree)."""
    rows = []
    for mode in modes:
        times: dict[str, list[float]] = {label: [] for label, _, _ in trees}
        hits: dict[str, int] = {label: 0 for label, _, _ in trees}
        for r in range(rounds):
            for label, _, ref in trees:
                child = [sys.executable, str(Path(__file__).resolve()), "--child",
                         ref or "", "--modes", mode, "--seed", str(seed * 1000 + r),
                         "--shapes", str(shapes)]
                got = json.loads(subprocess.run(child, capture_output=True, text=True,
                                                check=True, timeout=600).stdout)
                times[label].append(statistics.fmean(us for us, _ in got))
                hits[label] += sum(hit for _, hit in got)
        rows += [_row("cold", label, sha, mode, shapes, times[label], hits[label])
                 for label, sha, _ in trees]
    return rows


_OUT_AT = 1 << 43   # an out's meta address: apart from the operands' (meta sits at 0)


def _caller(pkg, mode: str, case):
    """A repeated kernels.matmul call of `pkg` on one case's meta operands (`--calls`),
    into an out as the harness passes it (providers._out: fp8's rows padded to 16)."""
    import torch

    from gemmgate.inputs import layout
    from gemmgate.precision import get_mode

    m = get_mode(mode)
    a, b = layout(case, m)
    dtype = getattr(torch, m.output_dtype)
    cols = -(-case.n // 16) * 16 if m.scaled else case.n
    room = torch.empty(_OUT_AT + case.m * cols * dtype.itemsize, dtype=torch.uint8,
                       device="meta")
    out = room[_OUT_AT:].view(dtype).view(case.m, cols)[:, :case.n]
    kw = {}
    if m.scaled:
        kw = dict(scale_a=torch.ones((), device="meta"), scale_b=torch.ones((), device="meta"))
    return lambda: pkg.matmul(a, b, precision=mode, out=out, cache_copies=True, **kw)


def measure_calls(trees: list[tuple[str, str, object, str]], modes: list[str], shapes: int,
                  rounds: int, seed: int, calls: int, cases: list | None = None) -> list[dict]:
    """`--calls`: one row per tree and mode; `trees` are (label, sha, package, the prefix
    its modules are imported under). Each tree's calls inside call_audit's `as_chip`
    (an H200's facts, bound launches that do nothing), which leaves with its plans.
    `cases`: the same cases every round (`--set`), else `shapes` drawn row-major ones."""
    from call_audit import as_chip, target

    from gemmgate.shapes import Case

    chip = target()
    rows = []
    for mode in modes:
        times: dict[str, list[float]] = {label: [] for label, _, _, _ in trees}
        for r in range(rounds):
            drawn = cases or [Case(*s) for s in draw(seed * 1000 + r, shapes)]
            for label, _, pkg, prefix in trees:
                with as_chip(chip, None, prefix, bound=True):
                    fns = [_caller(pkg, mode, c) for c in drawn]
                    for f in fns:   # planned, recipes made, copies kept, bound: untimed
                        f()
                        f()
                    t = time.perf_counter()
                    for f in fns:
                        for _ in range(calls):
                            f()
                    times[label].append((time.perf_counter() - t) / (len(fns) * calls) * 1e6)
        rows += [_row("eager", label, sha, mode, len(cases) if cases else shapes,
                      times[label], 0) for label, sha, _, _ in trees]
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", action="append", default=[],
                    help="a commit to time beside this tree (repeatable)")
    ap.add_argument("--modes", default="bf16,fp16,fp8,tf32,fp32")
    ap.add_argument("--shapes", type=int, default=200, help="random shapes a round")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cold", action="store_true",
                    help="a fresh process per tree and round, its first plans timed")
    ap.add_argument("--calls", type=int, metavar="N",
                    help="time a repeated call's whole host path, N calls a shape")
    ap.add_argument("--set", metavar="NAME",
                    help="--calls: a shape set's cases every round, not random shapes")
    ap.add_argument("--csv", metavar="FILE", help="also write the rows as CSV")
    ap.add_argument("--child", help=argparse.SUPPRESS)   # --cold's: a commit, '' this tree
    args = ap.parse_args(argv)
    import kernels
    from gemmgate import reference

    if args.child is not None:
        pkg = reference.load(args.child, ROOT)[1] if args.child else kernels
        print(json.dumps(first_plans(pkg, args.modes, args.seed, args.shapes)))
        return 0

    modes = args.modes.split(",")
    bad = [m for m in modes if m not in ("bf16", "fp16", "fp8", "tf32", "fp32", "tf32x3")]
    if bad or args.shapes < 1 or args.rounds < 1 or (args.calls is not None and
                                                      (args.calls < 1 or args.cold)) \
            or (args.set is not None and not args.calls):
        print(f"plan_time: need modes among bf16, fp16, fp8, tf32, fp32, tf32x3 and --shapes, "
              f"--rounds >= 1 (got {args.modes}, {args.shapes}, {args.rounds}); --calls "
              ">= 1, not with --cold; --set only with --calls",
              file=sys.stderr)
        return 2
    from gemmgate.shape_sets import SETS

    if args.set is not None and args.set not in SETS:
        print(f"plan_time: error: unknown --set {args.set!r}; sets: {', '.join(SETS)}",
              file=sys.stderr)
        return 2
    cases = [c for c in SETS[args.set] if c.m and c.n] if args.set else None
    try:
        head = reference.resolve("HEAD", ROOT, "HEAD")
        refs = [reference.resolve(ref, ROOT, "--ref") for ref in args.ref]
        trees = [(f"ref {ref}", *reference.load(sha, ROOT)) for ref, sha in zip(args.ref, refs)]
    except ValueError as e:
        print(f"plan_time: error: {e}", file=sys.stderr)
        return 2
    if args.calls:
        rows = measure_calls([*((label, sha, pkg, f"gemmgate_ref_{sha[:12]}")
                                for label, sha, pkg in trees),
                              ("tree", head, kernels, "kernels")], modes, args.shapes,
                             args.rounds, args.seed, args.calls, cases)
    elif args.cold:
        rows = measure_cold([*((f"ref {ref}", sha, sha) for ref, sha in zip(args.ref, refs)),
                             ("tree", head, None)], modes, args.shapes, args.rounds, args.seed)
    else:
        rows = measure([*trees, ("tree", head, kernels)], modes, args.shapes, args.rounds,
                       args.seed)
    for row in rows:
        print(f"{row['mode']:6s} {row['state']:6s} {row['tree']:14s} {row['sha']}  best "
              f"{row['best_us']:>7s} us/{'call' if args.calls else 'plan'}, median "
              f"{row['median_us']:>7s}"
              + ("" if args.calls else f"  ({row['table_hits']} from the table)"))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=_FIELDS)
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
