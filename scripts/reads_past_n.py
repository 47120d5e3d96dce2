"""Which cases' B the TMA tiles read past N over a copy's zeros, on the CPU.

    python3 scripts/reads_past_n.py [--sets pr,nightly,...] [--modes bf16,fp16,...]
                                    [--sms 132] [--label L] [--csv FILE] [--uncached]

For every case of the sets and every mode, as the harness calls the kernel on an H200
(operand copies kept; with --uncached, as a caller without `cache_copies`, whose B is
copied, with the zeros, only where the call copies it anyway): the tile it picks
(scripts/lookup_diff.py's `_choice`), whether B's copy holds zeros past N
(kernels.past_n.pads_b) and how far the pick's descriptor
reads B (kernels.past_n.b_extent: 0, to N). Prints a count per set and mode; exit 0.
`--csv FILE` writes each case whose pick reads past N, once per label (`--label`, default
the set) and mode: label, mode, case, variant, block, columns (B's columns of tiles),
b_cols: rows to join with an A/B's cases.csv (session 47's padded.csv, frozen after
ee037cf, held them: this at 5697018, whose rule also read past N for tiles of 64 rows or
fewer at any count of columns; scripts/perf_ab.py's `pad_ab`, which joined the two, left
with it).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from lookup_diff import MODES, SETS, _choice, _decided  # noqa: E402

FIELDS = ("label", "mode", "case", "variant", "block", "columns", "b_cols")


def past_n(sets: list[tuple[str, tuple]], modes: list[str], sms: int,
           cached: bool = True) -> list[dict]:
    """The picks that read B past N: one row per (set, mode, case), `label` the set;
    `cached` False: as a caller without kept copies (B copied per call, where it is)."""
    import kernels
    from kernels import past_n as pn
    from kernels.tile import cdiv

    out = []
    for name, cases in sets:
        for mode in modes:
            for case in cases:
                decided = _decided(kernels, mode, case, cached)
                _, _, _, _, copy_b, variants = decided
                if not pn.pads_b(copy_b, variants, case.n):
                    continue
                tile = _choice(kernels, mode, case, sms, decided)[0]
                cols = pn.b_extent(tile, case.n, pn.room(case.n)) \
                    if tile.variant in pn.READS_ROOM else 0
                if cols:
                    out.append({"label": Path(name).stem if name.endswith(".csv") else name,
                                "mode": mode, "case": case.id, "variant": tile.variant,
                                "block": f"{tile.block_m}x{tile.block_n}",
                                "columns": cdiv(case.n, tile.block_n), "b_cols": cols})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=SETS, help="shape sets or files (default: %(default)s)")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--sms", type=int, default=132, help="SM count (default: the H200's)")
    ap.add_argument("--label", help="every row's label (default: its set's name)")
    ap.add_argument("--csv", metavar="FILE", help="write the cases that read past N")
    ap.add_argument("--uncached", action="store_true",
                    help="as a caller without kept copies: only a B copied per call anyway")
    args = ap.parse_args(argv)
    from gemmgate.shapes import resolve

    try:
        sets = [(name, resolve(name)[1]) for name in args.sets.split(",")]
        rows = past_n(sets, args.modes.split(","), args.sms, not args.uncached)
    except ValueError as e:
        print(f"reads_past_n: error: {e}", file=sys.stderr)
        return 2
    if args.label:
        rows = [{**r, "label": args.label} for r in rows]
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            w.writeheader()
            w.writerows(rows)
    counts = Counter((r["label"], r["mode"]) for r in rows)
    print(f"{len(rows)} picks read B past N: " +
          (", ".join(f"{s} {m} {n}" for (s, m), n in sorted(counts.items())) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
