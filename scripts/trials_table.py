"""Power table from stored `gemmgate check --json` trials (plain or .gz, or .tgz archives
of them): per injected slowdown, how many case checks were flagged `regressed`, and which
cases were missed or falsely flagged. Recomputes docs/PERF.md's fresh-process tables.

    python3 scripts/trials_table.py docs/results/h200-2026-11-29-s2/call4/knob.tgz
"""

import gzip
import json
import sys
import tarfile
from collections import defaultdict
from pathlib import Path


def _checks(path: Path):
    if path.name.endswith((".tgz", ".tar.gz")):
        with tarfile.open(path) as tar:
            for m in sorted(tar.getmembers(), key=lambda m: m.name):
                if m.name.endswith((".json", ".json.gz")):
                    raw = tar.extractfile(m).read()
                    yield m.name, json.loads(gzip.decompress(raw) if m.name.endswith(".gz")
                                             else raw)
    elif path.is_dir():
        for p in sorted(path.rglob("*.json*")):
            yield from _checks(p)
    elif path.name.endswith(".json.gz"):
        yield path.name, json.loads(gzip.decompress(path.read_bytes()))
    elif path.name.endswith(".json"):
        yield path.name, json.loads(path.read_text())


def main(paths: list[str]) -> None:
    rows = defaultdict(lambda: {"checks": 0, "judged": 0, "regressed": 0})
    flagged = defaultdict(lambda: defaultdict(list))
    for p in paths:
        for name, data in _checks(Path(p)):
            gate = data.get("gate")
            if not gate:
                continue
            level = gate.get("inject_slowdown", 0.0)
            r = rows[level]
            r["checks"] += 1
            for v in gate["verdicts"]:
                if v["verdict"] == "failed":
                    continue
                r["judged"] += 1
                hit = v["verdict"] == "regressed"
                r["regressed"] += hit
                if hit == (level == 0):  # a false alarm, or a miss
                    flagged[level][v["id"]].append(name)
    print("| injected slowdown | checks | case checks | flagged regressed | fraction |")
    print("|---:|---:|---:|---:|---:|")
    for level in sorted(rows):
        r = rows[level]
        print(f"| {level:.0%} | {r['checks']} | {r['judged']} | {r['regressed']} | "
              f"{r['regressed'] / r['judged']:.1%} |")
    for level in sorted(flagged):
        what = "false alarms" if level == 0 else "missed"
        print(f"\n{what} at {level:.0%}:")
        for case, names in sorted(flagged[level].items()):
            print(f"  {case}: {len(names)}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
