"""The host time of a first call's plan, on the CPU: `kernels.decide.decide` and
`kernels.table.lookup` on shapes the process has not seen, this tree against others.

    python3 scripts/plan_time.py [--ref REV ...] [--modes bf16,fp16,fp8,tf32,fp32]
                                 [--shapes 200] [--rounds 6] [--seed 0]
                                 [--cold | --calls N | --first [--thrash MB]]
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
Exit 0; 2 on bad input; 1 where a `--first` process failed (its JIT guard among causes).

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

`--first`: a first kernels.matmul call's whole host path on a shape new to the process,
and the second call on the same tensors after it (states `first` and `second`). Each
round starts a fresh process per tree (the trees in turn, so a tree is A/B'd against a
`--ref` commit round by round), which takes the modes in turn: per mode one untimed
warm-up shape (its first and second call: the table read, the process's one-time costs),
then per shape the caller made untimed (`--calls`' caller, as an H200 plans it), its
first call timed, then its second. The shapes: 1000x1000x1000, 16x4096x4096,
128x8192x8192, 4096x4096x253 and 2048x2048x2048, then random row-major ones up to
`--shapes` (`--seed`'s, the same every round: each process meets them new); `--set
NAME`: the set's cases. Unlike `--calls`, the launch path runs as in a device process
that has every kernel loaded already: the real Launch.bound, Launch._kernel,
launch_jit.specialization, Direct.of and Direct.bound, `launch.SHARED` answering every
key with a stand-in compiled kernel whose launcher has triton 3.6's form (its tensor-map
wrapper and make_tensordesc_arg in Python, the C cuTensorMapEncodeTiled a tuple, the C
launch a no-op), each JIT function's binder made up front. JITFunction.run and
_do_compile are counted: the run fails if either was called (the figures would hold JIT
time), if no launch asked SHARED (the interpreter's kernels: TRITON_INTERPRET is not
passed to the processes) or if Direct.of refuses the stand-in. Not measured: anything
on the device, CUDA allocation (the tensors are meta), the tensor map's encoding,
cuLaunchKernel, a JIT compile (a kernel the process has not compiled yet). `--thrash
MB`: before each first call, read MB of memory and run unrelated Python (a device
process syncs, benchmarks and runs torch ops between first calls): the CPU's caches
cold. A round's figure is its shapes' mean.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import importlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from launcher36 import LAUNCHER_36  # noqa: E402
from lookup_diff import DEVICE, SMEM, _decided, laid_out  # noqa: E402

_FIELDS = ("state", "tree", "sha", "mode", "shapes", "rounds", "best_us", "median_us",
           "table_hits")
_MODES = ("bf16", "fp16", "fp8", "tf32", "fp32", "tf32x3")


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
                got = _run_child(ref, ["--modes", mode, "--seed", str(seed * 1000 + r),
                                       "--shapes", str(shapes)])
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


# ---- --first: first and second kernels.matmul calls in a fresh process ------------------

FIXED = ((1000, 1000, 1000), (16, 4096, 4096), (128, 8192, 8192), (4096, 4096, 253),
         (2048, 2048, 2048))   # --first's shapes before its random ones
WARM = (1536, 1152, 896)       # --first's untimed warm-up shape a mode: none of the timed


def _set_cases(name: str) -> list:
    """A shape set's cases that have an output (M and N not 0), layouts and paddings kept."""
    from gemmgate.shape_sets import SETS

    return [c for c in SETS[name] if c.m and c.n]


def first_cases(seed: int, count: int, set_name: str | None = None) -> list:
    """`--first`'s cases: `set_name`'s, else `FIXED` then `draw(seed)`'s row-major shapes,
    `count` in all (the same in every round's process)."""
    from gemmgate.shapes import Case

    if set_name:
        return _set_cases(set_name)
    return [Case(*s) for s in [*FIXED, *draw(seed, max(0, count - len(FIXED)))][:count]]


_DESC_META = dict(swizzle=128, elem_size=2, elem_type=0, block_size=[64, 64],
                  fp4_padded=False)   # a stand-in's tensor-map metadata a descriptor


@functools.cache
def _launcher_36() -> dict:
    """`LAUNCHER_36`'s names, in a namespace with the driver module's globals that
    Direct.of checks (made once, on first use)."""
    namespace: dict = {"_BASE_ARGS_FORMAT_LEN": 13}
    exec(LAUNCHER_36, namespace)
    return namespace


def _c_launch(*args) -> None:
    """The C launch (cuLaunchKernel): nothing."""


