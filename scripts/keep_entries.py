"""Which of a tune call's table entries to keep, judged by the A/B of the picks each changes.

    python3 scripts/keep_entries.py --ref REV --table NEW.json --ab RUN.json[,RUN2.json]
                                    --modes bf16[,fp8] [--sets pr,nightly,...] [--write]

`gemmgate tune` writes an entry for every key it searched, and a new entry also moves the
picks of the cases near it (kernels.table's nearest lookup). A device A/B of those cases
(`scripts/lookup_diff.py --csv` then `gemmgate run --ab-ref REV --json RUN.json`) measures
them; this script, on the CPU, decides per entry:

- an entry's picks: the cases whose pick changes when that entry alone is left out of NEW
  (each left-out key keeps REV's entry where REV had one; where REV's is stale, tuned on
  other kernel source, only if `--tune-json` (the tune's own JSON) timed its tile on this
  tree: it comes back stamped with this source, else the key has no entry), and those it
  moves to NEW's tile as the call's one changed entry (twins, such as a bf16 and an fp16
  entry lending each other one tile, each move nothing left out alone);
- it is kept where its picks ran faster on the whole (geomean A/B >= 1) and each it
  slowed by more than x0.93 still runs at the vendor's speed or faster (`verdict`); an
  entry that moves no pick by itself is kept (sessions 24 and 25);
- the kept table's picks must then all have been measured: every case whose pick differs
  from REV's ran that tile in the A/B. Those that did not are listed and the exit is 1
  (take the entries they come from out with --leave-out, or measure them).

With --write (and nothing unmeasured) the kept table replaces kernels/tuned/<chip>.json,
atomically; one holding a holdout set's shape is refused (exit 2).
--candidate FILE writes the kept table to FILE whatever is unmeasured, and
its unmeasured cases beside it as a shape file (FILE with .csv), for the next device
call to A/B that table on them (`gemmgate run --shapes FILE.csv --ab-ref REV`).
--tuned-csv FILE --call LABEL records the call's changed entries (REV's tile and ratio,
the new ones, candidates timed, kept or not) as rows of a session's tuned.csv, replacing
that label's rows (session 43's tuned.csv, frozen after 6eb0d2c, was read by its
`tuned_summary`, which left scripts/perf_formats.py with it).
Exit 0 when every pick is measured, 1 when some are not, 2 on bad input.
"""

from __future__ import annotations

import argparse
import csv
import functools
import io
import json
import subprocess
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import lookup_diff  # noqa: E402
from summarize_runs import ab_of  # noqa: E402

from gemmgate.stats import geomean  # noqa: E402
from gemmgate.tuning import config_name, config_spec  # noqa: E402

Key = tuple[str, int, int, int]          # bucket, m, n, k: one table entry
Pick = tuple[str, str, str]              # set, mode, case id


@dataclass(frozen=True)
class Measured:
    """One case's A/B: the reference's time / this tree's, the speed ratio to the vendor,
    and the tile that ran (as the harness names it)."""

    ab: float
    ratio: float
    tile: str


def key(e: dict) -> Key:
    return (e["bucket"], int(e["m"]), int(e["n"]), int(e["k"]))


def changed_entries(base: list[dict], new: list[dict], modes: set[str]) -> list[dict]:
    """NEW's entries of these modes that REV's table lacks or holds otherwise."""
    old = {key(e): e for e in base}
    return [e for e in new if e["mode"] in modes and old.get(key(e)) != e]


Timed = dict[Key, dict[str, float]]     # a tune's timings on this tree: key -> tile -> ms


def candidate(base: list[dict], new: list[dict], left_out: set[Key],
              timed: Timed | None = None) -> list[dict]:
    """NEW with the keys of `left_out` as REV had them (or absent where REV had none). A
    REV entry tuned on other kernel source (stale here) comes back only where the tune
    timed its tile on this tree's source (`timed`, `tune_timings`): stamped with this
    source's hash, its times that timing; else that key has no entry (a stale one would
    never be used, and nothing measured its tile on this source)."""
    from kernels import table_file

    old = {key(e): e for e in base}
    out = []
    for e in new:
        if key(e) not in left_out:
            out.append(e)
            continue
        o = old.get(key(e))
        if o is not None and table_file.is_stale(o):
            ms = (timed or {}).get(key(e), {}).get(config_name(o["config"]))
            variant = o["config"].get("variant", "tiled")
            o = None if ms is None else {**o, "kernel": table_file.variant_hash(variant),
                                         "tuned_ms": ms, "triton_ms": ms}
        if o is not None:
            out.append(o)
    return out


