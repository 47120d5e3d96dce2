"""fp8's long-K error, modelled on the CPU: a sum rounded to BITS significant bits after
every CHUNK products, per K range of a split, the ranges added in fp32.

    python3 scripts/accum_model.py [--ks 1024,4096,...] [--splits 1,2,4] [--bits 11]
                                   [--chunk 32] [--mn 64] [--fit ACCUM.csv] [--csv FILE]

Triton's fp8 dot on sm_90 sums in wgmma's fast accumulator, never promoted (scripts/device/
accum.py; docs/PERF.md session 60): its error grows with K and leaves fp8's band (5e-3)
between K = 32,768 and 65,536, where cuBLAS's precise accumulation stays at the bf16
output's own rounding. A split-K tile (`tma_split`) starts each K range's sum afresh and
adds the ranges' fp32 partials in its reduction, so its error should be a range's, not the
whole K's. This predicts that error before a device measures it (accum.py `--max-range`).

The model is empirical, not the hardware's rule: the operands are the harness's
(gemmgate.inputs.make_inputs, fp8 with per-tensor scales, `--mn` rows and columns), the
CHUNK products of a step summed exactly, the running sum rounded to nearest at BITS
significant bits after each step, each range's sum kept to fp32, the output rounded to
bf16; the error is gemmgate.accuracy's (relative Frobenius against float64). `--fit F`
reads an accum.csv (the rows of Triton's default setting) and prints, for each BITS of
9-14, the geomean of model/measured error over its shapes' K: the BITS to predict with.
Rows (stdout, `--csv`): k, split, bits, chunk, error. Exit 0; 2 on bad input.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FIELDS = ("k", "split", "bits", "chunk", "error")


def _rounded(x, bits: int):
    """x rounded to nearest at `bits` significant bits (float64 in, float64 out)."""
    import torch

    m, e = torch.frexp(x)   # x = m * 2**e, |m| in [0.5, 1)
    return torch.ldexp(torch.round(m * 2.0 ** bits) / 2.0 ** bits, e)


def modelled(a, b, bits: int, chunk: int, split: int):
    """A @ B (float64 operands) as the model sums it: per K range, `chunk` products a
    step, the running sum rounded to `bits` bits after each; each range's sum to fp32;
    the ranges added (float64: the reduction's fp32 adds are far below this error)."""
    import torch

    k = a.shape[1]
    out = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float64)
    for s in range(split):
        lo, hi = k * s // split, k * (s + 1) // split
        acc = torch.zeros_like(out)
        for k0 in range(lo, hi, chunk):
            k1 = min(k0 + chunk, hi)
            acc = _rounded(acc + a[:, k0:k1] @ b[k0:k1], bits)
        out += acc.float().double()
    return out


def error(k: int, split: int, bits: int, chunk: int, mn: int, seed: int = 1) -> float:
    """The model's relative error on the harness's fp8 operands of (mn, mn, k), output
    rounded to bf16 (scales applied before the rounding, as the kernels apply them)."""
    import torch

    from gemmgate.accuracy import errors
    from gemmgate.inputs import make_inputs
    from gemmgate.precision import MODES
    from gemmgate.shapes import Case

    inp = make_inputs(Case(mn, mn, k), MODES["fp8"], "cpu", seed=seed)
    a, b = inp.a.double(), inp.b.double()
    scale = float(inp.scale_a) * float(inp.scale_b)
    ref = (a @ b) * scale
    got = (modelled(a, b, bits, chunk, split) * scale).to(torch.bfloat16)
    return errors(got, ref).whole


def measured(path: Path) -> dict[int, float]:
    """K -> Triton's fp8 error in an accum.csv (its default setting; the median where
    several shapes share a K)."""
    by_k: dict[int, list[float]] = {}
    with open(path, newline="") as f:
        try:
            for r in csv.DictReader(f):
                if r["mode"] == "fp8" and r["provider"] == "triton" \
                        and r["promote"] == "default":
                    k = int(r["shape"].split("x")[2])
                    by_k.setdefault(k, []).append(float(r["error"]))
        except (KeyError, IndexError) as e:
            raise ValueError(f"{path}: not an accum.py CSV (a row without {e})") from None
    if not by_k:
        raise ValueError(f"{path}: no fp8 rows of Triton's default setting")
    return {k: statistics.median(v) for k, v in sorted(by_k.items())}


def _ints(text: str, name: str) -> list[int]:
    try:
        xs = [int(x) for x in text.split(",")]
    except ValueError:
        xs = []
    if not xs or min(xs) < 1:
        raise ValueError(f"--{name} must be positive integers, comma-separated, got {text!r}")
    return xs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ks", default="1024,4096,8192,11008,16384,32768,65536")
    ap.add_argument("--splits", default="1,2,4")
    ap.add_argument("--bits", type=int, default=11)
    ap.add_argument("--chunk", type=int, default=32)
    ap.add_argument("--mn", type=int, default=64)
    ap.add_argument("--fit", metavar="ACCUM_CSV")
    ap.add_argument("--csv", metavar="FILE")
    args = ap.parse_args(argv)
    try:
        ks, splits = _ints(args.ks, "ks"), _ints(args.splits, "splits")
        if not 2 <= args.bits <= 24 or args.chunk < 1 or args.mn < 1:
            raise ValueError(f"--bits must be 2-24, --chunk and --mn >= 1 (got {args.bits}, "
                             f"{args.chunk}, {args.mn})")
        fit = measured(Path(args.fit)) if args.fit else None
    except (ValueError, OSError) as e:
        print(f"accum_model: error: {e}", file=sys.stderr)
        return 2
    if fit:
        for bits in range(9, 15):
            ratios = [error(k, 1, bits, args.chunk, args.mn) / e for k, e in fit.items()]
            print(f"bits {bits}: model/measured geomean "
                  f"{math.exp(statistics.fmean(map(math.log, ratios))):.3f} (min "
                  f"{min(ratios):.3f}, max {max(ratios):.3f}) over K {', '.join(map(str, fit))}")
    rows = [dict(k=k, split=s, bits=args.bits, chunk=args.chunk,
                 error=f"{error(k, s, args.bits, args.chunk, args.mn):.4e}")
            for k in ks for s in splits if k // s >= args.chunk]
    for r in rows:
        print(",".join(str(r[f]) for f in FIELDS))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
