#!/usr/bin/env bash
# One device call for the regression gate (issue 3): calibrate the pr baseline in all
# five modes (3 fresh-process A/A runs), time one full `gemmgate check`, then the power
# table with injected slowdowns until a deadline. Everything lands in $OUT.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
B="$OUT/nvidia-h200.json"
timeout 300 python3 -m gemmgate baseline calibrate --chip nvidia-h200 --shapes pr \
  --modes fp32,tf32,bf16,fp16,fp8 --runs 3 --budget 0.5 --output "$B" > "$OUT/calibrate.txt" 2>&1
echo "calibrate rc=$?"; tail -12 "$OUT/calibrate.txt"
s=$(date +%s)
timeout 110 python3 -m gemmgate check --chip nvidia-h200 --baseline "$B" --budget 0.5 \
  --json "$OUT/check.json" > "$OUT/check.txt" 2>&1; rc=$?
echo "check rc=$rc wall_s=$(( $(date +%s) - s ))" | tee -a "$OUT/check.txt"
grep -E "geomean|regressed|passed —|FAILED" "$OUT/check.txt" | cut -c1-160
timeout 140 python3 scripts/device/power.py --baseline "$B" --modes bf16,fp16 \
  --deadline-s 110 --out "$OUT/power.json" > "$OUT/power.txt" 2>&1; echo "power rc=$?"
cat "$OUT/power.txt" | cut -c1-160
cd "$OUT" && tar czf gate.tgz *.txt *.json && rm -f calibrate.txt check.txt power.txt check.json power.json
