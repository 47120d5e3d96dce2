#!/usr/bin/env bash
# Device call 3 (issue 3, second pass; kernel v3): recalibrate the pr baseline with 5
# fresh-process A/A runs, then fresh-process `gemmgate check` trials with injected
# slowdowns (0% three times: false alarms across processes), then the GPU tests.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/trials"
B="$OUT/nvidia-h200.json"
python3 - <<'PY'
import torch
from gemmgate.precision import MODES, vendor_flags
a, b = torch.randn(2048, 4096, device="cuda"), torch.randn(4096, 2048, device="cuda")
ref = a.double() @ b.double()
for m in ("fp32", "tf32", "fp32"):
    with vendor_flags(MODES[m]):
        err = ((a @ b).double() - ref).norm() / ref.norm()
    print(f"vendor {m} under vendor_flags: rel err {err:.2e}", torch.backends.cuda.matmul.fp32_precision)
PY
s=$(date +%s)
timeout 280 python3 -m gemmgate baseline calibrate --chip nvidia-h200 --shapes pr \
  --modes fp32,tf32,bf16,fp16,fp8 --runs 5 --budget 0.5 --output "$B" > "$OUT/calibrate.txt" 2>&1
echo "calibrate rc=$? wall_s=$(( $(date +%s) - s ))"; grep -A9 "old beside" "$OUT/calibrate.txt"
i=0
for lv in 0 0.03 0 0.02 0.05 0 0.03 0.10; do
  i=$((i + 1)); s=$(date +%s)
  timeout 60 python3 -m gemmgate check --chip nvidia-h200 --baseline "$B" --budget 0.5 \
    --inject-slowdown $lv --json "$OUT/trials/check_${i}_${lv}.json" > "$OUT/trials/check_${i}_${lv}.txt" 2>&1
  echo "trial $i slowdown $lv rc=$? wall_s=$(( $(date +%s) - s )) $(grep -o 'regressed, [0-9]* failed' "$OUT/trials/check_${i}_${lv}.txt" | head -1) $(grep -c '::error title=gemmgate regression' "$OUT/trials/check_${i}_${lv}.txt") flagged"
done
timeout 100 python3 -m pytest tests -m gpu -q -x -p no:cacheprovider > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest rc=$?"; tail -2 "$OUT/pytest_gpu.txt"
cd "$OUT" && tar czf gate2.tgz calibrate.txt pytest_gpu.txt trials && rm -rf trials calibrate.txt pytest_gpu.txt
