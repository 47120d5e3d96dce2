"""Which tiles a change to the dispatcher or the tuning table picks differently, on the CPU.

    python3 scripts/lookup_diff.py [--ref HEAD] [--sets pr,nightly,holdout,holdout2]
                                   [--modes fp32,tf32,bf16,fp16,fp8,tf32x3] [--sms 132]

For every case of the sets and every mode, the pick an H200 would make (kernels.dispatch.
decide with TMA, then kernels.table.lookup on the H200 table with `--sms` SMs: both pure,
no device) with this tree's `kernels/` and with `--ref`'s (gemmgate.reference.load), as
the harness calls them (operand copies kept). Prints each case whose pick differs, then
a count per set and mode; exit 0. What a device A/B must then measure, and nothing else
(sessions 15 and 16 sized their lookup changes so before spending device time).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DEVICE = "NVIDIA H200"
MODES = ("fp32", "tf32", "bf16", "fp16", "fp8", "tf32x3")


def pick(pkg, mode_name: str, case, sms: int) -> str:
    """The tile `pkg` (a `kernels` package) picks for a case, as text ('heuristic' where
    the table has nothing near)."""
    from gemmgate.inputs import layout
    from gemmgate.precision import get_mode

    a, b = layout(case, get_mode(mode_name))   # meta tensors: the harness's strides
    mode = pkg.modes.mode_named(mode_name)
    _, _, bucket, _, _, variants = pkg.dispatch.decide(
        mode, (9, 0), case.m, case.n, case.k, a.stride(), b.stride(), (True, True),
        a.element_size(), has_tma=True, cached=True)
    found = pkg.table.lookup(DEVICE, bucket, case.m, case.n, case.k, variants=variants,
                             sms=sms)
    if found is None:
        return "heuristic"
    c = found[0]
    split = f" k{c.split_k}" if c.split_k > 1 else ""
    return (f"{c.variant} {c.block_m}x{c.block_n}x{c.block_k} g{c.group_m} "
            f"s{c.num_stages} w{c.num_warps}{split}")


def diff(old, new, sets, modes: list[str], sms: int) -> list[tuple[str, str, str, str, str]]:
    """(set, mode, case id, old pick, new pick) for every case whose pick differs; `sets`:
    (name, cases) pairs."""
    out = []
    for name, cases in sets:
        for mode in modes:
            for case in cases:
                a, b = pick(old, mode, case, sms), pick(new, mode, case, sms)
                if a != b:
                    out.append((name, mode, case.id, a, b))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", default="HEAD", help="the commit to compare with (default HEAD)")
    ap.add_argument("--sets", default="pr,nightly,holdout,holdout2")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--sms", type=int, default=132, help="SM count (default: the H200's)")
    args = ap.parse_args(argv)
    import kernels  # its kernels are never run here: decide and lookup are pure
    from gemmgate import reference
    from gemmgate.shapes import resolve

    try:
        sha, old = reference.load(reference.resolve(args.ref, ".", "--ref"))
        sets = [(name, resolve(name)[1]) for name in args.sets.split(",")]
        rows = diff(old, kernels, sets, args.modes.split(","), args.sms)
    except ValueError as e:
        print(f"lookup_diff: error: {e}", file=sys.stderr)
        return 2
    for row in rows:
        print(" | ".join(row))
    counts = Counter((s, m) for s, m, *_ in rows)
    print(f"{len(rows)} picks differ from {sha[:12]}: " +
          (", ".join(f"{s} {m} {n}" for (s, m), n in sorted(counts.items())) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
