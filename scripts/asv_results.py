#!/usr/bin/env python3
"""Name asv results by the Python version, not the interpreter's path.

`asv run --python=same` is asv's "existing environment", which asv names after the
interpreter's path (`existing-py_<path>`, and `params.python` the path too): the path is
the job's virtual environment (`$RUNNER_TEMP/gemmgate-venv`), so a runner installed under
another directory, or a second runner of the chip, started a graph line of its own on the
published site, and ended the old one. This rewrites results to `existing-py<X.Y>`
(`python: X.Y`), the file renamed to match, atomically:

    python3 scripts/asv_results.py .asv/results/<machine>              # after `asv run`
    python3 scripts/asv_results.py --all --as 3.12 RESULTS/<machine>   # stored ones, once

By default only the results this interpreter wrote (their `python` is this
`sys.executable`, links followed), as this interpreter's version; `--all --as X.Y`: every
`existing-py_<path>` file (the version named: results do not record it). Where a file of
that name exists already (a second `asv run` of the commit: asv merges only into a file
of its own env name), the new results are merged into it benchmark by benchmark, the new
ones winning. Results of the path form left behind are named on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

_PATH_FORM = "existing-py_"
_MERGED = ("results", "durations", "benchmark_version")   # per-benchmark maps


def _same(path: str, executable: str) -> bool:
    try:
        return os.path.samefile(path, executable)
    except OSError:
        return path == executable


def _write(folder: Path, target: Path, data: dict) -> None:
    """`data` to `target` whole or not at all, with a normal file's mode: mkstemp's 0600
    made the renamed results unreadable to others beside asv's own 0644 files (a tarball
    of .asv/results, a site served by another user; a review), and a failed write left
    its temp file in the folder, which the nightly's store job commits whole."""
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read(path: Path):
    """A results file's JSON; ValueError naming the file (a bare "Expecting value: line 2
    column 1" said nothing of which of the folder's files it was; a review)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path} is not an asv results JSON ({e}): fix or remove it") from None


def rename(folder: Path, version: str, executable: str | None) -> list[Path]:
    """Rewrite `folder`'s path-named results of `executable` (None: all of them) to
    `existing-py<version>`; the files written."""
    if not re.fullmatch(r"\d+\.\d+", version):
        raise ValueError(f"a Python version is X.Y, got {version!r}")
    env = f"existing-py{version}"
    done = []
    for path in sorted(folder.glob("*.json")):
        if path.name == "machine.json":
            continue
        data = _read(path)
        old = data.get("env_name", "") if isinstance(data, dict) else ""
        if not old.startswith(_PATH_FORM) or not isinstance(data.get("python"), str):
            continue
        if executable is not None and not _same(data["python"], executable):
            continue
        data["python"] = version
        data["env_name"] = env
        if isinstance(data.get("params"), dict):
            data["params"]["python"] = version
        commit = str(data.get("commit_hash", ""))[:8] or path.name.split("-", 1)[0]
        target = path.with_name(f"{commit}-{env}.json")
        if target.exists():   # the commit's earlier results: kept where not run again
            earlier = _read(target)
            for key in _MERGED:
                if isinstance(earlier.get(key), dict) and isinstance(data.get(key), dict):
                    data[key] = {**earlier[key], **data[key]}
        _write(folder, target, data)
        path.unlink()
        done.append(target)
    return done


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="an asv results folder of one machine")
    ap.add_argument("--all", action="store_true",
                    help="every path-named result, not only this interpreter's (with --as)")
    ap.add_argument("--as", dest="version", metavar="X.Y",
                    help="the Python version to name them (default: this interpreter's)")
    args = ap.parse_args(argv)
    folder = Path(args.folder)
    if not folder.is_dir():
        print(f"asv_results: {folder} is not a folder (give .asv/results/<machine>)",
              file=sys.stderr)
        return 2
    if args.all and not args.version:
        print("asv_results: --all needs --as X.Y: results do not record their version",
              file=sys.stderr)
        return 2
    version = args.version or f"{sys.version_info[0]}.{sys.version_info[1]}"
    try:
        done = rename(folder, version, None if args.all else sys.executable)
    except ValueError as e:
        print(f"asv_results: {e}", file=sys.stderr)
        return 2
    print(f"asv results: {len(done)} file(s) named existing-py{version}")
    left = sorted(p.name for p in folder.glob(f"*-{_PATH_FORM}*.json"))
    if left:
        print(f"asv_results: {len(left)} result file(s) still named by a path (another "
              f"interpreter's; `--all --as X.Y` names them): {', '.join(left[:5])}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
