#!/usr/bin/env bash
# Fresh-process `gemmgate check --ab-ref` trials against the baseline (issue 3; first run
# in session 3). CALIBRATE=1 recalibrates the baseline first, A/B noise included. The
# reference is this tree's own HEAD, so A/A compares two copies of the same kernel. The
# device copy's git metadata lags the working tree (sessions 2 and 3), so carry a bundle
# (`git bundle create .whl/repo.bundle --all`) and put `.whl` in `carry`; HEAD is then
# moved to the bundle's main.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR=$PWD/.cache/triton GEMMGATE_TUNING_DIR=$PWD/.cache/tuning
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/trials"
if [ -f .whl/repo.bundle ]; then
  # HEAD := the bundle's main (tree untouched), so provenance records the commit measured
  git fetch -q .whl/repo.bundle "+refs/heads/main:refs/remotes/bundle/main" && \
    git reset -q --soft bundle/main && REF=${AB_REF:-bundle/main} || REF=${AB_REF:-HEAD}
else
  REF=${AB_REF:-HEAD}
fi
echo "A/B reference: $REF = $(git rev-parse "$REF" 2>&1)"
if [ -n "${CALIBRATE:-}" ]; then  # recalibrate first, A/B noise included (session 3)
  s=$(date +%s)
  timeout "${CAL_TIMEOUT:-450}" python3 -m gemmgate baseline calibrate --chip nvidia-h200 \
    --shapes pr --runs "${RUNS:-5}" --budget 0.5 --ab-ref "$REF" --keep-runs "$OUT/trials/cal" \
    > "$OUT/calibrate.txt" 2>&1
  echo "calibrate rc=$? wall_s=$(( $(date +%s) - s ))"
  cp baselines/nvidia-h200.json "$OUT/baseline.json"
fi
i=0
for lv in ${LEVELS:-0 0.03 0 0.03 0 0.03}; do
  i=$((i + 1)); s=$(date +%s)
  if [ -n "${DEADLINE:-}" ] && [ $((s + 90)) -gt "$DEADLINE" ]; then
    echo "stopping before trial $i: DEADLINE"; break
  fi
  timeout 200 python3 -m gemmgate check --chip nvidia-h200 --budget 0.5 --ab-ref "$REF" \
    ${BLOCK:+--block "$BLOCK"} \
    --inject-slowdown "$lv" --json "$OUT/trials/check_${i}_${lv}.json" \
    > "$OUT/trials/check_${i}_${lv}.txt" 2>&1
  echo "trial $i slowdown $lv rc=$? wall_s=$(( $(date +%s) - s )) $(grep -c '::error title=gemmgate regression' "$OUT/trials/check_${i}_${lv}.txt") flagged"
done
cd "$OUT" && gzip -f trials/*.json && tar czf ab.tgz trials && rm -rf trials
