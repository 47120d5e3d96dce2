"""Compact rows from a pytest-benchmark save-then-compare cycle (tests/perf, issue 12).

    python3 scripts/pytest_benchmark_rows.py OUT.csv SAVED.json RUN=COMPARED.json ...

SAVED.json is the run `--benchmark-autosave` stored; each RUN=FILE is a later run's
`--benchmark-json` (e.g. compare1=..., compare2=..., inject=...). One row per test: the
saved round median, gemmgate's own device median from extra_info and their ratio, and
each run's median change against the saved one (what `--benchmark-compare-fail=median:X`
judges) and the change of gemmgate's own median in that run (`RUN_gemmgate_change`: did
the GPU run slower then?). scripts/perf_tables.py reads the file.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gemmgate.files import write_text_atomic  # noqa: E402


def _benchmarks(path: str) -> dict[str, dict]:
    try:
        data = json.loads(Path(path).read_text())
        got = {b["name"]: b for b in data["benchmarks"]}
        for name, b in got.items():   # (a test without a median was a traceback, exit 1,
            med = b["stats"]["median"]   # and a zero one a ZeroDivisionError; a review)
            if isinstance(med, bool) or not isinstance(med, (int, float)) or not med > 0:
                raise ValueError(f"{name}'s stats.median is {med!r}, not a time > 0")
            if not isinstance(b.get("extra_info", {}), dict):
                raise ValueError(f"{name}'s extra_info is not an object")
        return got
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path} is not a pytest-benchmark JSON: {e}") from None


def _gemmgate_figure(info: dict) -> float | None:
    """gemmgate's own figure for what the round measured: Triton's device median, or
    with `--perf-figure ratio` Triton's time / the vendor's (1 / gemmgate's ratio)."""
    if info.get("figure") == "ratio":
        return 1 / info["ratio"] if info.get("ratio") else None
    return info.get("triton_median_ms")


def rows(saved: dict[str, dict], runs: dict[str, dict[str, dict]]) -> list[dict]:
    out = []
    for name, b in saved.items():
        info, med = b.get("extra_info", {}), b["stats"]["median"]
        launches = int(info.get("launches_per_round", 1))
        per_call = med * 1e3 / launches
        gg = _gemmgate_figure(info)
        row = {"mode": info.get("mode", ""), "case": info.get("case", name),
               "launches": launches, "round_median_ms": f"{med * 1e3:.4g}",
               "per_call_ms": f"{per_call:.4g}", "gemmgate_ms": f"{gg:.4g}" if gg else "",
               "per_call_over_gemmgate": f"{per_call / gg:.3f}" if gg else ""}
        for label, bs in runs.items():
            other = bs.get(name)
            row[f"{label}_change"] = (f"{other['stats']['median'] / med - 1:.4f}"
                                      if other else "")
            # gemmgate's own device median in that run, against the saved run's: whether
            # the GPU itself ran slower then (clock, power cap), beside the kernel's figure
            og = _gemmgate_figure((other or {}).get("extra_info", {}))
            row[f"{label}_gemmgate_change"] = f"{og / gg - 1:.4f}" if og and gg else ""
        out.append(row)
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2 or any("=" not in a for a in argv[2:]):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    out = Path(argv[0])
    try:
        saved = _benchmarks(argv[1])
        runs = {a.split("=", 1)[0]: _benchmarks(a.split("=", 1)[1]) for a in argv[2:]}
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    got = rows(saved, runs)
    if not got:
        print(f"error: {argv[1]} holds no benchmarks", file=sys.stderr)
        return 2
    text = io.StringIO(newline="")
    w = csv.DictWriter(text, fieldnames=list(got[0]))
    w.writeheader()
    w.writerows(got)
    write_text_atomic(out, text.getvalue())
    print(f"wrote {len(got)} rows to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
