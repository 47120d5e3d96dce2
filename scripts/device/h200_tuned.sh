#!/usr/bin/env bash
# Session 2, device calls 1-2 (issue 3): tiles pinned by gemmgate/tuning.py and the blocking
# spin in timing. Recalibrate the pr baseline (5 fresh processes, run 1 retunes), then
# fresh-process `gemmgate check` trials (0% and 3% alternating), then the in-process
# power loop. Caches live in the tree (.cache/, ignored) so a warm machine keeps them.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR=$PWD/.cache/triton GEMMGATE_TUNING_DIR=$PWD/.cache/tuning
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/trials"
B="$OUT/nvidia-h200.json"
LEVELS=${LEVELS:-"0 0.03 0 0.03 0 0.03"}
nvidia-smi --query-gpu=name,driver_version,temperature.gpu,power.draw,clocks.sm --format=csv
if [ "${PYTEST:-1}" = 1 ]; then
s=$(date +%s)
timeout "${PYTEST_S:-150}" python3 -m pytest -q -p no:cacheprovider ${PYTEST_ARGS:-tests/kernels/test_matmul.py -k "tuning or autotuned"} \
  > "$OUT/pytest_tuning.txt" 2>&1
rc=$?; echo "pytest rc=$rc wall_s=$(( $(date +%s) - s ))"; tail -3 "$OUT/pytest_tuning.txt"
fi
s=$(date +%s)
timeout 330 python3 -m gemmgate baseline calibrate --chip nvidia-h200 --shapes pr \
  --modes fp32,tf32,bf16,fp16,fp8 --runs 5 --budget 0.5 --retune --output "$B" \
  > "$OUT/calibrate.txt" 2>&1
echo "calibrate rc=$? wall_s=$(( $(date +%s) - s ))"
i=0
for lv in $LEVELS; do
  i=$((i + 1)); s=$(date +%s)
  timeout 120 python3 -m gemmgate check --chip nvidia-h200 --baseline "$B" --budget 0.5 \
    --inject-slowdown "$lv" --json "$OUT/trials/check_${i}_${lv}.json" \
    > "$OUT/trials/check_${i}_${lv}.txt" 2>&1
  echo "trial $i slowdown $lv rc=$? wall_s=$(( $(date +%s) - s )) $(grep -c '::error title=gemmgate regression' "$OUT/trials/check_${i}_${lv}.txt") flagged"
done
if [ "${POWER_S:-0}" -gt 0 ]; then
  timeout $((POWER_S + 60)) python3 scripts/device/power.py --baseline "$B" --modes "${POWER_MODES:-bf16,fp16}" \
    --levels 0,0.03 --deadline-s "$POWER_S" --out "$OUT/power.json" > "$OUT/power.txt" 2>&1
  echo "power rc=$?"; tail -4 "$OUT/power.txt"
fi
cd "$OUT" && gzip -f trials/*.json && tar czf tuned.tgz calibrate.txt $( [ -f pytest_tuning.txt ] && echo pytest_tuning.txt ) trials \
  $( [ -f power.txt ] && echo power.txt power.json ) && rm -rf trials calibrate.txt