def stand_in_kernel(spec: tuple) -> types.SimpleNamespace:
    """A compiled kernel for a `launch_jit.specialization`, its launcher of triton 3.6's
    form: the descriptors (`tensordesc` arguments) expanded by the Python wrapper, then a
    no-op in the C launch's place (a partial: no __code__, as the C function)."""
    ns = _launcher_36()
    launch = functools.partial(_c_launch)
    descs = {i for i, s in enumerate(spec) if "tensordesc" in str(s[0])}
    if descs:
        launch = ns["wrap_handle_tensordesc"](launch, descs, [_DESC_META] * len(descs))
    return types.SimpleNamespace(run=ns["Runner"](launch), function=1,
                                 packed_metadata=(1, 1, 1))


class _Loaded(dict):
    """`launch.SHARED` of a device process that compiled every kernel already: each key
    answers with a stand-in (`stand_in_kernel`), made once per kernel function (whose
    descriptors sit at fixed positions) and stored under the key, so a key's first ask
    costs a look-up and a store more, not the stand-in's making."""

    def __init__(self) -> None:
        super().__init__()
        self._per_fn: dict[int, types.SimpleNamespace] = {}

    def get(self, key, default=None):
        got = dict.get(self, key)
        if got is None:
            got = self._per_fn.get(id(key[0]))
            if got is None:
                got = self._per_fn[id(key[0])] = stand_in_kernel(key[2])
            self[key] = got
        return got


def _bind_up_front(prefix: str, device: int) -> int:
    """Each JIT function of package `prefix` its binder for `device` and its source hash,
    as a device process has them after the function's first compile (specialization
    asks the binder's backend); how many functions."""
    from triton.runtime.jit import JITFunction

    fns = {id(v): v for name, mod in list(sys.modules.items())
           if mod is not None and (name == prefix or name.startswith(prefix + "."))
           for v in vars(mod).values() if isinstance(v, JITFunction)}
    for fn in fns.values():
        fn.device_caches[device]   # noqa: B018 - made on first access
        fn.cache_key               # noqa: B018
    return len(fns)


@contextlib.contextmanager
def _jit_counted() -> Iterator[dict[str, int]]:
    """Inside: JITFunction.run and _do_compile counted (the dict yielded) and run."""
    from triton.runtime.jit import JITFunction

    counts = {name: 0 for name in ("run", "_do_compile") if hasattr(JITFunction, name)}

    def counted(name: str):
        orig = getattr(JITFunction, name)

        def call(self, *args, **kw):
            counts[name] += 1
            return orig(self, *args, **kw)

        return call

    with contextlib.ExitStack() as stack:
        for name in counts:
            stack.enter_context(mock.patch.object(JITFunction, name, counted(name)))
        yield counts


@contextlib.contextmanager
def _as_loaded(prefix: str) -> Iterator[dict]:
    """Inside: package `prefix` plans and binds as on an H200 (call_audit's `as_chip`,
    bound launches kept) through the real Launch.bound path, over a `_Loaded` SHARED
    (yielded), each JIT function's binder made."""
    import triton
    from call_audit import as_chip, target

    launch = importlib.import_module(f"{prefix}.launch")
    real_bound = vars(launch.Launch)["bound"]   # (as_chip puts a do-nothing one there)
    shared = _Loaded()
    with as_chip(target(), None, prefix, bound=True), \
            mock.patch.object(launch.Launch, "bound", real_bound), \
            mock.patch.object(launch, "SHARED", shared):
        _bind_up_front(prefix, triton.runtime.driver.active.get_current_device())
        yield shared


def _thrasher(mb: int) -> Callable[[], None]:
    """`--thrash`: a call that reads `mb` MB (a byte a cache line) and runs unrelated
    Python, as a device process's work between first calls; for 0, nothing."""
    if mb <= 0:
        return lambda: None
    buf = bytearray(b"\x01") * (mb << 20)   # written: no shared zero pages
    junk = [{f"k{i}": i} for i in range(20000)]

    def thrash() -> None:
        sum(buf[::64])
        for d in junk:
            d.get("k1")
        json.dumps(junk[:2000])

    return thrash


