"""Nsight Compute's rows given their providers: a few metrics a provider, as a small CSV.

    python3 scripts/ncu_summary.py NCU.csv ORDER.csv [--metric NAME ...] [--label L]
                                   [--out PATH]

NCU.csv is a report's raw page (`ncu -i R.ncu-rep --csv --page raw`): a header row, a
units row, then one row a profiled kernel launch. ORDER.csv is what
`scripts/device/tiles.py --profile-calls N --csv ORDER.csv` wrote while ncu profiled it
(`ncu --nvtx --nvtx-include profile/`): the providers in the order they called, N calls
each, every call one GEMM kernel (`--kernel` picks those rows out where a call launched
more). The launches are matched to the providers by that order, and each provider gets
the median of each metric over its launches. Exit 2 with a message where the counts do
not agree or a metric is missing.
"""

from __future__ import annotations

import argparse
import csv
import re
import statistics
import sys
from pathlib import Path

# What bounds a GEMM tile on Hopper: time and clock, the tensor pipe's busy cycles (the
# wgmma instructions), shared memory's banks, issue, L2, and the stalls that matter
METRICS = (
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg",
    "launch__registers_per_thread",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed",
    "l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "lts__t_sector_hit_rate.pct",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio",
)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def read_ncu(path: Path) -> tuple[list[str], list[dict]]:
    """The raw page's metric names (header order) and its launch rows, by ID."""
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r and not r[0].startswith("==")]
    if len(rows) < 2 or "ID" not in rows[0]:
        raise ValueError(f"{path}: not an ncu raw page (`ncu -i R --csv --page raw`)")
    head = rows[0]
    data = [dict(zip(head, r)) for r in rows[2:]]
    return head, sorted(data, key=lambda r: int(r["ID"]))


def assign(launches: list[dict], order: list[dict], kernel: str | None) -> list[tuple[dict, dict]]:
    """(order row, launch) pairs: each provider's `calls` launches in turn."""
    if kernel:
        launches = [r for r in launches if re.search(kernel, r.get("Kernel Name", ""))]
    want = sum(int(o["calls"]) for o in order)
    if len(launches) != want:
        raise ValueError(f"{len(launches)} profiled launches, the order names {want} "
                         f"calls ({len(order)} providers): give --kernel, or profile "
                         "one GEMM kernel a call")
    out, i = [], 0
    for o in order:
        for _ in range(int(o["calls"])):
            out.append((o, launches[i]))
            i += 1
    return out


def summarize(pairs: list[tuple[dict, dict]], metrics: list[str],
              label: str = "") -> list[dict]:
    """One row a provider: its labels, its kernel's name, and each metric's median."""
    by: dict[tuple, list[dict]] = {}
    for o, launch in pairs:
        by.setdefault((o["shape"], o["mode"], o["provider"]), []).append(launch)
    rows = []
    for (shape, mode, provider), launches in by.items():
        row = {"label": label, "shape": shape, "mode": mode, "provider": provider,
               "kernel": launches[0].get("Kernel Name", "")[:48], "launches": len(launches)}
        for m in metrics:
            if m not in launches[0]:
                raise ValueError(f"metric {m!r} is not in the report (collect its "
                                 "section, e.g. --set full)")
            row[m] = round(statistics.median(_number(x[m]) for x in launches), 3)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("ncu_csv", type=Path)
    p.add_argument("order_csv", type=Path)
    p.add_argument("--metric", action="append", help=f"a metric (default: {len(METRICS)})")
    p.add_argument("--kernel", help="a regex: only launches whose kernel name matches")
    p.add_argument("--label", default="", help="the rows' label column")
    p.add_argument("--out", type=Path, help="write here (default: stdout)")
    args = p.parse_args(argv)
    try:
        _, launches = read_ncu(args.ncu_csv)
        with open(args.order_csv, newline="") as f:
            order = list(csv.DictReader(f))
        rows = summarize(assign(launches, order, args.kernel), args.metric or list(METRICS),
                         args.label)
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    sink = open(args.out, "w", newline="") if args.out else sys.stdout
    with sink:
        w = csv.DictWriter(sink, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
