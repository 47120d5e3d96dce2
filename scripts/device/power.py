"""Power of the regression gate: inject known slowdowns, count cases flagged `regressed`.

Same pipeline as `gemmgate check` (run, compare with the baseline, re-measure suspects),
in one process, levels interleaved per repetition so drift hits every level alike,
until a deadline. Level 0 is A/A: its flagged fraction is the false-alarm rate.
"""

import argparse
import json
import time

from gemmgate import baselines
from gemmgate.compare import DEFAULT_FLOOR
from gemmgate.gate import compare_run, remeasure
from gemmgate.run import run_cases
from gemmgate.session import make_session

ap = argparse.ArgumentParser()
ap.add_argument("--baseline", required=True)
ap.add_argument("--shapes", default="pr")
ap.add_argument("--modes", default="bf16,fp16")
ap.add_argument("--levels", default="0,0.02,0.03,0.05,0.10")
ap.add_argument("--budget", type=float, default=0.5)
ap.add_argument("--deadline-s", type=float, default=120)
ap.add_argument("--out", required=True)
ap.add_argument("--ab-ref", help="time the kernel at this git ref beside the current one")
args = ap.parse_args()

session = make_session(None, args.shapes, args.modes, None, args.budget,
                       pins_from=args.baseline)  # the baseline's tiles, as `check` does
base = baselines.load(args.baseline, session.chip.id)
levels = [float(x) for x in args.levels.split(",")]
rows = {lv: {"trials": 0, "regressed": 0, "first_pass": 0, "inconclusive": 0, "runs": 0}
        for lv in levels}
t0 = time.perf_counter()
rep = 0
while True:
    for lv in levels:
        if time.perf_counter() - t0 > args.deadline_s:
            break
        results = run_cases(session.chip, session.modes, session.cases, session.policy,
                            session.device, slowdown=lv, tuning_setup=session.tuning,
                            reference=args.ab_ref)
        gate = compare_run(results, base, DEFAULT_FLOOR)
        first = gate.count("regressed")
        _, gate = remeasure(session, results, gate, base, DEFAULT_FLOOR, lv)
        r = rows[lv]
        r["trials"] += len(gate.verdicts)
        r["regressed"] += gate.count("regressed")
        r["inconclusive"] += gate.count("inconclusive")
        r["first_pass"] += first
        r["runs"] += 1
        print(f"rep {rep} slowdown {lv:.0%}: {gate.count('regressed')}/{len(gate.verdicts)} "
              f"regressed (first pass {first}), t={time.perf_counter() - t0:.0f}s", flush=True)
    else:
        rep += 1
        continue
    break

print("\n| injected slowdown | checks | cases judged | flagged regressed | fraction | "
      "inconclusive |\n|---|---|---|---|---|---|")
for lv, r in rows.items():
    frac = r["regressed"] / r["trials"] if r["trials"] else float("nan")
    print(f"| {lv:.0%} | {r['runs']} | {r['trials']} | {r['regressed']} | {frac:.1%} | "
          f"{r['inconclusive']} |")
with open(args.out, "w") as f:
    json.dump({"modes": args.modes, "shapes": args.shapes, "rows": rows}, f, indent=1)
