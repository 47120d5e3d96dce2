"""A device A/B's cases as tiles.py rows, so scripts/model_check.py ranks the two tiles of
each: the A/B's picks against the reference's.

    python3 scripts/ab_tiles.py CASES.csv --label PREFIX --ref REV --out tiles_ab_X.csv

An A/B (`gemmgate run --ab-ref REV`, summarized by scripts/summarize_runs.py into a
cases.csv) times, in one process on the same inputs, the tile this tree picked (the row's
`tile`) and the tile REV picks (REV's `kernels`, loaded as lookup_diff loads it). Each row
of a label starting with PREFIX whose two tiles differ becomes two rows of OUT (L2
flushed, as the A/B ran): the pick's microseconds (from its TFLOP/s) and REV's (times the
row's `ab`). model_check's default glob reads docs/results/*/tiles*.csv: an A/B written
there under such a name is then one more measurement every model change is ranked on
before a device call (session 34: `steps.FIXED_MS` = 5 us ranked the tiles.py
measurements better and lost the A/B of the picks it moved, ×0.98). Rows whose tile
cannot be read, or with no `ab`, are skipped and counted. Exit 0; 2 on bad input.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

FIELDS = ("label", "shape", "mode", "flush", "provider", "us", "tflops", "ratio")


def tile_of(name: str):
    """The TileConfig of a tile as gemmgate.tuning.config_name writes it ('tma 128x256x64
    g8 s3 w8 k2 o2'; the tiled kernel's unprefixed; `gemmgate.tuning.parse_config_name`), or
    None."""
    from gemmgate.tuning import parse_config_name
    from kernels.tile import TileConfig

    got = parse_config_name(name)
    return None if got is None else TileConfig(**got)


def _us(flop: float, tflops: str) -> float:
    return flop / (float(tflops) * 1e6)


def rows_for(cases: list[dict], prefix: str, old) -> tuple[list[dict], int]:
    """(OUT's rows, rows skipped) for the cases.csv rows of labels starting with `prefix`;
    `old`: REV's `kernels` package."""
    from lookup_diff import _choice
    from model_check import shape_text

    from gemmgate.bisect import parse_case_id
    from gemmgate.tuning import config_spec

    out, skipped = [], 0
    for r in cases:
        if not r["label"].startswith(prefix):
            continue
        new, ab = tile_of(r["tile"]), re.search(r"ab:([\d.]+)", r["extra"])
        try:
            case = parse_case_id(f"{r['mode']}-{r['case']}")[1]
        except ValueError:
            case = None
        if case is None or new is None or ab is None or not r["triton_tflops"]:
            skipped += 1
            continue
        before = _choice(old, r["mode"], case, 132)[0]
        if config_spec(before) == config_spec(new):
            continue   # the same tile both sides: nothing for the model to rank
        flop = float(case.flops)
        us = _us(flop, r["triton_tflops"])
        vendor = _us(flop, r["vendor_tflops"]) if r["vendor_tflops"] else None
        shape = shape_text(case)
        for tile, t in ((new, us), (before, us * float(ab.group(1)))):
            out.append({"label": r["label"], "shape": shape, "mode": r["mode"], "flush": "1",
                        "provider": config_spec(tile), "us": f"{t:.2f}",
                        "tflops": f"{flop / t / 1e6:.1f}",
                        "ratio": f"{vendor / t:.4f}" if vendor else ""})
    return out, skipped


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", type=Path, help="a cases.csv (scripts/summarize_runs.py)")
    ap.add_argument("--label", required=True, help="the A/B's labels start with this")
    ap.add_argument("--ref", required=True, help="the commit the A/B ran against")
    ap.add_argument("--out", required=True, type=Path, help="the tiles.py CSV to write")
    args = ap.parse_args(argv)
    from gemmgate import reference
    from gemmgate.files import check_writable, write_csv_atomic

    try:   # (a directory, or a missing folder, was a traceback after the work, a stray
        # OUT.tmp left; a review)
        check_writable(args.out, "--out file")
        with args.cases.open(newline="") as f:
            cases = list(csv.DictReader(f))
        _, old = reference.load(reference.resolve(args.ref, ".", "--ref"))
        out, skipped = rows_for(cases, args.label, old)
    except OSError as e:
        print(f"ab_tiles: error: {e}", file=sys.stderr)
        return 2
    except KeyError as e:
        print(f"ab_tiles: error: {args.cases} is not a cases.csv (no column {e})",
              file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"ab_tiles: error: {e}", file=sys.stderr)
        return 2
    if not out:
        print(f"ab_tiles: error: no A/B row of a label starting {args.label!r} in "
              f"{args.cases} ran a tile other than {args.ref}'s", file=sys.stderr)
        return 2
    write_csv_atomic(args.out, out, FIELDS)
    print(f"wrote {args.out}: {len(out) // 2} A/B cases, two tiles each"
          + (f"; {skipped} rows skipped (no tile or no ab)" if skipped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
