"""Accumulation on the device, measured: error against float64 and speed, per setting.

`--mode bf16` / `fp16`: kernels.matmul and torch.matmul (`cublas`), their errors and
their excess over the output's own rounding (below), for what an honest fp32
accumulation leaves on the tensor cores. `--mode fp8` (the default):

Triton compiles an fp8 dot on sm_90 with `max_num_imprecise_acc_default = 2**30`: the
wgmma accumulator's reduced-precision ("fast") accumulation, never promoted to fp32,
while the vendor provider runs torch._scaled_mm with `use_fast_accum=False`. This times
and checks, on the same inputs:
  - `triton`: kernels.matmul in fp8 as the harness calls it (scales, kept copies); with
    `--promote-block`, every pointer and TMA kernel's dot gets
    `max_num_imprecise_acc=BLOCK_K`: each K block's products summed fast, then added into
    an fp32 accumulator (the warp-specialized Gluon kernels' wgmma is left as it is). The
    launch option `max_num_imprecise_acc_default` cannot do this: the CUDA backend's
    parse_options sets it to 2**30 on sm_90 whatever the launch asks (triton 3.6-3.9;
    session 60's promote rows equalled the default's bit for bit);
  - `cublas`: torch._scaled_mm, use_fast_accum=False (the vendor provider's);
  - `cublas_fast`: the same with use_fast_accum=True;
  - `triton_split` (with `--max-range K`): the pick with its K loop split into ranges of
    at most K elements (`tma_split`, `config=`), each range's sum kept fast and the ranges
    added in fp32 by the split's reduction: the error of a range of K, not of the whole
    K (scripts/accum_model.py predicts it), at the split's cost, timed beside the pick.
One setting per process (`python3 scripts/device/accum.py SHAPES --promote-block --csv
F`): kernels compile once per process. Rows (appended to --csv): shape, provider, promote,
relative Frobenius error, its worst block's, the excess over the output's own rounding
(`gemmgate.accuracy.errors`' excess), median ms (gemmgate.timing.measure: CUDA graphs, L2 flushed,
interleaved), TFLOP/s. An experiment's script: it swaps the kernels' `dot_acc` for a
promoting one, which the kernels do not offer.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import tempfile
from pathlib import Path

import torch

import kernels
from gemmgate.accuracy import errors
from gemmgate.chips import select_chip
from gemmgate.inputs import make_inputs
from gemmgate.precision import get_mode, vendor_flags
from gemmgate.sweep import parse_shape
from gemmgate.timing import measure
from gemmgate.timing_policy import TimingPolicy

FIELDS = ("shape", "mode", "provider", "promote", "error", "block_error", "excess", "ms", "tflops")


_PROMOTING = '''import triton
import triton.language as tl


@triton.jit
def dot_acc(a, b, acc, INPUT_PRECISION: tl.constexpr, IS_FP32: tl.constexpr):
    if IS_FP32:
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
    else:
        acc = tl.dot(a, b, acc, max_num_imprecise_acc=a.shape[1])
    return acc
'''


def _promote_per_block(folder: Path) -> int:
    """Every kernels module's `dot_acc` (a global its JIT kernels resolve when they first
    compile) becomes one that promotes each K block (a file of its own: the JIT reads a
    function's source); the modules swapped."""
    import importlib.util

    from kernels import jit_parts

    path = folder / "promoting_dot.py"
    path.write_text(_PROMOTING)
    spec = importlib.util.spec_from_file_location("promoting_dot", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    old, swapped = jit_parts.dot_acc, 0
    for name, mod in list(sys.modules.items()):
        if name.startswith("kernels") and getattr(mod, "dot_acc", None) is old:
            mod.dot_acc = module.dot_acc
            swapped += 1
    return swapped


def _scaled(inp, fast: bool):
    a, bt = inp.a.contiguous(), inp.b.t().contiguous().t()   # B K-major, as cuBLASLt wants

    def call():
        return torch._scaled_mm(a, bt, scale_a=inp.scale_a, scale_b=inp.scale_b,
                                out_dtype=torch.bfloat16, use_fast_accum=fast)
    return call


def split_tile(inp, mode_name: str, max_range: int):
    """The plan's pick for these operands (copies kept, as the harness calls it) with its K
    split into ranges of `max_range` elements at most (`kernels.dispatch.split_ranges`: a
    TMA tile as `tma_split`, the tiled kernel's as its own split), or None where its ranges
    are that short already or it has no split form."""
    from kernels import dispatch
    from kernels.modes import mode_named

    plan = dispatch.plan(mode_named(mode_name), inp.a, inp.b, cached=True)
    split = dispatch.split_ranges(plan.pick, inp.a.shape[1], plan.variants, max_range)
    return None if split is plan.pick else split


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes", nargs="+")
    ap.add_argument("--promote-block", action="store_true",
                    help="promote each K block's sum into fp32 (default: Triton's)")
    ap.add_argument("--mode", default="fp8", choices=("fp8", "bf16", "fp16"))
    ap.add_argument("--max-range", type=int, metavar="K",
                    help="also time `triton_split`: the pick with K split into ranges of "
                         "at most K elements")
    ap.add_argument("--budget", type=float, default=0.3)
    ap.add_argument("--csv", required=True)
    args = ap.parse_args()
    if args.max_range is not None and args.max_range < 1:
        ap.error(f"--max-range must be >= 1 element, got {args.max_range}")
    tmp = tempfile.TemporaryDirectory(prefix="accum-")
    if args.promote_block:
        print(f"promoting dot_acc in {_promote_per_block(Path(tmp.name))} kernels modules",
              file=sys.stderr)
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
            ref, scale2 = inp.reference_and_scale2()

            def triton_call(inp=inp):
                return kernels.matmul(inp.a, inp.b, precision=mode.name, scale_a=inp.scale_a,
                                      scale_b=inp.scale_b, cache_copies=True)
            calls = {"triton": triton_call}
            split = split_tile(inp, mode.name, args.max_range) if args.max_range else None
            if split is not None:
                calls["triton_split"] = lambda inp=inp, split=split: kernels.matmul(
                    inp.a, inp.b, precision=mode.name, scale_a=inp.scale_a,
                    scale_b=inp.scale_b, config=split, cache_copies=True)
            if mode.name != "fp8":
                calls["cublas"] = lambda inp=inp: torch.matmul(inp.a, inp.b)
            elif k % 16 == 0 and n % 16 == 0:
                calls.update(cublas=_scaled(inp, False), cublas_fast=_scaled(inp, True))
            errs = {name: errors(call(), ref, scale2) for name, call in calls.items()}
            torch.cuda.synchronize()
            ms = measure(calls, policy, flush_bytes=chip.flush_bytes)
            for name in calls:
                med = statistics.median(ms[name])
                e = errs[name]
                setting = " ".join(
                    (["block"] if args.promote_block and name.startswith("triton") else [])
                    + ([f"range{args.max_range} k{split.split_k}"]
                       if name == "triton_split" else [])) or "default"
                row = (text, mode.name, name, setting, f"{e.whole:.4e}",
                       f"{e.block:.4e}", f"{e.excess:.4e}", f"{med:.5f}",
                       f"{2 * m * n * k / med / 1e9:.1f}")
                w.writerow(row)
                print(",".join(map(str, row)), flush=True)
            del ref
    return 0


if __name__ == "__main__":
    sys.exit(main())