def tune_timings(paths: list[str]) -> Timed:
    """key -> tile name -> ms: what `gemmgate tune --json` files timed, per key."""
    out: Timed = {}
    for p in paths:
        for c in json.loads(Path(p).read_text())["cases"]:
            t = (c.get("telemetry") or {}).get("tuning") or {}
            if " | " in t.get("key", ""):
                out[(t["key"].split(" | ")[0], int(c["m"]), int(c["n"]), int(c["k"]))] = {
                    name: ms for name, ms in t.get("timings_ms", {}).items() if ms is not None}
    return out


# A pick an entry slows by more than this must still run at the vendor's speed or faster
# (session 24 kept entries with no pick below x0.93; session 25 also kept tf32's, whose
# x0.85-0.86 picks ran 1.07 and 1.69 of cuBLAS)
SLOWER_OK = 0.93


def verdict(measured: list[Measured]) -> bool:
    """Keep an entry whose picks ran faster on the whole, and each of them it slowed by
    more than SLOWER_OK still at the vendor's speed or faster."""
    if not measured:
        return True
    faster = geomean([m.ab for m in measured]) >= 1.0
    return faster and all(m.ratio >= 1.0 for m in measured if m.ab < SLOWER_OK)


AB = dict[tuple[str, str, str], Measured]    # (mode, case id, tile) -> its A/B


def read_ab(paths: list[str]) -> AB:
    """(mode, case id, tile) -> its A/B from `gemmgate run --ab-ref --json` files: a case
    run on two tables (a tune call's, then the kept one's) keeps each tile's figure (the
    last file wins for the same tile)."""
    out = {}
    for p in paths:
        data = json.loads(Path(p).read_text())
        for c in data["cases"]:
            ab = ab_of(c, data.get("environment", {}).get("block", 1))
            if ab and c.get("ratio"):
                tile = c["telemetry"].get("triton_config", "")
                out[(c["mode"], c["id"].split("-", 1)[1], tile)] = Measured(ab, c["ratio"],
                                                                           tile)
    return out


def _keys(text: str) -> set[tuple[str, ...]]:
    """MxNxK:LAYOUT,... as (m, n, k, layout) strings (layout rr where not given)."""
    out = set()
    for item in filter(None, (x.strip() for x in text.split(","))):
        shape, _, layout = item.partition(":")
        dims = shape.split("x")
        if len(dims) != 3 or not all(d.isdigit() for d in dims):
            raise ValueError(f"{item!r}: give a key as MxNxK[:LAYOUT], e.g. 2880x2880x1024:rr")
        out.add((*dims, layout or "rr"))
    return out


def _named(e: dict) -> tuple[str, ...]:
    return (str(e["m"]), str(e["n"]), str(e["k"]), e.get("layout", "rr"))


def _tile(text: str) -> str:
    """A lookup_diff pick as the harness names the tile: no 'heuristic ', no copies."""
    return text.removeprefix("heuristic ").split(" [", 1)[0]


class Picker:
    """The picks this tree's dispatcher makes with a given table, on every case of the sets
    (each table in its own directory: kernels.table caches its index per directory)."""

    def __init__(self, sets, modes: list[str], sms: int, chip: str, header: dict,
                 device: str = lookup_diff.DEVICE):
        import kernels

        self.kernels, self.sets, self.modes, self.sms = kernels, sets, modes, sms
        self.chip, self.header, self.device = chip, header, device
        self._tmp = tempfile.TemporaryDirectory()
        self._n = 0

    def picks(self, entries: list[dict]) -> dict[Pick, str]:
        self._n += 1
        folder = Path(self._tmp.name) / str(self._n)
        folder.mkdir()
        # the other chips' tables beside it, as the kernel's folder holds them: a table
        # lent to this chip (`borrowed_by`) fills in the keys its own lacks
        for other in self.kernels.table_file.DEFAULT_DIR.glob("*.json"):
            if other.name != f"{self.chip}.json":
                (folder / other.name).write_bytes(other.read_bytes())
        (folder / f"{self.chip}.json").write_text(json.dumps({**self.header,
                                                             "entries": entries}))
        k = self.kernels
        table = types.SimpleNamespace(**{**vars(k.table), "lookup": functools.partial(
            k.table.lookup, directory=folder)})
        pkg = types.SimpleNamespace(dispatch=k.dispatch, modes=k.modes, configs=k.configs,
                                    table=table)
        return {(name, mode, case.id): lookup_diff.pick(pkg, mode, case, self.sms,
                                                        self.device)
                for name, cases in self.sets for mode in self.modes for case in cases}


