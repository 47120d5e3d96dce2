#!/usr/bin/env bash
# Device call 4: gate trials with the closed-loop slowdown (issue 3), then the asv
# history over 5 commits and pytest-benchmark save + compare (issue 4).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T=/tmp/trials; mkdir -p "$T"
timeout 130 bash scripts/device/h200_trials.sh "$T" 0.03 0 0.03 0.05
tar czf "$OUT/trials.tgz" -C /tmp trials
ASV_END=230 PYTEST_TIMEOUT=70 bash scripts/device/h200_asv.sh