def _first_and_second(pkg, mode: str, cases: list, thrash: Callable[[], None]
                      ) -> list[tuple[float, float]]:
    """(us, us) of the first and the second call of each case, each caller made untimed,
    after one warm-up shape's two calls (inside `_as_loaded`)."""
    from gemmgate.shapes import Case

    warm = _caller(pkg, mode, Case(*WARM))
    warm()
    warm()
    out = []
    for case in cases:
        call = _caller(pkg, mode, case)
        thrash()
        t0 = time.perf_counter()
        call()
        t1 = time.perf_counter()
        call()
        t2 = time.perf_counter()
        out.append(((t1 - t0) * 1e6, (t2 - t1) * 1e6))
    return out


def _check_launched(jit: dict[str, int], shared: dict, prefix: str) -> None:
    """RuntimeError where the JIT was called, no launch asked SHARED, or package
    `prefix`'s Direct.of refuses a stand-in: the figures would hold JIT time, or not the
    launch path."""
    called = ", ".join(f"JITFunction.{name} {n} times" for name, n in jit.items() if n)
    if called:
        raise RuntimeError(f"--first: {called}: the first calls' figures would include "
                           "JIT time (a launch past Launch, or a key SHARED did not answer)")
    if not shared:
        raise RuntimeError("--first: no launch asked launch.SHARED for a compiled kernel "
                           "(kernels decorated for the interpreter? TRITON_INTERPRET): "
                           "the figures would not include the launch path")
    direct = importlib.import_module(f"{prefix}.launch_direct").Direct
    if any(direct.of(kernel, len(key[2]), ()) is None for key, kernel in shared.items()):
        raise RuntimeError("--first: Direct.of refuses the stand-in compiled kernel's "
                           "launcher (not triton 3.6's form): no direct launch was timed")


def first_calls(pkg, prefix: str, modes: list[str], cases: list, thrash_mb: int = 0
                ) -> dict[str, list[tuple[float, float]]]:
    """`--first`'s child: per mode, `_first_and_second` of `cases` on package `pkg`
    (imported under `prefix`) as a device process with its kernels loaded runs them
    (`_as_loaded`). RuntimeError where JITFunction.run or _do_compile was called, no
    launch asked SHARED, or Direct.of refuses the stand-in (`_check_launched`)."""
    thrash = _thrasher(thrash_mb)
    out = {}
    with _jit_counted() as jit, _as_loaded(prefix) as shared:
        for mode in modes:
            gc.collect()
            out[mode] = _first_and_second(pkg, mode, cases, thrash)
    _check_launched(jit, shared, prefix)
    return out


def measure_first(trees: list[tuple[str, str, str | None]], modes: list[str], shapes: int,
                  rounds: int, seed: int, set_name: str | None = None,
                  thrash_mb: int = 0) -> list[dict]:
    """`--first`: per round a fresh process per tree, all modes in it (`first_calls`);
    `trees` are (label, sha, the commit to load, None for this tree). Rows `first` and
    `second` per mode and tree, a round's figure its cases' mean."""
    argv = ["--first", "--modes", ",".join(modes), "--shapes", str(shapes), "--seed",
            str(seed), "--thrash", str(thrash_mb), *(["--set", set_name] if set_name else [])]
    states = ("first", "second")
    times: dict[tuple, list[float]] = {(s, label, m): [] for s in states for m in modes
                                       for label, _, _ in trees}
    count = {m: 0 for m in modes}
    for _ in range(rounds):
        for label, _, ref in trees:
            got = _run_child(ref, argv)
            for m in modes:
                count[m] = len(got[m])
                for i, s in enumerate(states):
                    times[s, label, m].append(statistics.fmean(c[i] for c in got[m]))
    return [_row(s, label, sha, m, count[m], times[s, label, m], 0)
            for m in modes for s in states for label, sha, _ in trees]


def _run_child(ref: str | None, argv: list[str]):
    """What a child process of this script (`--cold`'s, `--first`'s) prints, as JSON:
    `ref` the commit it loads, None for this tree. TRITON_INTERPRET is not passed on (a
    kernel decorated for the interpreter has no device launch path). RuntimeError with the
    child's last line of error where it fails."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", ref or "", *argv]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    got = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if got.returncode:
        last = (got.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"a process of `{' '.join(cmd[2:])}` failed: {last}")
    return json.loads(got.stdout)


def _ref_prefix(sha: str) -> str:
    """The name a reference commit's kernels are imported under (gemmgate/reference.py)."""
    return f"gemmgate_ref_{sha[:12]}"


