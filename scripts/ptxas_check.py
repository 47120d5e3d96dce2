"""What ptxas makes of named tiles, on the CPU: registers, spills, shared memory, and
whether it serializes the wgmma pipeline.

    python3 scripts/ptxas_check.py TILE [TILE ...] [--mode bf16] [--shape 4096x4096x4096]

Each tile (written as tiles.py writes it: `tma_wide:128x192x64:s4:w8`, any variant) runs
in a row-major call of that shape in that mode through kernels.matmul on meta tensors, as
an H200 plans it (`config=` the tile; tf32 and fp8 with B copied K-major, as the
dispatcher copies it), and the kernel that call launches for the tile is compiled for
sm_90a with no GPU (scripts/call_audit.py's machinery: Triton's own `warmup`, then the
ptxas this Triton ships, with -v). A `tma_ws` tile must be one the warp-specialized
kernel runs (`ws_forms.fits`), else the call would run its `tma` form. ptxas warns
"C7515: wgmma.mma_async instructions are serialized" where the tensor cores would run one
wgmma group at a time: session 33's first `tma_wide` ran 0.56-0.70 of cuBLAS so (triton
3.6, a flattened tile loop with two accumulators), where nothing on the device said why.
The device's Triton is what matters: install its wheel in a venv beside this one
(`python3 -m venv --system-site-packages V; V/bin/pip install --no-deps triton==3.6.0`)
and run this with V/bin/python.

Prints one line per tile: `ok` or `SERIALIZED`, registers a thread, spill stores and the
shared memory Triton allocates a program (the H200 grants 227 KiB: more fails at launch
with "out of resources"); a hybrid tile's two kernels, a line each. Exit 0 when none is
serialized, 1 when any is, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "scripts" / "device"))

MODES = ("bf16", "fp16", "tf32", "fp8")
_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "tf32": "float32", "fp8": "float8_e4m3fn"}
# a call's other kernels: operand copies, a staged C's copy, split-K's reduction
_AUXILIARY = ("_copy_kernel", "_unstage_kernel", "_reduce_kernel")


def tile_kernels(tile, mode: str, shape: tuple[int, int, int]) -> list:
    """call_audit.Kernel of each kernel a row-major call of `shape` in `mode` compiles
    for `tile` (its operand copies and reductions left out)."""
    from call_audit import audit, target

    from gemmgate.shapes import Case

    kernels, _ = audit([(mode, Case(*shape), True)], target(), tile)
    return [k for k in kernels.values() if k.name not in _AUXILIARY]


def _check(tile, mode: str) -> None:
    """ValueError for a `tma_ws` tile the warp-specialized kernel does not run."""
    import torch

    from kernels import ws_forms

    if tile.variant == "tma_ws" and (mode not in ("bf16", "fp16", "fp8") or not ws_forms.fits(
            tile, getattr(torch, _DTYPES[mode]).itemsize)):
        raise ValueError(f"{tile}: the tma_ws kernel runs 16-bit and fp8 tiles that "
                         "ws_forms.fits")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tiles", nargs="+", help="tiles as tiles.py writes them")
    p.add_argument("--mode", default="bf16", choices=MODES)
    p.add_argument("--shape", default="4096x4096x4096", help="M x N x K of the call")
    args = p.parse_args(argv)
    from tiles import parse_tile

    from gemmgate.sweep import parse_shape

    try:
        tiles = [parse_tile(t) for t in args.tiles]
        case = parse_shape(args.shape)
        for t in tiles:
            _check(t, args.mode)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    bad = 0
    for spec, t in zip(args.tiles, tiles):
        for k in tile_kernels(t, args.mode, (case.m, case.n, case.k)):
            if k.error:
                print(f"{spec} {args.mode}: {k.name} did not compile: {k.error}")
                bad += 1
                continue
            bad += k.serialized
            print(f"{spec} {args.mode}: {'SERIALIZED' if k.serialized else 'ok'}, "
                  f"{k.registers} registers, {k.spill_stores} bytes spill stores, "
                  f"{k.shared} bytes shared")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
