"""Which tiles a change to the dispatcher or the tuning table picks differently, on the CPU.

    python3 scripts/lookup_diff.py [--ref HEAD] [--sets pr,nightly,holdout,...,holdout6]
                                   [--modes fp32,tf32,bf16,fp16,fp8,tf32x3] [--sms 132]
                                   [--predict] [--forms] [--csv FILE] [--device NAME]

For every case of the sets and every mode, the pick an H200 would make (kernels.dispatch.
decide with TMA, then kernels.table.lookup on the H200 table with `--sms` SMs: both pure,
no device) with this tree's `kernels/` and with `--ref`'s (gemmgate.reference.load), as
the harness calls them (operand copies kept): the tile and the operand copies it runs on
(`[A rowmajor, B pitch]`). Prints each case whose pick differs, then
a count per set and mode; exit 0. What a device A/B must then measure, and nothing else
(sessions 15 and 16 sized their lookup changes so before spending device time). With
`--predict`, each row also gives the time this tree's table model predicts for the old
and the new pick and the predicted gain (session 17 kept a lookup change only where that
gain was 1.10 or more: docs/PERF.md). `--csv FILE` also writes the cases whose pick
differs in any mode, once each, as a shape file (`m,n,k,layout,pad`) for `gemmgate run
--shapes FILE --ab-ref REF`: a device call then times those cases and nothing else.
`--forms` compares the tiles the dispatcher runs, each pick in its warp-specialized form where
the package gives it one (`dispatch._ws`): a change to that rule alone moves no lookup pick.
`--moved FILE` writes the differing picks themselves (`set,mode,case,old,new,predicted`,
the predicted gain or '-'), which scripts/perf_ab.py's `moved_ab` joins with the
A/B's cases.csv rows.
`--device NAME` reads another device's tables (default the H200's). After `gemmgate tune`
on a device wrote keys into its table, and before they are committed, `--ref HEAD
--device NAME --csv moved.csv` lists the untuned shapes whose nearest pick the new
entries move, for `gemmgate run --shapes moved.csv --ab-ref HEAD` on that device (session
65: an H100's pr tf32 keys moved nightly's 8192 x 8192 x 28672 to a tile that ran x0.575).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import inspect
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DEVICE = "NVIDIA H200"
MODES = ("fp32", "tf32", "bf16", "fp16", "fp8", "tf32x3")
SETS = "pr,nightly,holdout,holdout2,holdout3,holdout4,holdout5,holdout6"   # what --sets defaults to


SMEM = 232448   # the H200's shared memory per block (opt-in), for the heuristic


def _smem(fn) -> dict:
    """`smem=SMEM` where `fn` (a table's lookup or predict) takes it (older trees do not)."""
    return {"smem": SMEM} if "smem" in inspect.signature(fn).parameters else {}


def _choice(pkg, mode_name: str, case, sms: int, decided: tuple | None = None,
            device: str = DEVICE) -> tuple[object, bool, str, tuple[str, ...]]:
    """(the tile `pkg` (a `kernels` package) picks for a case: the table's, or where it
    has nothing near the heuristic's; whether it is the heuristic's; the case's bucket;
    the variants it may run). `decided`: the case's `_decided`, where the caller has it;
    `device`: the device name whose tables the lookup reads."""
    fam, _, bucket, _, _, variants = decided or _decided(pkg, mode_name, case)
    mode = pkg.modes.mode_named(mode_name)
    found = pkg.table.lookup(device, bucket, case.m, case.n, case.k, variants=variants,
                             sms=sms, **_smem(pkg.table.lookup))
    if found is not None:
        return found[0], False, bucket, variants
    from kernels.pricing import b_kmajor  # this tree's reading of a bucket's B order

    heuristic = pkg.configs.heuristic
    params = inspect.signature(heuristic).parameters   # older trees: fewer of these
    extra = {k: v for k, v in (("fma", fam == "fp32" and mode.input_precision == "ieee"),
                               ("gemv", variants == ("gemv",)),
                               ("three_pass", mode.input_precision == "tf32x3"),
                               ("b_kmajor", b_kmajor(bucket)))
             if k in params}
    tile = heuristic(fam, case.m, case.n, case.k, tma=variants[0] == "tma", num_sms=sms,
                     smem_limit=SMEM, tiled="tiled" in variants, **extra)
    return tile, True, bucket, variants


def laid_out(mode_name: str, case) -> tuple[tuple, tuple, int]:
    """(A's strides, B's strides, bytes an element) of a case as the harness lays it out
    (gemmgate.inputs.layout, on meta tensors)."""
    from gemmgate.inputs import layout
    from gemmgate.precision import get_mode

    a, b = layout(case, get_mode(mode_name))
    return a.stride(), b.stride(), a.element_size()


def _decided(pkg, mode_name: str, case, cached: bool = True,
             laid: tuple[tuple, tuple, int] | None = None) -> tuple:
    """`pkg`'s kernels.dispatch.decide for a case on an H200, as the harness calls it
    (its operands' strides, copies kept; `cached` False: made per call, as a library
    caller without `cache_copies`): (family, key, bucket, copy_a, copy_b, variants).
    `laid`: the case's `laid_out`, where the caller has it."""
    sa, sb, elem = laid or laid_out(mode_name, case)
    return pkg.dispatch.decide(pkg.modes.mode_named(mode_name), (9, 0), case.m, case.n,
                               case.k, sa, sb, (True, True), elem, has_tma=True,
                               cached=cached)


def _operands(decided: tuple) -> str:
    """The operand copies of a case's `_decided`, as text ('' where none): a copy the
    tile's name does not show (session 20: fp32 4096^3 cr ran its tile 8% slower on a
    row-major copy of A)."""
    _, _, _, copy_a, copy_b, _ = decided
    copies = [f"{x} {c}" for x, c in (("A", copy_a), ("B", copy_b)) if c]
    return f" [{', '.join(copies)}]" if copies else ""


def _text(c, heuristic: bool = False) -> str:
    """A tile as the harness names it (gemmgate.tuning.config_name: the tiled kernel's
    unprefixed), 'heuristic ' first where the table had nothing near."""
    from gemmgate.tuning import config_name

    return ("heuristic " if heuristic else "") + config_name(c)


def pick(pkg, mode_name: str, case, sms: int, device: str = DEVICE) -> str:
    """The tile `pkg` picks for a case, as text ('heuristic ...' where the table has
    nothing near), and the operand copies it runs on (`_operands`)."""
    decided = _decided(pkg, mode_name, case)
    return _text(*_choice(pkg, mode_name, case, sms, decided, device)[:2]) + _operands(decided)


def _ran(pkg, tile, bucket: str, case=None, sms: int = 0, decided: tuple | None = None):
    """The tile `pkg`'s dispatcher runs for a pick of `bucket` (for `case` on `sms` SMs):
    fp8's forced split where the package has one (`dispatch.fast_ranges`, given the
    case's `_decided`; session 63 on), else its warp-specialized form where the package
    gives it one (`dispatch._ws`; older trees: the pick; before session 55, a form
    whatever the shape)."""
    ranges = getattr(pkg.dispatch, "fast_ranges", None)
    if ranges is not None and case is not None and decided is not None:
        fam, variants = decided[0], decided[5]
        params = inspect.signature(ranges).parameters
        if "m" not in params:   # session 63's first form: the pick's own split only
            ranged = ranges(tile, fam, case.k, variants)
        else:
            extra = {"sms": sms} if "sms" in params else {}
            ranged = ranges(tile, fam, case.m, case.n, case.k, variants, SMEM, **extra)
        if ranged is not tile:
            return ranged
    ws = getattr(pkg.dispatch, "_ws", None)
    if ws is None:
        return tile
    if case is None or len(inspect.signature(ws).parameters) < 3:
        return ws(tile, bucket)
    return ws(tile, bucket, case.m, case.n, case.k, sms)


def diff(old, new, sets, modes: list[str], sms: int, predict: bool = False,
         forms: bool = False, device: str = DEVICE) -> list[tuple[str, ...]]:
    """(set, mode, case id, old pick, new pick) for every case whose pick differs; `sets`:
    (name, cases) pairs. `predict`: also the time `new`'s table model predicts for each
    pick (kernels.table.predict, microseconds; '-' where no near entry has the tile,
    as for most heuristic picks) and old / new (the predicted gain). `forms`: the tiles
    the dispatchers run (`_ran`), the model's times still of the lookups' picks. `device`:
    the device name whose tables both packages read."""
    out = []
    for name, cases in sets:
        for mode in modes:
            for case in cases:
                da, db = _decided(old, mode, case), _decided(new, mode, case)
                a, heur_a, bucket_a, _ = _choice(old, mode, case, sms, da, device)
                b, heur_b, bucket, variants = _choice(new, mode, case, sms, db, device)
                ran_a, ran_b = (_ran(old, a, bucket_a, case, sms, da),
                                _ran(new, b, bucket, case, sms, db)) if forms else (a, b)
                text_a = _text(ran_a, heur_a) + _operands(da)
                text_b = _text(ran_b, heur_b) + _operands(db)
                if text_a == text_b:   # tiles of two packages: compared as text
                    continue
                row = (name, mode, case.id, text_a, text_b)
                if predict:
                    us = [new.table.predict(
                        device, bucket, case.m, case.n, case.k,
                        new.table.TileConfig(**dataclasses.asdict(c)), sms=sms,
                        variants=variants, **_smem(new.table.predict))
                          for c in (a, b)]
                    shown = [f"{u * 1e3:.1f}" if u else "-" for u in us]
                    gain = f"{us[0] / us[1]:.3f}" if all(us) else "-"
                    row += (f"{shown[0]} -> {shown[1]} us", f"x{gain}")
                out.append(row)
    return out


def read_by(pkg, device: str) -> str:
    """The table file(s) `pkg`'s lookup reads for `device`; ValueError where no table
    names it: every pick is then the heuristic's in both trees, and a changed table
    showed as "none" differing (a typo'd --device; a review)."""
    got = pkg.table_file.table_for_device(device, pkg.table_file.DEFAULT_DIR)
    if not got.path:
        raise ValueError(f"--device {device!r}: no tuning table in "
                         f"{pkg.table_file.DEFAULT_DIR} names it (its `match` or "
                         "`borrowed_by`), so every pick would be the heuristic's; give a "
                         "device name as torch.cuda.get_device_name writes it, e.g. "
                         f"{DEVICE!r}")
    return got.name


def write_cases(path: str, sets, rows: list[tuple[str, ...]]) -> int:
    """Write the cases of `rows` (`diff`'s) once each, in the sets' order, as a shape
    file; the number written."""
    changed = {(name, case_id) for name, _, case_id, *_ in rows}
    seen, lines = set(), ["m,n,k,layout,pad"]
    for name, cases in sets:
        for case in cases:
            point = (case.m, case.n, case.k, case.layout, case.pad)
            if (name, case.id) in changed and point not in seen:
                seen.add(point)
                lines.append(",".join(str(x) for x in point))
    from gemmgate.files import write_text_atomic

    write_text_atomic(path, "\n".join(lines) + "\n")
    return len(seen)


def write_moved(path: str, rows: list[tuple[str, ...]]) -> None:
    """Write `diff`'s rows as `set,mode,case,old,new,predicted` (a set given as a shape
    file named by its stem; `predicted`: the gain without its 'x', or '-')."""
    import io

    from gemmgate.files import write_text_atomic

    f = io.StringIO()
    out = csv.writer(f, lineterminator="\n")
    out.writerow(("set", "mode", "case", "old", "new", "predicted"))
    for name, mode, case_id, old, new, *pred in rows:
        gain = pred[1].removeprefix("x") if pred else "-"
        out.writerow((Path(name).stem if name.endswith(".csv") else name, mode, case_id,
                      old, new, gain))
    write_text_atomic(path, f.getvalue())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", default="HEAD", help="the commit to compare with (default HEAD)")
    ap.add_argument("--sets", default=SETS)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--sms", type=int, default=132, help="SM count (default: the H200's)")
    ap.add_argument("--device", default=DEVICE,
                    help=f"the device name whose tuning tables are read (default {DEVICE!r}; "
                         "'NVIDIA H100 80GB HBM3': its own table over the lent one)")
    ap.add_argument("--predict", action="store_true",
                    help="also print the time this tree's table model predicts for each "
                         "pick, and the predicted gain")
    ap.add_argument("--forms", action="store_true",
                    help="compare the tiles the dispatchers run (a pick's warp-specialized "
                         "form where it has one)")
    ap.add_argument("--csv", metavar="FILE",
                    help="also write the cases whose pick differs as a shape file")
    ap.add_argument("--moved", metavar="FILE",
                    help="also write the differing picks as CSV (set, mode, case, old, "
                         "new, predicted gain)")
    args = ap.parse_args(argv)
    import kernels  # its kernels are never run here: decide and lookup are pure
    from gemmgate import reference
    from gemmgate.files import check_writable
    from gemmgate.shapes import resolve

    try:
        if args.sms < 1:   # (0 priced nothing, -5 sized the heuristic's grid: "none")
            raise ValueError(f"--sms must be 1 or more, got {args.sms}")
        read_by(kernels, args.device)
        for path, flag in ((args.csv, "--csv"), (args.moved, "--moved")):
            if path:   # (checked before the diff: a directory was a traceback after it)
                check_writable(path, f"{flag} file")
        sha, old = reference.load(reference.resolve(args.ref, ".", "--ref"))
        sets = [(name, resolve(name)[1]) for name in args.sets.split(",")]
        rows = diff(old, kernels, sets, args.modes.split(","), args.sms, args.predict,
                    args.forms, args.device)
    except ValueError as e:
        print(f"lookup_diff: error: {e}", file=sys.stderr)
        return 2
    for row in rows:
        print(" | ".join(row))
    if args.csv:
        print(f"{write_cases(args.csv, sets, rows)} cases written to {args.csv}")
    if args.moved:
        write_moved(args.moved, rows)
    counts = Counter((s, m) for s, m, *_ in rows)
    print(f"{len(rows)} picks differ from {sha[:12]}: " +
          (", ".join(f"{s} {m} {n}" for (s, m), n in sorted(counts.items())) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