def measured(ab: AB, p: Pick, text: str) -> Measured | None:
    """The A/B of case `p` on the tile lookup_diff names `text`, if one ran."""
    return ab.get((p[1], p[2], _tile(text)))


def unmeasured(now: dict[Pick, str], before: dict[Pick, str], ab: AB) -> list[Pick]:
    """The cases whose pick differs from REV's with no A/B of that tile."""
    return [p for p, text in now.items() if text != before.get(p)
            and measured(ab, p, text) is None]


def judge(picker: Picker, base: list[dict], new: list[dict], modes: set[str],
          ab: AB, before: dict[Pick, str],
          named: dict[str, set[Key]], timed: Timed | None = None) -> set[Key]:
    """The keys to leave out: `named["out"]`, and each changed entry whose picks fail the
    `verdict` unless `named["keep"]` holds it. Round 1 judges each entry in NEW; each later
    round judges the entries still kept in the table the rounds before left (an entry left
    out hands its picks to its neighbours, whose own verdict then covers them: session 26's
    fp8 call kept an entry on its first-round picks, then two picks it took over ran x0.93),
    until a round leaves nothing more out. Prints a line per entry judged: its picks and
    their A/Bs ('as REV': back to REV's pick; '?': not measured)."""
    left_out = set(named["out"])
    changed = changed_entries(base, new, modes)
    every = {key(e) for e in changed}
    bare = picker.picks(candidate(base, new, every, timed))   # no changed entry
    alone: dict[Key, dict[Pick, str]] = {}   # each entry as the one change: every round's
    todo, rnd = changed, 1
    while True:
        others = set(left_out) if rnd > 1 else set()   # round 1 judges NEW as written
        full = picker.picks(candidate(base, new, others, timed))
        more = set()
        for e in todo:
            without = picker.picks(candidate(base, new, others | {key(e)}, timed))
            moved = [p for p in full if full[p] != without.get(p)]
            # ...and the picks it moves as the one change (a twin entry that moves the
            # same picks hides them from the leave-one-out above: session 29's bf16 and
            # fp16 1536 x 1664 x 176 lent each other 128x64x64, each moving nothing alone)
            if key(e) not in alone:
                alone[key(e)] = picker.picks(candidate(base, new, every - {key(e)}, timed))
            only = alone[key(e)]
            moved += [p for p in only if only[p] != bare.get(p) and p not in moved
                      and only[p] == full.get(p)]
            got = [m for p in moved if (m := measured(ab, p, full[p])) is not None]
            keep = key(e) in named["keep"] or (verdict(got) and key(e) not in left_out)
            if not keep:
                more.add(key(e))
            if rnd == 1 or moved:
                cells = ", ".join(
                    f"{'' if p[1] == e['mode'] else p[1] + ' '}{p[2]}"
                    + (" as REV" if full[p] == before[p] else
                       f" x{m.ab:.2f}" if (m := measured(ab, p, full[p])) else " ?")
                    for p in moved)
                print(f"{'keep' if keep else 'out '} {e['mode']} {e['m']}x{e['n']}x{e['k']} "
                      f"{e.get('layout', 'rr')}: {len(moved)} picks"
                      f"{': ' + cells if cells else ''}{f' (round {rnd})' if rnd > 1 else ''}")
        left_out |= more
        if others == left_out:   # this round judged the table it keeps: settled
            return left_out
        rnd += 1
        todo = [e for e in changed if key(e) not in left_out]


TUNED_COLUMNS = ("case", "mode", "before", "before_ratio", "after", "after_ratio", "tried",
                 "call", "kept")


def _ratio(e: dict) -> str:
    tri, ven = e.get("triton_ms"), e.get("vendor_ms")
    return f"{ven / tri:.3f}" if tri and ven else ""


