"""Host cost per call, on the device: where eager time goes for small GEMMs.

`python3 scripts/device/overhead.py [MxNxK ...] [--mode bf16] [--calls 2000]` prints, per
shape, microseconds per call (wall clock over `calls` back-to-back calls, one sync at
the end: on a tiny shape the GPU keeps up, so this is the host's launch path) for
  - kernels.matmul as a library user calls it (checks, plan, copies, launch),
  - the launch alone (kernels.matmul._launcher on the caller's tensors: recipe,
    descriptors, launch; not what the library runs where its plan copies an operand),
  - torch.matmul (cuBLAS) and, with --mode fp8, torch._scaled_mm,
and one-call cold figures: the first call on an unseen shape, the part of it spent in
Triton's compile-or-load (`compile_ms`: JITFunction._do_compile, which builds the kernel
or loads it from the on-disk cache for a new specialization, and CompiledKernel.
_init_handles, which loads it onto the GPU), the part spent in Triton's JIT altogether
(`jit_ms`: JITFunction.run, which a Launch takes on its first call, compile-or-load
included), the rest (`own_ms`: the library's checks, plan, copies' and launches' own
code, and the wait for the device) and the second call (the plan cached); `own_host_ms`:
the first call's own part until it returns, `wait_ms`: from its return until the device
is done (the kernels' run, and CUDA's lazy load of a module launched the first time
unless CUDA_MODULE_LOADING=EAGER), `torch_first_ms`: torch.matmul's first call on the
shape, after the library's (cuBLAS's heuristic query for a new shape). The first
shape's first call also reads the tuning table and pays the process's one-time costs
(Triton hashing its own source).

`--parts FILE` writes each first call's inclusive time per library step (the checks and
plan, the table lookup, the recipe, the copies, the bound launches; the timers stay on,
so that run's per-call figures carry their cost). `--kernels N` then profiles N
library calls per shape with torch.profiler and prints each GPU kernel's device time per
call (the GEMM, operand copies, a staged C's copy), so a slow case shows which launch its
time goes to, then N torch.matmul calls the same way (cuBLAS's kernels beside ours).
`--mode fp8` calls with unit scales and `cache_copies=True`, as the harness's Triton
provider does. `--scratch-ab R` then times
the library call R times each with kept scratch buffers (kernels.scratch) on and off,
alternating in the one process (the host's speed moves up to x1.6 between processes),
and prints `scratch,SHAPE,MODE,on_us,off_us` per round.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time

import torch
from triton.compiler.compiler import CompiledKernel
from triton.runtime.jit import JITFunction

import kernels
from kernels import dispatch
from kernels.matmul import _launcher
from kernels.modes import mode_named


def _per_call_us(fn, calls: int) -> float:
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / calls * 1e6


def _once_ms(fn) -> float:
    return _once_split_ms(fn)[1]


def _once_split_ms(fn) -> tuple[float, float]:
    """(ms until fn returns, ms until the device is done too) for one call."""
    torch.cuda.synchronize()
    t = time.perf_counter()
    fn()
    back = time.perf_counter()
    torch.cuda.synchronize()
    return (back - t) * 1e3, (time.perf_counter() - t) * 1e3


class CompileClock:
    """Time spent in the given methods while installed (a measurement hook); default:
    compiling (JITFunction._do_compile: build, or load from the on-disk cache) and
    loading kernels onto the GPU (CompiledKernel._init_handles)."""

    def __init__(self, methods=((JITFunction, "_do_compile"),
                                (CompiledKernel, "_init_handles"))) -> None:
        self.seconds, self.calls = 0.0, 0
        for cls, name in methods:
            setattr(cls, name, self._timed(getattr(cls, name)))

    def _timed(self, orig):
        clock = self

        def timed(obj, *args, **kwargs):
            t = time.perf_counter()
            try:
                return orig(obj, *args, **kwargs)
            finally:
                clock.seconds += time.perf_counter() - t
                clock.calls += 1

        return timed


def _part_clocks() -> dict[str, CompileClock]:
    """`--parts`: inclusive time in the library's steps of a call (each clock counts its
    method's calls too, nested parts inside their callers): the checks and plan
    (`resolve`: kernels.matmul._resolve; inside it `decide` and the table `lookup`), the
    launch recipe, operand copies (`prepare`), and the bound launches (`bound_run`:
    launch.Bound.run, which holds the launch itself, the JIT's part and `make_bound`)."""
    matmul_mod = importlib.import_module("kernels.matmul")
    from kernels import launch, table
    parts = {"resolve": (matmul_mod, "_resolve"), "decide": (dispatch, "decide"),
             "lookup": (table, "lookup"), "recipe": (matmul_mod, "_recipe"),
             "prepare": (dispatch, "prepare"), "bound_run": (launch.Bound, "run"),
             "make_bound": (launch.Launch, "bound")}
    return {name: CompileClock(((owner, attr),)) for name, (owner, attr) in parts.items()}


def _profile(fn, calls: int, label: str, order: str = "tottime") -> None:
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    torch.cuda.synchronize()
    print(f"--- {label}: {calls} calls", file=sys.stderr)
    stats = pstats.Stats(prof, stream=sys.stderr).sort_stats(order)
    stats.print_stats(18)
    if order == "cumulative":   # a first call: the library's own part, past Triton's JIT
        stats.sort_stats("tottime").print_stats(r"kernels/|torch/|launch|cuda", 25)


def _kernel_times(fn, calls: int, label: str) -> None:
    """Device time per call of each GPU kernel fn launches, from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    print(f"--- {label}: device us per call, {calls} calls", file=sys.stderr)
    for ev in sorted(prof.key_averages(), key=lambda e: -e.device_time_total):
        if ev.device_time_total > 0:
            print(f"  {ev.device_time_total / calls:9.2f}  x{ev.count / calls:.2f}  "
                  f"{ev.key[:110]}", file=sys.stderr)


def _scratch_ab(call, calls: int) -> tuple[float, float]:
    """(us a call with kept scratch buffers, us a call without) in one process."""
    from kernels.scratch import SCRATCH
    keep = SCRATCH.max_bytes
    try:
        on = _per_call_us(call, calls)
        SCRATCH.max_bytes = -1
        SCRATCH.clear()
        off = _per_call_us(call, calls)
    finally:
        SCRATCH.max_bytes = keep
    return on, off


def _operands(m: int, n: int, k: int, mode: str) -> tuple:
    """(a, b, out, library call kwargs) for one shape and mode."""
    if mode == "fp8":
        f8 = torch.float8_e4m3fn
        a = torch.randn(m, k, device="cuda").to(f8)
        b = torch.randn(k, n, device="cuda").to(f8)
        one = torch.ones((), device="cuda")
        return (a, b, torch.empty(m, n, device="cuda", dtype=torch.bfloat16),
                dict(precision="fp8", scale_a=one, scale_b=one, cache_copies=True))
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[mode]
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    return a, b, torch.empty(m, n, device="cuda", dtype=dtype), {}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("shapes", nargs="*", default=["64x64x64", "1024x1024x1024"])
    ap.add_argument("--mode", default="bf16")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="then profile N library calls per shape (cProfile, top functions "
                         "by own time, to stderr)")
    ap.add_argument("--profile-first", action="store_true",
                    help="profile each shape's first call instead of timing it plainly "
                         "(cumulative time, to stderr; first_call_ms then includes the "
                         "profiler's cost)")
    ap.add_argument("--parts", metavar="FILE",
                    help="also write each first call's inclusive time per library step "
                         "(shape,mode,part,ms,calls CSV; `_part_clocks`)")
    ap.add_argument("--kernels", type=int, default=0, metavar="N",
                    help="then profile N library calls per shape on the device, and N "
                         "torch.matmul calls (torch.profiler: each GPU kernel's time per "
                         "call, to stderr)")
    ap.add_argument("--scratch-ab", type=int, default=0, metavar="R",
                    help="then time R rounds of library calls with kept scratch buffers "
                         "on and off, alternating (kernels.scratch)")
    args = ap.parse_args()
    clock, jit = CompileClock(), CompileClock(((JITFunction, "run"),))
    parts = _part_clocks() if args.parts else {}
    part_rows = ["shape,mode,part,ms,calls"]
    print("shape,mode,matmul_us,launch_us,torch_us,first_call_ms,compile_ms,jit_ms,own_ms,"
          "second_call_ms,own_host_ms,wait_ms,torch_first_ms")
    for text in args.shapes:
        m, n, k = (int(x) for x in text.split("x"))
        a, b, out, kw = _operands(m, n, k, args.mode)
        for c in (clock, jit, *parts.values()):
            c.seconds, c.calls = 0.0, 0
        call = lambda: kernels.matmul(a, b, out=out, **kw)  # noqa: E731
        host, first = _once_split_ms(call) if not args.profile_first else \
            _once_split_ms(lambda: _profile(call, 1, f"{text} first call", "cumulative"))
        compile_ms, jit_ms = clock.seconds * 1e3, jit.seconds * 1e3
        part_rows += [f"{text},{args.mode},{name},{c.seconds * 1e3:.3f},{c.calls}"
                      for name, c in (*parts.items(), ("jit", jit), ("compile", clock))]
        second = _once_ms(call)
        if args.mode == "fp8":
            torch_first = float("nan")
        else:   # cuBLAS's first call on the shape (its heuristic query, its own loads)
            torch_first = _once_ms(lambda: torch.matmul(a, b, out=out))
        lib = _per_call_us(call, args.calls)
        plan = dispatch.plan(mode_named(args.mode), a, b, cached=args.mode == "fp8")
        if args.mode == "fp8":  # the plan's copies made as the library makes them
            pa, pb = dispatch.prepare(plan, a, b, cache=True)
            flags = dict(input_precision="ieee", is_fp32=False, has_scale=True)
            fn = _launcher(plan.pick, pa, pb, out, kw["scale_a"], kw["scale_b"], flags)
            sa = kw["scale_a"]
            ref = _per_call_us(lambda: torch._scaled_mm(
                pa, pb if pb.stride(0) == 1 else pb.t().contiguous().t(), scale_a=sa,
                scale_b=sa, out_dtype=torch.bfloat16), args.calls) \
                if (k % 16 == 0 and n % 16 == 0) else float("nan")
        else:
            flags = dict(input_precision="ieee", is_fp32=a.dtype == torch.float32,
                         has_scale=False)
            fn = _launcher(plan.pick, a, b, out, a, a, flags)
            ref = _per_call_us(lambda: torch.matmul(a, b, out=out), args.calls)
        raw = _per_call_us(fn, args.calls)
        # ms to the microsecond: a first call's own part is tenths of a millisecond
        print(f"{text},{args.mode},{lib:.1f},{raw:.1f},{ref:.1f},{first:.3f},{compile_ms:.3f},"
              f"{jit_ms:.3f},{first - jit_ms:.3f},{second:.3f},{host - jit_ms:.3f},"
              f"{first - host:.3f},{torch_first:.3f}")
        for _ in range(args.scratch_ab):
            on, off = _scratch_ab(call, args.calls)
            print(f"scratch,{text},{args.mode},{on:.1f},{off:.1f}")
        if args.profile:
            _profile(call, args.profile, text)
        if args.kernels:
            print(f"    tile {plan.pick}", file=sys.stderr)
            _kernel_times(call, args.kernels, f"{text} {args.mode}")
            if args.mode != "fp8":   # the vendor's kernels beside them, the same way
                _kernel_times(lambda: torch.matmul(a, b, out=out), args.kernels,
                              f"{text} {args.mode} torch.matmul")
    if args.parts:
        with open(args.parts, "w") as f:
            f.write("\n".join(part_rows) + "\n")


if __name__ == "__main__":
    main()
