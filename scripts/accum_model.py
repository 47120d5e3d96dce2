"""fp8's long-K error, modelled on the CPU: a sum rounded to BITS significant bits after
every CHUNK products, per K range of a split, the ranges added in fp32.

    python3 scripts/accum_model.py [--ks 1024,4096,...] [--splits 1,2,4] [--bits 11]
                                   [--chunk 32] [--mn 64] [--fit ACCUM.csv [--fit-csv F]]
                                   [--csv FILE]
    python3 scripts/accum_model.py --price MxNxK,... [--splits 1,2,4] [--csv FILE]

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
9-14, the geomean of model/measured error over its shapes' K: the BITS to predict with
(`--fit-csv F` also writes them: bits, geomean, min, max, ks).
Rows (stdout, `--csv`): k, split, bits, chunk, error. Exit 0; 2 on bad input.

`--price`: what a split costs, by the lookup's step model instead (kernels/steps.py, no
device): per fp8 shape (row-major, as the harness lays it out), the H200's pick (copies
kept) unsplit, and each split of `--splits` of it as `tma_split`, priced as the lookup
prices a tile from an entry (`fixed_ms` plus the pick's time a step, from
`table.predict` of the unsplit tile, times `steps`, a split's programs paired on an SM
where two fit). Rows: shape, the pick (gemmgate.tuning.config_name), its tile unsplit,
the split, predicted ms, speed against the unsplit tile.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

FIELDS = ("k", "split", "bits", "chunk", "error")
FIT_FIELDS = ("bits", "geomean", "min", "max", "ks")
PRICE_FIELDS = ("shape", "pick", "tile", "split", "ms", "speed")


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


def prices(m: int, n: int, k: int, splits: list[int]) -> list[dict]:
    """`--price`'s rows for one fp8 shape: its H200 pick unsplit and split each way."""
    from lookup_diff import DEVICE, SMEM, _decided

    import kernels
    from gemmgate.shapes import Case
    from gemmgate.tuning import config_name
    from kernels import table
    from kernels.configs import ranges_fit
    from kernels.steps import derive, fixed_ms, split_residency, steps

    case, sms = Case(m, n, k), 132
    _, _, bucket, _, _, variants = _decided(kernels, "fp8", case)
    found = table.lookup(DEVICE, bucket, m, n, k, variants=variants, sms=sms, smem=SMEM)
    if found is None or found[0].variant not in ("tma", "tma_split", "tma_ws"):
        raise ValueError(f"{m}x{n}x{k}: the H200's fp8 pick is no TMA tile from the table")
    base = derive(found[0], "tma", 1, 1)
    whole = table.predict(DEVICE, bucket, m, n, k, base, sms=sms, variants=variants,
                          smem=SMEM)
    if whole is None:
        raise ValueError(f"{m}x{n}x{k}: the table model cannot price {base} unsplit")
    per_step = (whole - fixed_ms(base, m, n, sms)) / steps(base, m, n, k, sms)
    rows = []
    for split in splits:
        if split > 1 and not ranges_fit(k, split, base.block_k):
            continue
        tile = base if split == 1 else derive(base, "tma_split", split, 1)
        per_sm = split_residency(tile, "fp8", SMEM)
        ms = fixed_ms(tile, m, n, sms) + per_step * steps(tile, m, n, k, sms, per_sm)
        rows.append(dict(shape=f"{m}x{n}x{k}", pick=config_name(found[0]),
                         tile=f"{base.block_m}x{base.block_n}x{base.block_k}:"
                              f"s{base.num_stages}:w{base.num_warps}", split=split,
                         ms=f"{ms:.4f}", speed=f"{whole / ms:.3f}"))
    return rows


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
    ap.add_argument("--fit-csv", metavar="FILE", help="--fit: also write its rows here")
    ap.add_argument("--price", metavar="SHAPES", help="MxNxK,...: the step model's price of "
                    "each split instead")
    ap.add_argument("--csv", metavar="FILE")
    args = ap.parse_args(argv)
    if args.price:
        return _price(args)
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
        fitted = fit_rows(fit, args.chunk, args.mn)
        for r in fitted:
            print(f"bits {r['bits']}: model/measured geomean {r['geomean']} (min {r['min']}, "
                  f"max {r['max']}) over K {r['ks']}")
        if args.fit_csv:
            _write(fitted, FIT_FIELDS, args.fit_csv)
    rows = [dict(k=k, split=s, bits=args.bits, chunk=args.chunk,
                 error=f"{error(k, s, args.bits, args.chunk, args.mn):.4e}")
            for k in ks for s in splits if k // s >= args.chunk]
    return _emit(rows, FIELDS, args.csv)


def fit_rows(fit: dict[int, float], chunk: int, mn: int) -> list[dict]:
    """`--fit`'s rows: per BITS of 9-14, the model's error over the measured one at each
    K (unsplit): geomean, min, max."""
    out = []
    for bits in range(9, 15):
        ratios = [error(k, 1, bits, chunk, mn) / e for k, e in fit.items()]
        geomean = math.exp(statistics.fmean(map(math.log, ratios)))
        out.append(dict(bits=bits, geomean=f"{geomean:.3f}",
                        min=f"{min(ratios):.3f}", max=f"{max(ratios):.3f}",
                        ks=" ".join(map(str, fit))))
    return out


def _write(rows: list[dict], fields: tuple[str, ...], path: str) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def _emit(rows: list[dict], fields: tuple[str, ...], path: str | None) -> int:
    """The rows to stdout, one CSV line each, and to `path` with a header; exit 0."""
    print("\n".join(",".join(str(r[f]) for f in fields) for r in rows))
    if path:
        _write(rows, fields, path)
    return 0


def _price(args) -> int:
    try:
        splits = _ints(args.splits, "splits")
        shapes = [tuple(_ints(text.replace("x", ","), "price")) for text in args.price.split(",")
                  if text]
        if not shapes or any(len(s) != 3 for s in shapes):
            raise ValueError(f"--price must be MxNxK shapes, comma-separated, got {args.price!r}")
        rows = [r for m, n, k in shapes for r in prices(m, n, k, splits)]
    except ValueError as e:
        print(f"accum_model: error: {e}", file=sys.stderr)
        return 2
    return _emit(rows, PRICE_FIELDS, args.csv)


if __name__ == "__main__":
    sys.exit(main())
