"""How well the tuning table's model ranks tiles that were measured, on the CPU.

    python3 scripts/model_check.py [TILES.csv ...] [--sms 132] [--groups] [--lookup]

`kernels.table.lookup` picks a tile for a shape the table was not tuned on by what its
model (`kernels.table.predict`: a near entry's tuned time per SM step, times the steps
the tile takes here) says is fastest. `scripts/device/tiles.py` measured named tiles side
by side on such shapes, and scripts/ab_tiles.py writes a device A/B's two tiles a case in
the same form (tiles_ab_*.csv). This reads those rows (default: docs/results/*/tiles*.csv;
L2 flushed; the `pick` rows left out, they repeat a named tile) and, per measurement (file
and its `label` column's call where it has one, shape, mode) with no exact table entry
and two or more tiles the model has a figure for (a near entry has the tile, or K
re-split from it):
  - the tile the model ranks first among them (by `predict` alone: lookup's three-
    nearest rule and its far margin aside), and its regret: its measured time / the
    fastest of them (1.0: the model's first is the measured best),
  - the model's error per tile: predicted / measured time.
With `--lookup`, also the tile this tree's lookup picks for each measurement (margins and
all, as lookup_diff asks it), where it is among the measured tiles: its regret. That is
what a device A/B of a lookup change measures; `predict`'s first is not (session 34:
`steps.FIXED_MS` = 5 us ranked no worse by `predict`, lookup regret 1.0119 -> 1.0181 on
every measurement, worst 1.271 -> 1.400; its A/B: x0.98).
Prints a summary (`--groups`: one line per measurement too); exit 0. A change to the
model or the table can be checked here against every tile measured so far before a
device A/B (session 17: the far-neighbour margin, docs/PERF.md).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import runpy
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from gemmgate.stats import geomean  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Group:
    """One measurement's tiles on one shape and mode: (tile, measured us, predicted us)."""

    source: str
    shape: str
    mode: str
    tiles: tuple[tuple[object, float, float], ...]

    @property
    def regret(self) -> float:
        """Measured time of the model's first / the fastest measured of these tiles."""
        first = min(self.tiles, key=lambda t: t[2])
        return first[1] / min(t[1] for t in self.tiles)


def measured(paths: list[Path]) -> dict[tuple, list[tuple[object, float]]]:
    """(call, Case, mode) -> [(tile, measured us)] of the named tiles in the files (L2
    flushed; `call`: the file, and its `label` where it has one)."""
    from gemmgate.precision import get_mode
    from gemmgate.shapes import Case, parse_inline

    parse = runpy.run_path(str(ROOT / "scripts" / "device" / "tiles.py"))["parse_tile"]
    rows: dict[tuple[str, Case, str], list[tuple[object, float]]] = defaultdict(list)
    for path in paths:
        source = str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
        with path.open(newline="") as f:
            for line, r in enumerate(csv.DictReader(f), start=2):
                name = r["provider"]
                if r.get("flush") != "1" or name in ("vendor", "inductor", "uncached") \
                        or name.startswith("pick "):
                    continue
                try:
                    tile = parse(name)
                except ValueError:
                    continue   # not a named tile of this tree's variants
                try:
                    try:
                        got = parse_inline(r["shape"])
                    except ValueError:   # (its message names --shapes: not this file's)
                        got = None
                    if got is None or len(got) != 1:
                        raise ValueError(f"shape {r['shape']!r} is not MxNxK[-LAYOUT][+pP]")
                    get_mode(r["mode"])
                    us = float(r["us"])
                except ValueError as e:
                    raise ValueError(f"{source}:{line}: {e}") from None
                call = f"{source}:{r['label']}" if r.get("label") else source   # one call's
                rows[(call, got[0],
                      r["mode"])].append((tile, us))
    return rows


def shape_text(case) -> str:
    """A case as tiles.py names its shape: MxNxK[-LAYOUT][+pPAD]."""
    return f"{case.m}x{case.n}x{case.k}" + (f"-{case.layout}" if case.layout != "rr"
                                            else "") + (f"+p{case.pad}" if case.pad else "")


