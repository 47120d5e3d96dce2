"""What ptxas makes of a TMA variant's tiles, on the CPU: registers, spills, and whether it
serializes the wgmma pipeline.

    python3 scripts/ptxas_check.py TILE [TILE ...] [--mode bf16] [--shape 4096x4096x4096]
                                   [--arch 90]

Each tile (written as tiles.py writes it: `tma_wide:128x192x64:s4:w8`; variants `tma`,
`tma_wide`, `tma_tall` and `tma_streamk`) is made into the launch kernels.matmul would
make for a row-major call of that shape in that mode (the variant's `recipe`, on meta
tensors), compiled with `triton.compile` for sm_ARCH with no GPU, and its PTX assembled
by the ptxas this Triton ships, with -v (a `tma_ws` tile, the warp-specialized Gluon
kernel, 16-bit or fp8: compiled from the tile alone, its stages and registers as
kernels.matmul launches it). ptxas warns "C7515: wgmma.mma_async instructions are serialized" where
the tensor cores would run one wgmma group at a time: session 33's first `tma_wide` ran
0.56-0.70 of cuBLAS so (triton 3.6, a flattened tile loop with two accumulators), where
nothing on the device said why. The device's Triton is what matters: install its wheel
in a venv beside this one (`python3 -m venv --system-site-packages V; V/bin/pip install
--no-deps triton==3.6.0`) and run this with V/bin/python.

Prints one line per tile: `ok` or `SERIALIZED`, registers a thread, spill stores and the
shared memory Triton allocates a program (the H200 grants 227 KiB: more fails at launch
with "out of resources"); exit 0 when none is serialized, 1 when any is, 2 on bad input.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "device"))

_DTYPES = {"bf16": ("bfloat16", "bf16"), "fp16": ("float16", "fp16"),
           "tf32": ("float32", "fp32"), "fp8": ("float8_e4m3fn", "fp8e4nv")}
_TRITON_NAME = dict(_DTYPES.values())   # a torch dtype's name -> Triton's name for it


def _launch(tile, mode: str, m: int, n: int, k: int, sms: int = 132):
    """(the recipe, its Launch, out) kernels.matmul makes for a row-major call (tf32 and
    fp8 with B K-major, as the dispatcher copies it), on meta tensors, for a chip of `sms`
    SMs (the persistent grid's NUM_SMS; no GPU is asked)."""
    from unittest import mock

    import torch

    from kernels import matmul_tma, matmul_tma_streamk, matmul_tma_wide, ws_forms

    if tile.variant == "tma_ws":   # Gluon: `compile_ws`, from the tile alone
        if mode not in ("bf16", "fp16", "fp8") or not ws_forms.fits(
                tile, getattr(torch, _DTYPES[mode][0]).itemsize):
            raise ValueError(f"{tile}: the tma_ws kernel runs 16-bit and fp8 tiles that "
                             "ws_forms.fits")
        return None, None, None
    make = {"tma": matmul_tma.recipe, "tma_wide": matmul_tma_wide.recipe,
            "tma_tall": matmul_tma_wide.recipe,
            "tma_streamk": matmul_tma_streamk.recipe}.get(tile.variant)
    if make is None:
        raise ValueError(f"variant {tile.variant!r}: this checks tma, tma_wide, tma_tall, "
                         "tma_streamk and tma_ws tiles")
    dtype = getattr(torch, _DTYPES[mode][0])
    a = torch.empty((m, k), dtype=dtype, device="meta")
    b = torch.empty((n, k) if mode in ("tf32", "fp8") else (k, n), dtype=dtype,
                    device="meta")
    b = b.t() if mode in ("tf32", "fp8") else b
    out = torch.empty((m, n), dtype=torch.bfloat16 if mode == "fp8" else dtype,
                      device="meta")
    with mock.patch.object(matmul_tma, "num_sms", lambda device: sms), \
            mock.patch.object(matmul_tma_wide, "num_sms", lambda device: sms), \
            mock.patch.object(matmul_tma_streamk, "num_sms", lambda device: sms):
        r = make(tile, a, b, out, input_precision="tf32" if mode == "tf32" else "ieee",
                 is_fp32=mode == "tf32", has_scale=mode == "fp8")
    return r, r.run, out


def compile_ws(tile, mode: str, arch: int):
    """The warp-specialized kernel (kernels/matmul_ws.py) compiled for a `tma_ws` tile
    over a row-major A (fp8: B K-major), for sm_`arch`: its constexprs, warps and
    registers are the Launch kernels.matmul makes (`matmul_ws._launch`), its descriptors'
    blocks the tile's."""
    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from kernels import matmul_ws as ws
    from kernels import ws_forms

    fp8 = mode == "fp8"   # B K-major, C in bf16
    dtype = getattr(torch, _DTYPES[mode][0])
    bm, bk = tile.block_m, tile.block_k
    first, rest = ws_forms.parts(tile)
    run = ws._launch(first, rest, tile.group_m, ws_forms.stages(tile, dtype.itemsize), fp8,
                     4096, 4096, 4096, 132, dtype, bm, tile.occupancy)
    c_dtype = torch.bfloat16 if fp8 else dtype

    def desc(block: tuple[int, int], t: torch.dtype = dtype) -> str:
        layout = ws._layout(block, ws._DTYPES[t])
        return f"tensordesc<{_TRITON_NAME[str(t)[6:]]}[{block[0]}, {block[1]}],{layout!r}>"

    two = rest or first   # the second boxes (the first's where the tile has none)
    b_box = (lambda w: (w, bk)) if fp8 else (lambda w: (bk, w))
    sig = dict(a_desc=desc((bm, bk)), b_desc=desc(b_box(first)), b1_desc=desc(b_box(two)),
               c_desc=desc((bm, first), c_dtype), c1_desc=desc((bm, two), c_dtype),
               scale_a="*fp32", scale_b="*fp32", M="i32", N="i32", K="i32")
    options = {k: run.kw[k] for k in ("num_warps", "maxnreg")}
    consts = {k: v for k, v in run.kw.items() if k != "maxnreg"}
    names = ws._ws_kernel.arg_names
    sig.update({n: "constexpr" for n in consts})
    src = GluonASTSource(fn=ws._ws_kernel, signature={n: sig[n] for n in names},
                         constexprs={(names.index(n),): v for n, v in consts.items()})
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)