def tuned_rows(base: list[dict], new: list[dict], modes: set[str], left_out: set[Key],
               call: str) -> list[dict]:
    """One row per changed entry of the tune call: REV's tile and its ratio as tuned
    (empty for a new key), the new ones, candidates timed of those offered, kept or not."""
    old = {key(e): e for e in base}
    rows = []
    for e in changed_entries(base, new, modes):
        o = old.get(key(e))
        case = f"{e['m']}x{e['n']}x{e['k']}" + (f"-{e['layout']}" if e.get("layout", "rr")
                                                 != "rr" else "")
        rows.append({"case": case, "mode": e["mode"],
                     "before": config_spec(o["config"]) if o else "",
                     "before_ratio": _ratio(o) if o else "",
                     "after": config_spec(e["config"]), "after_ratio": _ratio(e),
                     "tried": f"{e.get('tried', '')}/{e.get('offered', '')}", "call": call,
                     "kept": "no" if key(e) in left_out else "yes"})
    return rows


def check_tuned_csv(path: Path) -> None:
    """ValueError unless `path` can be written as a tuned.csv: a new file, an empty one or
    one with TUNED_COLUMNS (another CSV's rows would be lost, or a KeyError)."""
    from gemmgate.files import check_writable, read_text

    check_writable(path, "--tuned-csv file")
    if not path.exists():
        return
    text = read_text(path, "--tuned-csv file")
    head = next(csv.reader(io.StringIO(text)), None)
    lacks = [c for c in TUNED_COLUMNS if head is not None and c not in head]
    if lacks:
        raise ValueError(f"--tuned-csv {path} is not a tuned.csv (no column "
                         f"{', '.join(lacks)}): give a session's tuned.csv or a new file")


