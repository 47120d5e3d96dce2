"""Power table from stored `gemmgate check --json` trials (plain or .gz, or .tgz archives
of them): per injected slowdown, how many case checks were flagged `regressed`, and which
cases were missed or falsely flagged. Recomputes docs/PERF.md's fresh-process tables.

    python3 scripts/trials_table.py docs/results/h200-2026-11-29-s2/call4/knob.tgz
    python3 scripts/trials_table.py --baseline baselines/nvidia-h200.json TGZ...

--baseline FILE re-judges every check's stored samples against FILE (gemmgate.gate
compare_run) instead of reading the verdicts the check printed: the same measurements
against a baseline calibrated elsewhere. Re-judged verdicts skip the check's re-measure
(a case the check re-measured is judged on its second measurement, the one it stored).
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


def _result(c: dict):
    """A stored check case as a gemmgate CaseResult (samples, accuracy, telemetry)."""
    from gemmgate.run import CaseResult, ProviderResult
    from gemmgate.shapes import Case

    layout, _, pad = c["layout"].partition("+p")
    provs = {n: ProviderResult(n, p["accuracy"], None, p.get("message", ""),
                               tuple(p["samples_ms"]), p.get("tflops"))
             for n, p in c["providers"].items()}
    return CaseResult(c["mode"], Case(c["m"], c["n"], c["k"], layout, int(pad or 0)), provs,
                      None, c.get("telemetry", {}))


def _rejudge(data: dict, baseline: dict) -> list[dict]:
    from gemmgate.compare import DEFAULT_FLOOR
    from gemmgate.gate import compare_run

    gate = compare_run([_result(c) for c in data["cases"]], baseline, DEFAULT_FLOOR)
    return [v.to_json() for v in gate.verdicts]


def main(paths: list[str], baseline: dict | None = None) -> None:
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
            verdicts = _rejudge(data, baseline) if baseline else gate["verdicts"]
            for v in verdicts:
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
    args = sys.argv[1:]
    base = None
    if args[:1] == ["--baseline"] and len(args) > 1:
        from gemmgate import baselines

        base, args = baselines.load(args[1]), args[2:]
    if not args:
        sys.exit(__doc__)
    main(args, base)
