"""Why the lookup picks a tile for one shape, on the CPU: its neighbours and their options.

    python3 scripts/lookup_why.py MODE MxNxK[-LAYOUT][+pPAD] [--sms 132] [--top 4] [--device NAME]

For a case as the harness calls it on an H200 (scripts/lookup_diff.py's `_decided`: the
operands' strides, copies kept), prints the bucket and variants, the pick of
`kernels.table.lookup` (with the operand copies it runs on), and for each bucket the
lookup reads (the call's, the other 16-bit type's; then, where the call's have none near,
those it borrows from, as `table._sources` orders them) the nearest entries (NEIGHBOURS near,
up to FAR_NEIGHBOURS far: shape, tile, tuned us) and the `top` options each group prices
(`kernels.pricing.priced`: predicted us, the margin each must win by, the tile). What to read before
changing a price or a form, and what a moved pick in an A/B came from (session 44: 952 x
4312 x 992's far neighbour lost its FAR_MARGIN when a near one's 320-tall form came in).
Exit 0; 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from lookup_diff import DEVICE, MODES, SMEM, _decided, _operands, _text, read_by  # noqa: E402


def explain(mode: str, m: int, n: int, k: int, layout: str = "rr", sms: int = 132,
            top: int = 4, pad: int = 0, device: str = DEVICE) -> list[str]:
    """The lines `main` prints for one case."""
    import kernels
    from gemmgate.shapes import Case
    from kernels import pricing, table

    decided = _decided(kernels, mode, Case(m, n, k, layout=layout, pad=pad))
    fam, _, bucket, _, _, variants = decided
    found = table.lookup(device, bucket, m, n, k, variants=variants, sms=sms, smem=SMEM)
    pick = f"{_text(found[0])}{_operands(decided)} ({found[1]})" if found \
        else "none (the heuristic's tile)"
    padded = f"+p{pad}" if pad else ""
    out = [f"{mode} {m}x{n}x{k} {layout}{padded}: bucket {bucket!r}, variants "
           f"{', '.join(variants)}",
           f"pick: {pick}"]
    _, rows = table._index(device, str(table.DEFAULT_DIR))
    chip = pricing.chip_for(sms, SMEM, fam, bucket)
    # the buckets the lookup reads, in its order (`table._sources`: the ld128 sibling, the
    # row-major buckets whose tiles carry), each with the other 16-bit type's; up to the
    # first that has an entry near, where the lookup stops
    for source, carried in table._sources(bucket)[0]:
        runs = table._carried(variants, carried)
        borrowed = "" if source == bucket else \
            f" (borrowed{': ' + ', '.join(runs) if carried else ''})"
        listed = False
        for src in (source, table._other_type(source)):
            near = table._near(rows.get(src, ()), m, n, k, runs, chip.fma,
                                family=chip.fam) if src else []
            if near:
                listed = True
                out += _groups(f"{src}{borrowed}:", near, m, n, k, runs, chip, top)
        if listed:
            break
    return out


def _groups(head: str, near, m: int, n: int, k: int, variants: tuple[str, ...], chip,
            top: int) -> list[str]:
    """A bucket's near and far entries and the options each group prices."""
    from kernels import pricing, table
    from kernels.tile import cdiv

    out = [head]
    for name, group in (("near", near[:table.NEIGHBOURS]),
                        ("far", near[table.NEIGHBOURS:table.FAR_NEIGHBOURS])):
        for r in group:
            out.append(f"  {name} entry {'x'.join(map(str, r.shape))}: {_text(r.config)}"
                       f" {r.ms * 1e3:.1f} us")
        options = sorted(pricing.priced(group, m, n, k, variants, chip),
                         key=lambda o: o[0] * o[2])
        for ms, c, margin in options[:top]:
            out.append(f"    {name} option {ms * 1e3:7.1f} us x{margin:.2f}  {_text(c)}")
        if group and not options and name == "near":   # (a split whose K ranges do not
            c = group[0].config   # fit; `table._nearest`)
            out.append(f"    no option priced: the nearest entry's split k{c.split_k} is more "
                       f"ranges than K's {cdiv(k, c.block_k)} blocks: the next source or the "
                       "heuristic decides" if table.over_split(c, k) else
                       "    no option priced: the nearest entry's tile is taken as it is")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", help=f"one of {', '.join(MODES)}")
    ap.add_argument("case", help="MxNxK, optionally -rc, -cr or -cc and +pPAD")
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--top", type=int, default=4)
    ap.add_argument("--device", default=DEVICE,
                    help=f"the device name whose tables are read (default {DEVICE!r}; "
                         "'NVIDIA H100 80GB HBM3': its own table over the lent one)")
    args = ap.parse_args(argv)
    from gemmgate.shapes import parse_inline

    try:
        cases = parse_inline(args.case)
    except ValueError:
        cases = None
    if args.mode not in MODES or cases is None or len(cases) != 1 or args.sms < 1 \
            or args.top < 1:
        print(f"lookup_why: need a mode among {', '.join(MODES)}, one case "
              f"MxNxK[-LAYOUT][+pPAD], --sms and --top >= 1 (got {args.mode} {args.case})",
              file=sys.stderr)
        return 2
    (c,) = cases
    if min(c.m, c.n, c.k) < 1:
        print("lookup_why: M, N and K must be 1 or more", file=sys.stderr)
        return 2
    import kernels

    try:
        read_by(kernels, args.device)
        lines = explain(args.mode, c.m, c.n, c.k, c.layout, args.sms, args.top, c.pad,
                        args.device)
    except (RuntimeError, OverflowError) as e:   # a case too large for its meta operands
        print(f"lookup_why: {args.case}: {e}", file=sys.stderr)   # (a traceback, exit 1)
        return 2
    except ValueError as e:   # the tables the device reads: two claim it (a candidate
        # file beside its own, TableError), as lookup_diff says it (a traceback, exit 1; a
        # review), or none does (every pick the heuristic's, said as the table's answer)
        print(f"lookup_why: error: {e}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