def write_tuned_csv(path: Path, rows: list[dict], call: str) -> None:
    """`rows` replace the file's rows of label `call`; other labels' rows stay."""
    from gemmgate.files import write_text_atomic

    kept = []
    if path.exists():
        with path.open(newline="") as f:
            kept = [r for r in csv.DictReader(f) if r["call"] != call]
    out = io.StringIO()
    w = csv.DictWriter(out, TUNED_COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(kept + rows)
    write_text_atomic(path, out.getvalue())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", required=True, help="the commit the A/B ran against")
    ap.add_argument("--table", required=True, help="the table the tune call wrote")
    ap.add_argument("--ab", required=True, help="comma-separated `gemmgate run --json` files")
    ap.add_argument("--modes", required=True, help="the modes the tune call searched")
    ap.add_argument("--sets", default=lookup_diff.SETS)
    ap.add_argument("--chip", default="nvidia-h200")
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--leave-out", default="",
                    help="keys to leave out whatever their verdict, e.g. 2880x2880x1024:rr")
    ap.add_argument("--keep", default="",
                    help="keys to keep whatever their verdict (where leaving them out "
                         "leaves picks unmeasured)")
    ap.add_argument("--candidate", metavar="FILE",
                    help="write the kept table here, and its unmeasured cases as FILE.csv")
    ap.add_argument("--write", action="store_true",
                    help="replace kernels/tuned/<chip>.json with the kept table")
    ap.add_argument("--tune-json", default="",
                    help="comma-separated `gemmgate tune --json` files of the call: a left-out "
                         "key whose REV entry is stale comes back where they timed its tile")
    ap.add_argument("--tuned-csv", help="record the changed entries as rows of this CSV")
    ap.add_argument("--call", help="the rows' call label (with --tuned-csv)")
    args = ap.parse_args(argv)
    from gemmgate import reference
    from gemmgate.files import write_json_atomic
    from gemmgate.precision import get_mode
    from gemmgate.shapes import resolve

    rel = f"kernels/tuned/{args.chip}.json"
    try:
        sha, old_pkg = reference.load(reference.resolve(args.ref, ROOT, "--ref"), ROOT)
        shown = subprocess.run(["git", "show", f"{sha}:{rel}"], cwd=ROOT, capture_output=True,
                               text=True, timeout=60)
        if shown.returncode != 0:
            raise ValueError(f"--ref {args.ref}: it has no {rel}")
        base = json.loads(shown.stdout)["entries"]
        new_data = json.loads(Path(args.table).read_text())
        new = new_data["entries"]
        ab = read_ab(args.ab.split(","))
        timed = tune_timings([x for x in args.tune_json.split(",") if x])
        sets = [(name, resolve(name)[1]) for name in args.sets.split(",")]
        extra, forced = (_keys(x) for x in (args.leave_out, args.keep))
        if extra & forced:
            raise ValueError(f"--leave-out and --keep both name {sorted(extra & forced)}")
        if bool(args.tuned_csv) != bool(args.call):
            raise ValueError("--tuned-csv and --call go together")
        if args.candidate and Path(args.candidate).suffix == ".csv":   # (the table was
            # written, then its shape file over it: "wrote X and X", exit 0; a review)
            raise ValueError(f"--candidate {args.candidate}: its shape file is FILE with "
                             ".csv, the same file; give the table a .json name")
        for mode in args.modes.split(","):   # (an unknown one was a traceback, exit 1)
            get_mode(mode)
        if args.tuned_csv:   # (checked before the judging: another CSV was a KeyError
            check_tuned_csv(Path(args.tuned_csv))   # traceback after it, or replaced)
    except (OSError, KeyError, json.JSONDecodeError, ValueError) as e:
        print(f"keep_entries: error: {e}", file=sys.stderr)
        return 2
    modes = args.modes.split(",")
    header = {k: v for k, v in new_data.items() if k != "entries"}
    # the chip's picks: a device name its table names (the H200's name matched no other
    # chip's table, and every --chip nvidia-h100 pick was "heuristic", a review)
    device = (header.get("match") or [""])[0] or lookup_diff.DEVICE
    if header.get("chip", args.chip) != args.chip:
        print(f"keep_entries: error: --table {args.table} is {header['chip']}'s, not "
              f"--chip {args.chip}'s", file=sys.stderr)
        return 2
    picker = Picker(sets, modes, args.sms, args.chip, header, device)
    before = {(n, m, c.id): lookup_diff.pick(old_pkg, m, c, args.sms, device)
              for n, cases in sets for m in modes for c in cases}
    named = {k: {key(e) for e in new if e["mode"] in modes and _named(e) in keys}
             for k, keys in (("out", extra), ("keep", forced))}
    left_out = judge(picker, base, new, set(modes), ab, before, named, timed)
    kept = candidate(base, new, left_out, timed)
    final = picker.picks(kept)
    missing = unmeasured(final, before, ab)
    moved = [p for p in final if final[p] != before[p]]
    gains = [measured(ab, p, final[p]).ab for p in moved if p not in missing]
    geo = geomean(gains) if gains else 1.0
    print(f"{len(left_out)} entries left out; {len(moved)} picks differ from {sha[:12]}, "
          f"{len(moved) - len(missing)} measured (A/B geomean x{geo:.3f})")
    for p in missing:
        print(f"unmeasured: {p[0]} {p[1]} {p[2]} -> {final[p]}")
    if args.candidate:
        write_json_atomic(Path(args.candidate), {**header, "entries": kept})
        shapes = Path(args.candidate).with_suffix(".csv")
        lookup_diff.write_cases(str(shapes), sets, [(p[0], p[1], p[2]) for p in missing])
        print(f"wrote {args.candidate} and {shapes} ({len(missing)} unmeasured)")
    if missing:
        return 1
    if args.tuned_csv:
        write_tuned_csv(Path(args.tuned_csv),
                        tuned_rows(base, new, set(modes), left_out, args.call), args.call)
        print(f"wrote {args.tuned_csv} ({args.call})")
    if args.write:
        from gemmgate.case import Case
        from gemmgate.tune import holdout_shapes

        # a holdout shape tuned into a --table elsewhere (tune allows it, to measure it) was
        # kept (it moved no pick of --sets) and written into the kernel's table (a review)
        held = holdout_shapes(Case(e["m"], e["n"], e["k"]) for e in kept)
        if held:
            print(f"keep_entries: error: the kept table holds {len(held)} shape(s) of a "
                  f"holdout set ({', '.join(held[:6])}{' ...' if len(held) > 6 else ''}), "
                  f"which no table in kernels/tuned may hold: leave them out (--leave-out); "
                  f"{rel} not written", file=sys.stderr)
            return 2
        write_json_atomic(ROOT / rel, {**header, "entries": kept})
        print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