def groups(rows: dict[tuple, list[tuple[object, float]]], sms: int) -> list[Group]:
    """Every measurement (`measured`'s) the model can rank (see the module docstring)."""
    from lookup_diff import DEVICE, SMEM, _choice

    import kernels
    from kernels import table, table_file

    index = table._index(DEVICE, str(table_file.DEFAULT_DIR))[1]
    out = []
    for (source, case, mode), tiles in rows.items():
        shape = shape_text(case)
        _, _, bucket, variants = _choice(kernels, mode, case, sms)
        if any(e.shape == (case.m, case.n, case.k) for e in index.get(bucket, ())):
            continue   # an exact entry: the model's transfer is not what runs
        ranked = []
        for tile, us in tiles:
            ms = table.predict(DEVICE, bucket, case.m, case.n, case.k, tile, sms=sms,
                               variants=variants, smem=SMEM)
            if ms is not None:
                ranked.append((tile, us, ms * 1e3))
        if len(ranked) >= 2:
            out.append(Group(source, shape, mode, tuple(ranked)))
    return out


def picked(rows: dict[tuple, list[tuple[object, float]]], sms: int
           ) -> list[tuple[str, str, str, float | None]]:
    """(call, shape, mode, regret) of every measurement (`measured`'s): the measured time
    of the tile this tree picks for the case (kernels.dispatch + lookup, as lookup_diff
    asks, margins and all) / the fastest measured; None where the pick is none of the
    measured tiles."""
    from lookup_diff import _choice

    import kernels

    out = []
    for (source, case, mode), tiles in rows.items():
        pick = _choice(kernels, mode, case, sms)[0]
        got = [us for tile, us in tiles if tile == pick]
        out.append((source, shape_text(case), mode,
                    got[0] / min(us for _, us in tiles) if got else None))
    return out


def lookup_summary(found: list[tuple[str, str, str, float | None]]) -> str:
    """How often this tree's pick was measured, the measured best, and its regret."""
    regrets = [(r, f) for f in found if (r := f[3]) is not None]
    if not regrets:
        return "lookup: no measurement holds this tree's pick"
    worst = max(regrets)[1]
    return (f"lookup: {len(found)} measurements, this tree's pick among the measured tiles "
            f"in {len(regrets)}, the measured best in {sum(r == 1.0 for r, _ in regrets)}; "
            f"regret geomean {geomean([r for r, _ in regrets]):.4f}, "
            f"worst {worst[3]:.3f} ({worst[2]} {worst[1]}, {worst[0]})")


def summary(found: list[Group]) -> str:
    """Measurements, how often the model's first is the measured best, the regret's
    geomean and worst, and the model's error over every tile it ranked."""
    if not found:
        return "no measurement the model can rank"
    regrets = [g.regret for g in found]
    errors = [p / us for g in found for _, us, p in g.tiles]
    worst = max(found, key=lambda g: g.regret)
    q1, median, q3 = statistics.quantiles(errors, n=4, method="inclusive")
    return (f"{len(found)} measurements, {len(errors)} tiles: the model's first is the "
            f"measured best in {sum(r == 1.0 for r in regrets)}; regret geomean "
            f"{geomean(regrets):.3f}, worst "
            f"{worst.regret:.3f} ({worst.mode} {worst.shape}, {worst.source}); predicted/"
            f"measured median {median:.2f}, middle half {q1:.2f}-{q3:.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="*", type=Path,
                    help="tiles.py CSVs (default: docs/results/*/tiles*.csv)")
    ap.add_argument("--sms", type=int, default=132, help="SM count (default: the H200's)")
    ap.add_argument("--groups", action="store_true", help="one line per measurement too")
    ap.add_argument("--lookup", action="store_true",
                    help="also score the tile this tree's lookup picks (its margins and all) "
                         "where it was measured: closer to a device A/B than `predict`")
    args = ap.parse_args(argv)
    paths = args.csv or sorted((ROOT / "docs" / "results").glob("*/tiles*.csv"))
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"model_check: error: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        rows = measured(paths)
        found = groups(rows, args.sms)
    except KeyError as e:
        print(f"model_check: error: not a tiles.py CSV (no column {e})", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"model_check: error: {e}", file=sys.stderr)
        return 2
    if args.groups:
        for g in sorted(found, key=lambda g: -g.regret):
            first = min(g.tiles, key=lambda t: t[2])[0]
            print(f"{g.regret:.3f} {g.mode} {g.shape} {g.source}: model's first "
                  f"{first.variant}:{first.block_m}x{first.block_n}x{first.block_k}, "
                  f"{len(g.tiles)} tiles")
    print(summary(found))
    if args.lookup:
        print(lookup_summary(picked(rows, args.sms)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
