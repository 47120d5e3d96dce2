#!/usr/bin/env bash
# Gate power trials against the committed baseline: each trial a fresh `gemmgate check`
# process with a known injected slowdown (0 = A/A). Args: output dir, levels...
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
dir=$1; shift; mkdir -p "$dir"
i=0
for lv in "$@"; do
  i=$((i + 1)); s=$(date +%s)
  timeout 60 python3 -m gemmgate check --chip nvidia-h200 --baseline baselines/nvidia-h200.json \
    --budget 0.5 --inject-slowdown "$lv" --json "$dir/check_${i}_${lv}.json" \
    > "$dir/check_${i}_${lv}.txt" 2>&1
  echo "trial $i slowdown $lv rc=$? wall_s=$(( $(date +%s) - s )) $(grep -c '::error title=gemmgate regression' "$dir/check_${i}_${lv}.txt") flagged"
done
