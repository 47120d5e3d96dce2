"""Compact, reviewable rows from `gemmgate run/check --json` files (no raw samples).

    python3 scripts/summarize_runs.py OUT.csv LABEL=RUN.json[,RUN2.json...] ...

One row per (label, mode, case): Triton and vendor TFLOP/s and the speed ratio (medians
over the label's runs), the ratio against each extra provider (e.g. inductor) and, with
an A/B reference, `ab` (the reference's time / Triton's: > 1, the current kernel is
faster), `xs_NAME` (a provider's error beyond the output's own rounding, where recorded;
`bx_NAME` the same in the output's worst block),
the tile
that ran and Triton's accuracy. Rows are appended to OUT.csv's existing rows of other
labels (a label given again replaces its rows). scripts/perf_tables.py reads the file.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gemmgate.files import write_csv_atomic  # noqa: E402
from gemmgate.results import CaseResult  # noqa: E402
from gemmgate.stats import median  # noqa: E402

FIELDS = ("label", "mode", "case", "triton_tflops", "vendor_tflops", "ratio", "extra",
          "tile", "accuracy", "runs")


def _median(xs):
    # an error past any number is written "inf" or "nan" (results._num): a number here,
    # not a word that the row's e-notation raised on (a traceback; a review)
    xs = [float(x) if isinstance(x, str) else x for x in xs if x is not None]
    return median(xs) if xs else None


def ab_of(case: dict, block: int = 1) -> float | None:
    """A run file case's A/B as the gate takes it: the median of its per-round ratios
    reference / Triton (`CaseResult.ab_median`; the ratio of the two medians differs by
    up to 4% where rounds fall into two clock states, a review); None without one."""
    if "reference" not in case.get("providers", {}):
        return None
    return CaseResult.from_json(case, f"case {case.get('id')}", block).ab_median


_SCI = ("xs_", "bx_", "el_")   # errors: written in e-notation, a zero kept


def _accuracy(cases: list[dict]) -> str:
    """Triton's accuracy over the label's runs: the one verdict where they agree, else
    each with its count, failures first ("fail 1/2, pass 1/2"). The first run's alone was
    written: a later run's failure read "pass", and the row's medians left that run out
    (a review)."""
    got = [c["providers"]["triton"]["accuracy"] for c in cases]
    if len(set(got)) == 1:
        return got[0]
    return ", ".join(f"{a} {got.count(a)}/{len(got)}"
                     for a in sorted(set(got), key=lambda a: (a == "pass", a)))


def _tflops(x: float | None) -> str:
    """A rate as the row keeps it: one decimal at 1 TFLOP/s and up, three significant
    digits under it (a CPU's 0.004 TFLOP/s had been written 0.0); blank without one."""
    if not x:
        return ""
    return f"{x:.1f}" if x >= 1 else f"{x:.3g}"


def rows_of(label: str, paths: list[str]) -> list[dict]:
    by: dict[str, list[dict]] = {}
    abs_: dict[str, list[float | None]] = {}   # each run's A/B of the case (`ab_of`)
    for p in paths:
        data = json.loads(Path(p).read_text())
        block = data.get("environment", {}).get("block", 1)
        for c in data["cases"]:
            by.setdefault(c["id"], []).append(c)
            abs_.setdefault(c["id"], []).append(ab_of(c, block))
    out = []
    for cid, cs in by.items():
        t = _median(c["providers"]["triton"].get("tflops") for c in cs)
        v = _median(c["providers"].get("vendor", {}).get("tflops") for c in cs)
        extra = {name: _median(c.get("ratios", {}).get(name) for c in cs)
                 for name in cs[0].get("ratios", {}) if name not in ("vendor", "reference")}
        if "reference" in cs[0]["providers"]:   # A/B: the reference's time / Triton's
            extra["ab"] = _median(abs_[cid])
        for name in ("triton", "vendor", "vendor_fast"):
            if name not in cs[0]["providers"]:
                continue
            # beyond the output's rounding (16-bit outputs, session 58 on), always written
            extra[f"xs_{name}"] = _median(c["providers"][name].get("excess") for c in cs)
            # its worst block's (session 70 on) and its worst element's over a typical
            # one's (session 79 on; every mode), where recorded
            for key, field in (("bx", "block_excess"), ("el", "element")):
                x = _median(c["providers"][name].get(field) for c in cs)
                if x is not None:
                    extra[f"{key}_{name}"] = x
        ratio = _median(c.get("ratio") for c in cs)
        out.append({
            "label": label, "mode": cs[0]["mode"], "case": cid.split("-", 1)[1],
            "triton_tflops": _tflops(t), "vendor_tflops": _tflops(v),
            # every run's (the first run's alone said whether there was one: a first run
            # without a ratio blanked the others', a review)
            "ratio": f"{ratio:.4f}" if ratio else "",
            "extra": " ".join(f"{k}:{r:.2e}" if k.startswith(_SCI) else f"{k}:{r:.4f}"
                              for k, r in extra.items()
                              if r or (r is not None and k.startswith(_SCI))),
            "tile": cs[0]["telemetry"].get("triton_config", ""),
            "accuracy": _accuracy(cs), "runs": len(cs)})
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2 or any("=" not in a for a in argv[1:]):
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    labels = [a.split("=", 1) for a in argv[1:]]
    names = [lab for lab, _ in labels]
    twice = sorted({lab for lab in names if names.count(lab) > 1})
    if twice:   # (its rows were written once per time given: each case twice)
        print(f"label {', '.join(twice)} given more than once; give a label's runs once, "
              "comma-separated (LABEL=RUN.json,RUN2.json)", file=sys.stderr)
        return 2
    keep = []
    if out.exists():
        with open(out, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames is not None and "label" not in reader.fieldnames:
                print(f"{out}: not a summarize_runs CSV (no 'label' column); give a new "
                      "file or one this script wrote", file=sys.stderr)
                return 2
            keep = [r for r in reader if r["label"] not in {lab for lab, _ in labels}]
    try:
        rows = keep + [r for lab, paths in labels for r in rows_of(lab, paths.split(","))]
    except (OSError, ValueError) as e:   # a missing or unreadable run file, not JSON
        print(f"summarize_runs: error: {e}", file=sys.stderr)
        return 2
    try:   # whole or not at all: the other labels' rows too
        out.parent.mkdir(parents=True, exist_ok=True)
        write_csv_atomic(out, rows, FIELDS)
    except OSError as e:
        print(f"summarize_runs: error: {out} not written ({e}); it is as it was",
              file=sys.stderr)
        return 2
    print(f"wrote {out}: {len(rows)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
