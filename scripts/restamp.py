"""Re-stamp tuning entries an edit left stale, where the code they were timed on is unchanged.

    python3 scripts/restamp.py --ref REV [--against REV2] [--table kernels/tuned/nvidia-h200.json]
                               [--write]

An edit to a variant's kernel source makes every table entry of that variant stale (its
source hash, kernels/table_file.py), and a stale entry is never used until `gemmgate tune
--stale` retunes it: device time, and picks moved by the tune's own noise (session 28:
72 entries retuned whose loop had not changed, one moved pick failed the PR check). An
entry's timing describes the machine code its call ran. Where that is the same after
the edit, the timing still holds.

For each entry stale here and stamped with REV's source, this runs the entry's own call
(its mode, shape, layout and padding, copies kept, its tile as `config=`) through
`kernels.matmul` at REV and in this tree (or at REV2: `--against`), as an H200 plans it,
with every launch compiled for sm_90a and none run (scripts/call_audit.py's machinery, no
GPU). It then compares each launch's PTX without debug info (`.file`/`.loc` lines,
comments, debug sections; a moved line number is not a change). Each tree runs in its
own process. The same PTX, through the same ptxas, is the same cubin.

Only entries tuned on the running Triton's major.minor can be judged: their PTX is what
this Triton makes (the H200 table: run under its 3.6, e.g. `PYTHONPATH=<a triton 3.6
wheel, unzipped>`). Others are reported and left stale.

Prints one line per entry (`same`, `differs`, or why it was not judged) and a count.
`--write` re-stamps the `same` ones in the table (atomically, under the tuner's lock):
`kernel` becomes this tree's (REV2's) hash, and `restamped` records the hash before, REV, the
Triton that compiled both, and the date. Exit 0 when every stale entry stamped with REV
is the same; 1 when any differs or fails to compile (those stay stale: `gemmgate tune
--stale`); 2 on bad input.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TABLE = ROOT / "kernels" / "tuned" / "nvidia-h200.json"
sys.path.insert(0, str(ROOT / "scripts"))

from ptx_diff import plain_ptx  # noqa: E402 - PTX without debug info, compared as text


def judged(entries: list[dict], here: dict[str, str], ref: dict[str, str], triton: str
           ) -> tuple[list[int], dict[int, str]]:
    """(indices of the entries to compile, {index: why not} for the other stale ones):
    stale here (`here`: variant -> this tree's source hash), stamped with REV's source
    (`ref`), and tuned on `triton`'s major.minor."""
    from kernels.table_file import triton_minor  # (not at import: --child picks a tree)

    todo, skipped = [], {}
    for i, e in enumerate(entries):
        variant = e["config"].get("variant", "tiled")
        if e["kernel"] == here.get(variant):
            continue
        if e["kernel"] != ref.get(variant):
            skipped[i] = "stale before REV (stamped with neither tree's source)"
        elif triton_minor(e.get("triton", "")) != triton_minor(triton):
            skipped[i] = f"tuned on triton {e.get('triton', '?')}, this process runs {triton}"
        else:
            todo.append(i)
    return todo, skipped


def restamped(entries: list[dict], same: list[int], here: dict[str, str], ref_sha: str,
              triton: str, date: str) -> list[dict]:
    """The entries with those in `same` stamped with this tree's source hash, each
    recording what it was stamped with before and how it was judged."""
    out = [dict(e) for e in entries]
    for i in same:
        e = out[i]
        e["restamped"] = {"from": e["kernel"], "ref": ref_sha[:12], "triton": triton,
                          "date": date}
        e["kernel"] = here[e["config"].get("variant", "tiled")]
    return out


def digests(entries: list[dict]) -> list[list[str]]:
    """Each entry's call, compiled as an H200 plans it: a digest of each launch's kernel
    name and plain PTX, in launch order (an error's text where it does not compile).
    Runs on whichever `kernels` package this process imports."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from call_audit import as_chip, call, target

    from gemmgate.shapes import Case
    from kernels.tile import TileConfig

    out: list[list[str]] = []
    got: list = []
    with as_chip(target(), got):
        for e in entries:
            got.clear()
            case = Case(int(e["m"]), int(e["n"]), int(e["k"]), e.get("layout", "rr"),
                        int(e.get("pad", 0)))
            try:
                call(e["mode"], case, True, TileConfig(**e["config"]))
            except Exception as err:   # noqa: BLE001 - a call that does not compile differs
                out.append([f"error: {type(err).__name__}: {err}"[:300]])
                continue
            out.append([hashlib.sha1(f"{k.name}\n{plain_ptx(k.asm['ptx'])}".encode())
                        .hexdigest() for k, _, _ in got])
    return out


def _child(tree: str, entries_file: str) -> int:
    """--child: `digests` of the entries in `entries_file`, on the `kernels` package in
    `tree` (REV's extracted, or this one), as JSON on stdout."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "scripts"))
    import call_audit  # noqa: F401 - it puts this tree first on sys.path; `tree` goes first

    sys.path.insert(0, tree)
    import kernels

    if Path(kernels.__file__).resolve().parent != (Path(tree) / "kernels").resolve():
        raise SystemExit(f"restamp: imported {kernels.__file__}, not {tree}/kernels")
    print(json.dumps(digests(json.loads(Path(entries_file).read_text()))))
    return 0


def _extract(sha: str) -> Path:
    """REV's kernels/ in a temporary directory (gemmgate.reference's extraction)."""
    from gemmgate import reference

    return reference._extract(sha, ROOT)


def _hashes(tree: Path) -> dict[str, str]:
    """variant -> source hash of the `kernels` package in `tree`, from a child process."""
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); "
            "from kernels import table_file as t; "
            "print(json.dumps({v: t.variant_hash(v) for v in t._SOURCES}))")
    out = subprocess.run([sys.executable, "-c", code, str(tree)], capture_output=True,
                         text=True, check=True, timeout=600)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", help="the commit whose source the stale entries were stamped with")
    ap.add_argument("--against", help="compare with this commit's kernels, not this tree's")
    ap.add_argument("--table", type=Path, default=DEFAULT_TABLE)
    ap.add_argument("--write", action="store_true", help="re-stamp the entries found the same")
    ap.add_argument("--child", nargs=2, metavar=("TREE", "ENTRIES"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return _child(*args.child)
    sys.path.insert(0, str(ROOT))
    import triton

    from gemmgate import reference
    from gemmgate.files import write_json_atomic
    from kernels import table_file

    if not args.ref:
        print("restamp: error: --ref REV is required (the commit whose source the stale "
              "entries were stamped with)", file=sys.stderr)
        return 2
    try:
        sha = reference.resolve(args.ref, ROOT, "--ref")
        new = _extract(reference.resolve(args.against, ROOT, "--against")) \
            if args.against else ROOT
        data = table_file.read_table(args.table)
        old = _extract(sha)
    except (ValueError, table_file.TableError) as e:
        print(f"restamp: error: {e}", file=sys.stderr)
        return 2
    entries = data["entries"]
    here, ref = _hashes(new), _hashes(old)
    todo, skipped = judged(entries, here, ref, triton.__version__)
    for i, why in skipped.items():
        print(f"{_label(entries[i])}: not judged, {why}")
    if not todo:
        print(f"restamp: no stale entry stamped with {sha[:12]}'s source to judge "
              f"({len(skipped)} stale otherwise)")
        return 0
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([entries[i] for i in todo], f)
    runs = [subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child",
                              str(tree), f.name], stdout=subprocess.PIPE, text=True)
            for tree in (old, new)]
    outs = [r.communicate()[0] for r in runs]
    Path(f.name).unlink()
    if any(r.returncode for r in runs):
        print("restamp: error: a tree's compile process failed (its stderr above)",
              file=sys.stderr)
        return 2
    theirs, mine = (json.loads(o) for o in outs)
    same = []
    for i, a, b in zip(todo, theirs, mine):
        ok = a == b and not any(d.startswith("error") for d in b)
        same += [i] if ok else []
        print(f"{_label(entries[i])}: {'same' if ok else 'differs'}"
              + ("" if ok else f" ({len(a)} launches at {sha[:12]}, {len(b)} here"
                 + (f"; {b[0]}" if b and b[0].startswith("error") else "") + ")"))
    print(f"restamp: {len(same)} of {len(todo)} stale entries compile to the same PTX as at "
          f"{sha[:12]} (triton {triton.__version__}); {len(skipped)} not judged")
    if args.write and same:
        from filelock import FileLock

        with FileLock(str(args.table) + ".lock", timeout=600):
            now = table_file.read_table(args.table)
            if now["entries"] != entries:
                print("restamp: error: the table changed while this ran; run again",
                      file=sys.stderr)
                return 2
            today = datetime.date.today().isoformat()
            write_json_atomic(args.table, {**now, "entries": restamped(
                entries, same, here, sha, triton.__version__, today)})
            table_file.read_table(args.table)   # what was written must load
        print(f"restamp: {len(same)} entries re-stamped in {args.table}")
    return 0 if len(same) == len(todo) else 1


def _label(e: dict) -> str:
    c = e["config"]
    return (f"{e['mode']} {e['m']}x{e['n']}x{e['k']}-{e.get('layout', 'rr')}"
            f"{'+p' + str(e['pad']) if e.get('pad') else ''} {c.get('variant', 'tiled')} "
            f"{c['block_m']}x{c['block_n']}x{c['block_k']} s{c['num_stages']} "
            f"w{c['num_warps']} k{c.get('split_k', 1)}")


if __name__ == "__main__":
    sys.exit(main())
