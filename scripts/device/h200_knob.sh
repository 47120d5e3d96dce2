#!/usr/bin/env bash
# Session 2, device call 4 (issue 3): the committed baseline and its pinned tiles on a bare
# machine (what a fresh runner does), with the busy-SM wall-time slowdown knob: GPU knob
# test, then fresh-process `gemmgate check` trials.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR=$PWD/.cache/triton GEMMGATE_TUNING_DIR=$PWD/.cache/tuning
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/trials"
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/gemmgate/test_slowdown.py > "$OUT/pytest_knob.txt" 2>&1
echo "pytest knob rc=$?"; tail -2 "$OUT/pytest_knob.txt"
i=0
for lv in ${LEVELS:-0 0.03 0.03 0 0.03}; do
  i=$((i + 1)); s=$(date +%s)
  timeout 150 python3 -m gemmgate check --chip nvidia-h200 --budget 0.5 \
    --inject-slowdown "$lv" --json "$OUT/trials/check_${i}_${lv}.json" \
    > "$OUT/trials/check_${i}_${lv}.txt" 2>&1
  echo "trial $i slowdown $lv rc=$? wall_s=$(( $(date +%s) - s )) $(grep -c '::error title=gemmgate regression' "$OUT/trials/check_${i}_${lv}.txt") flagged"
done
cd "$OUT" && gzip -f trials/*.json && tar czf knob.tgz pytest_knob.txt trials && rm -rf trials
