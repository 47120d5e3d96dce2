"""Accumulation on the device, measured: error against float64 and speed, per setting.

`--mode bf16` / `fp16`: kernels.matmul and torch.matmul (`cublas`), their errors and
their excess over the output's own rounding (below), for what an honest fp32
accumulation leaves on the tensor cores. `--mode fp8` (the default):

Triton compiles an fp8 dot on sm_90 with `max_num_imprecise_acc_default = 2**30`: the
wgmma accumulator's reduced-precision ("fast") accumulation, never promoted to fp32,
while the vendor provider runs torch._scaled_mm with `use_fast_accum=False`. This times
and checks, on the same inputs:
  - `triton`: kernels.matmul in fp8 as the harness calls it (scales, kept copies), every
    launch compiled with this process's `--promote N` (Triton's default where omitted;
    N: products summed in the accumulator's precision before they are added into an
    fp32 one; a dot whose K block is under N is never promoted);
  - `cublas`: torch._scaled_mm, use_fast_accum=False (the vendor provider's);
  - `cublas_fast`: the same with use_fast_accum=True.
One setting per process (`python3 scripts/device/accum.py SHAPES --promote 32 --csv
F`): the option is fixed per Launch. Rows (appended to --csv): shape, provider, promote,
relative Frobenius error, its worst block's, the excess over the output's own rounding
(`gemmgate.accuracy.errors`' excess), median ms (gemmgate.timing.measure: CUDA graphs, L2 flushed,
interleaved), TFLOP/s. An experiment's script: it patches kernels.launch.Launch, which
the kernels do not offer.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

import torch

import kernels
from gemmgate.accuracy import errors
from gemmgate.chips import select_chip
from gemmgate.inputs import make_inputs
from gemmgate.precision import get_mode, vendor_flags
from gemmgate.sweep import parse_shape
from gemmgate.timing import TimingPolicy, measure
from kernels import launch

FIELDS = ("shape", "mode", "provider", "promote", "error", "block_error", "excess", "ms", "tflops")


def _promote_every(n: int) -> None:
    """Every Launch made from now on compiles with max_num_imprecise_acc_default=n."""
    init = launch.Launch.__init__

    def patched(self, *args, **kw):
        init(self, *args, **kw)
        self.kw = {**self.kw, "max_num_imprecise_acc_default": n}

    launch.Launch.__init__ = patched


def _scaled(inp, fast: bool):
    a, bt = inp.a.contiguous(), inp.b.t().contiguous().t()   # B K-major, as cuBLASLt wants

    def call():
        return torch._scaled_mm(a, bt, scale_a=inp.scale_a, scale_b=inp.scale_b,
                                out_dtype=torch.bfloat16, use_fast_accum=fast)
    return call


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes", nargs="+")
    ap.add_argument("--promote", type=int, default=0, help="0: Triton's default")
    ap.add_argument("--mode", default="fp8", choices=("fp8", "bf16", "fp16"))
    ap.add_argument("--budget", type=float, default=0.3)
    ap.add_argument("--csv", required=True)
    args = ap.parse_args()
    if args.promote:
        _promote_every(args.promote)
    chip = select_chip(None).chip
    mode = get_mode(args.mode)
    flags = vendor_flags(mode)   # as the harness runs the vendor: no reduced-precision
    flags.__enter__()            # reductions (torch's default allows them in 16 bits)
    policy = TimingPolicy(budget_s=args.budget)
    path = Path(args.csv)
    new = not path.exists()
    with open(path, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(FIELDS)
        for text in args.shapes:
            case = parse_shape(text)
            m, n, k = case.m, case.n, case.k
            inp = make_inputs(case, mode, "cuda", seed=m * 31 + k)
            ref = inp.reference()

            def triton_call(inp=inp):
                return kernels.matmul(inp.a, inp.b, precision=mode.name, scale_a=inp.scale_a,
                                      scale_b=inp.scale_b, cache_copies=True)
            calls = {"triton": triton_call}
            if mode.name != "fp8":
                calls["cublas"] = lambda inp=inp: torch.matmul(inp.a, inp.b)
            elif k % 16 == 0 and n % 16 == 0:
                calls.update(cublas=_scaled(inp, False), cublas_fast=_scaled(inp, True))
            errs = {name: errors(call(), ref) for name, call in calls.items()}
            torch.cuda.synchronize()
            ms = measure(calls, policy, flush_bytes=chip.flush_bytes)
            for name in calls:
                med = statistics.median(ms[name])
                e = errs[name]
                row = (text, mode.name, name, args.promote or "default", f"{e.whole:.4e}",
                       f"{e.block:.4e}", f"{e.excess:.4e}", f"{med:.5f}",
                       f"{2 * m * n * k / med / 1e9:.1f}")
                w.writerow(row)
                print(",".join(map(str, row)), flush=True)
            del ref
    return 0


if __name__ == "__main__":
    sys.exit(main())