def compile_tile(tile, mode: str, shape: tuple[int, int, int], arch: int):
    """The compiled kernel of a tile's launch for sm_`arch`."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if tile.variant == "tma_ws":
        return compile_ws(tile, mode, arch)

    r, run, out = _launch(tile, mode, *shape)
    fn = run.fn
    elem = _DTYPES[mode][1]
    c_elem = _TRITON_NAME[str(out.dtype)[6:]]
    names = fn.arg_names
    descs = [n for n in names if n.endswith("_desc")]
    sig = {d: f"tensordesc<{c_elem if d.startswith('c') else elem}"
              f"[{', '.join(map(str, box))}]>" for d, box in zip(descs, r.blocks)}
    sig.update(c_ptr=f"*{c_elem}", scale_a_ptr="*fp32", scale_b_ptr="*fp32", ws_ptr="*fp32",
               lock_ptr="*i32")
    ints = [n for n in names if n not in sig and n not in run.kw]
    sig.update({n: "i32" for n in ints[:len(run.ints)]})
    consts = {n: v for n, v in run.kw.items() if n not in ("num_warps", "num_stages")}
    sig.update({n: "constexpr" for n in consts})
    sig = {n: sig[n] for n in names}
    src = ASTSource(fn=fn, signature=sig,
                    constexprs={(names.index(n),): v for n, v in consts.items()})
    return triton.compile(src, target=GPUTarget("cuda", arch, 32),
                          options=dict(num_warps=run.kw["num_warps"],
                                       num_stages=run.kw["num_stages"]))


def ptxas_report(ptx: str, arch: int) -> dict:
    """ptxas -v on the PTX: registers, spill stores, and the C7515 serialization."""
    from triton.backends.nvidia.compiler import get_ptxas

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.ptx"
        path.write_text(ptx)
        got = subprocess.run([get_ptxas(arch).path, f"-arch=sm_{arch}a", "-v", str(path),
                              "-o", str(Path(d) / "k.cubin")],
                             capture_output=True, text=True, timeout=300)
    text = got.stdout + got.stderr
    if got.returncode:
        raise RuntimeError(f"ptxas failed: {text.strip()[:300]}")
    return parse_ptxas(text)


def parse_ptxas(text: str) -> dict:
    """ptxas -v's words: C7515 (wgmma serialized), registers a thread, spill stores."""
    regs = re.search(r"Used (\d+) registers", text)
    spills = re.search(r"(\d+) bytes spill stores", text)
    return {"serialized": "C7515" in text, "registers": int(regs[1]) if regs else None,
            "spill_stores": int(spills[1]) if spills else None}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tiles", nargs="+", help="tiles as tiles.py writes them")
    p.add_argument("--mode", default="bf16", choices=sorted(_DTYPES))
    p.add_argument("--shape", default="4096x4096x4096", help="M x N x K of the call")
    p.add_argument("--arch", type=int, default=90)
    args = p.parse_args(argv)
    from tiles import parse_tile

    from gemmgate.sweep import parse_shape

    try:
        tiles = [parse_tile(t) for t in args.tiles]
        case = parse_shape(args.shape)
        shape = (case.m, case.n, case.k)
        for t in tiles:
            _launch(t, args.mode, *shape)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    bad = 0
    for spec, t in zip(args.tiles, tiles):
        kernel = compile_tile(t, args.mode, shape, args.arch)
        rep = ptxas_report(kernel.asm["ptx"], args.arch)
        bad += rep["serialized"]
        print(f"{spec} {args.mode}: {'SERIALIZED' if rep['serialized'] else 'ok'}, "
              f"{rep['registers']} registers, {rep['spill_stores']} bytes spill stores, "
              f"{kernel.metadata.shared} bytes shared")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