def _parser() -> argparse.ArgumentParser:
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
    ap.add_argument("--first", action="store_true",
                    help="a fresh process per tree and round, first and second calls on "
                         "new shapes timed, the launch path up to the C launch included")
    ap.add_argument("--thrash", type=int, default=0, metavar="MB",
                    help="--first: read MB of memory before each first call (caches cold)")
    ap.add_argument("--set", metavar="NAME",
                    help="--calls, --first: a shape set's cases every round, not random "
                         "shapes")
    ap.add_argument("--csv", metavar="FILE", help="also write the rows as CSV")
    ap.add_argument("--child", help=argparse.SUPPRESS)   # a child's: a commit, '' this tree
    return ap


def _refused(args) -> str | None:
    """Why the arguments are refused, or None."""
    from gemmgate.shape_sets import SETS

    bad = [m for m in args.modes.split(",") if m not in _MODES]
    if bad or args.shapes < 1 or args.rounds < 1:
        return (f"need modes among {', '.join(_MODES)} and --shapes, --rounds >= 1 (got "
                f"{args.modes}, {args.shapes}, {args.rounds})")
    if args.cold + (args.calls is not None) + args.first > 1:
        return "--cold, --calls and --first exclude each other"
    if args.calls is not None and args.calls < 1:
        return "--calls >= 1"
    if args.thrash < 0 or (args.thrash and not args.first):
        return "--thrash MB >= 0, only with --first"
    if args.set is not None and not (args.calls or args.first):
        return "--set only with --calls or --first"
    if args.set is not None and args.set not in SETS:
        return f"error: unknown --set {args.set!r}; sets: {', '.join(SETS)}"
    return None


def _child(args) -> int:
    """A child process's part (`--cold`'s, `--first`'s): its figures printed as JSON."""
    import kernels
    from gemmgate import reference

    pkg, prefix = kernels, "kernels"
    if args.child:
        sha, pkg = reference.load(args.child, ROOT)
        prefix = _ref_prefix(sha)
    if args.first:
        got = first_calls(pkg, prefix, args.modes.split(","),
                          first_cases(args.seed, args.shapes, args.set), args.thrash)
    else:
        got = first_plans(pkg, args.modes, args.seed, args.shapes)
    print(json.dumps(got))
    return 0


def _print(rows: list[dict], unit: str, hits: bool) -> None:
    for row in rows:
        print(f"{row['mode']:6s} {row['state']:6s} {row['tree']:14s} {row['sha']}  best "
              f"{row['best_us']:>7s} us/{unit}, median {row['median_us']:>7s}"
              + (f"  ({row['table_hits']} from the table)" if hits else ""))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.child is not None:
        return _child(args)
    why = _refused(args)
    if why:
        print(f"plan_time: {why}", file=sys.stderr)
        return 2
    import kernels
    from gemmgate import reference

    modes = args.modes.split(",")
    cases = _set_cases(args.set) if args.set and args.calls else None
    try:
        if args.csv is not None:   # before the measuring: a --csv that cannot be written
            # was a traceback and exit 1 ("a --first process failed") after every round,
            # the figures lost (a review)
            from gemmgate.cli_outputs import check_outputs

            check_outputs((args.csv, "--csv"))
        head = reference.resolve("HEAD", ROOT, "HEAD")
        refs = [reference.resolve(ref, ROOT, "--ref") for ref in args.ref]
        labels = [f"ref {ref}" for ref in args.ref]
        trees = [(label, *reference.load(sha, ROOT)) for label, sha in zip(labels, refs)]
    except ValueError as e:
        print(f"plan_time: error: {e}", file=sys.stderr)
        return 2
    unloaded = [*zip(labels, refs, refs), ("tree", head, None)]
    try:
        if args.calls:
            rows = measure_calls([*((label, sha, pkg, _ref_prefix(sha))
                                    for label, sha, pkg in trees),
                                  ("tree", head, kernels, "kernels")], modes, args.shapes,
                                 args.rounds, args.seed, args.calls, cases)
        elif args.first:
            rows = measure_first(unloaded, modes, args.shapes, args.rounds, args.seed,
                                 args.set, args.thrash)
        elif args.cold:
            rows = measure_cold(unloaded, modes, args.shapes, args.rounds, args.seed)
        else:
            rows = measure([*trees, ("tree", head, kernels)], modes, args.shapes,
                           args.rounds, args.seed)
    except RuntimeError as e:
        print(f"plan_time: {e}", file=sys.stderr)
        return 1
    _print(rows, "call" if args.calls or args.first else "plan",
           not (args.calls or args.first))
    if args.csv:
        from gemmgate.files import write_csv_atomic

        write_csv_atomic(args.csv, rows, _FIELDS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
