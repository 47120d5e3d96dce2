"""Random GEMM shapes for a lookup change's A/B: a shape file for `gemmgate run --shapes`
and `scripts/lookup_diff.py --sets`.

    python3 scripts/draw_shapes.py SEED COUNT [--lo 256] [--hi 8192] [--k-lo LO]
                                   [--m LO:HI] [--multiple 8] [--layouts rc,cr,cc]
                                   [--layout-seed S]

M, N and K are drawn log-uniform in [lo, hi] (K in [k-lo, hi]) with random.Random(SEED),
each rounded to a multiple of `--multiple` (at least that); `--m LO:HI` draws M alone in
[LO, HI], unrounded (thin M: 1:32); prints CSV `m,n,k` or, with
`--layouts`, `m,n,k,layout`, each row's layout drawn from the list with
random.Random(--layout-seed, default SEED). The same arguments give the same shapes:
PERF.md names a draw by its seed and arguments (session 44: seeds 68-77). Exit 0; 2 on
bad input.
"""

from __future__ import annotations

import argparse
import math
import random
import sys

LAYOUTS = ("rr", "rc", "cr", "cc")


def draw(seed: int, count: int, lo: int, hi: int, k_lo: int, multiple: int,
         m_range: tuple[int, int] | None = None) -> list[tuple[int, int, int]]:
    """`count` shapes (M, N, K), log-uniform, rounded to `multiple`; M in `m_range`,
    unrounded, where given."""
    rng = random.Random(seed)

    def dim(a: int, b: int, step: int = multiple) -> int:
        x = math.exp(rng.uniform(math.log(a), math.log(b)))
        return max(step, int(round(x / step)) * step)

    def m_dim() -> int:
        return dim(lo, hi) if m_range is None else dim(*m_range, 1)

    return [(m_dim(), dim(lo, hi), dim(k_lo, hi)) for _ in range(count)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("seed", type=int)
    ap.add_argument("count", type=int)
    ap.add_argument("--lo", type=int, default=256)
    ap.add_argument("--hi", type=int, default=8192)
    ap.add_argument("--k-lo", type=int, default=None, help="K's low end (default: --lo)")
    ap.add_argument("--m", default="", help="LO:HI: M's own range, unrounded (e.g. 1:32)")
    ap.add_argument("--multiple", type=int, default=8)
    ap.add_argument("--layouts", default="", help="comma-separated: each row's layout drawn "
                    "from these (rr, rc, cr, cc)")
    ap.add_argument("--layout-seed", type=int, default=None)
    args = ap.parse_args(argv)
    k_lo = args.lo if args.k_lo is None else args.k_lo
    layouts = [x for x in args.layouts.split(",") if x]
    bad = [x for x in layouts if x not in LAYOUTS]
    m_range = None
    if args.m:
        try:
            m_range = tuple(int(x) for x in args.m.split(":"))
            if len(m_range) != 2 or not 1 <= m_range[0] <= m_range[1]:
                raise ValueError
        except ValueError:
            print(f"draw_shapes: --m needs LO:HI with 1 <= LO <= HI, got {args.m!r}",
                  file=sys.stderr)
            return 2
    if args.count < 0 or args.multiple < 1 or not 1 <= args.lo <= args.hi or \
            not 1 <= k_lo <= args.hi or bad:
        print(f"draw_shapes: need count >= 0, multiple >= 1, 1 <= lo <= hi, 1 <= k-lo <= hi "
              f"and layouts among {', '.join(LAYOUTS)}" + (f" (got {', '.join(bad)})"
                                                           if bad else ""), file=sys.stderr)
        return 2
    shapes = draw(args.seed, args.count, args.lo, args.hi, k_lo, args.multiple, m_range)
    pick = random.Random(args.seed if args.layout_seed is None else args.layout_seed)
    print("m,n,k" + (",layout" if layouts else ""))
    for m, n, k in shapes:
        print(f"{m},{n},{k}" + (f",{pick.choice(layouts)}" if layouts else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
