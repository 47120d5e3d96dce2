#!/usr/bin/env bash
# One device call for the run path (issue 2): the `pr` set in all five modes (graph
# timing, one process per mode so a slow mode cannot take the others' results), GPU
# tests, ceilings, a bf16 eager run. Everything lands in $OUT.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ nvidia-smi; python3 -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.version.cuda)'; } > "$OUT/env.txt" 2>&1
for m in fp32 tf32 bf16 fp16 fp8; do
  timeout 100 python3 -m gemmgate run --shapes pr --modes $m --budget 1 \
    --json "$OUT/pr_$m.json" > "$OUT/pr_$m.txt" 2>&1; echo "$m rc=$?"
done
timeout 150 python3 -m pytest tests -m gpu -q -x -p no:cacheprovider > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest rc=$?"; tail -5 "$OUT/pytest_gpu.txt"
timeout 60 python3 scripts/device/ceilings.py > "$OUT/ceilings.txt" 2>&1
timeout 60 python3 -m gemmgate run --shapes pr --modes bf16 --timing eager --budget 1 \
  --json "$OUT/pr_eager_bf16.json" > "$OUT/pr_eager_bf16.txt" 2>&1; echo "eager rc=$?"
cd "$OUT" && tar czf results.tgz *.txt *.json && cat ceilings.txt pr_*.txt | grep -v "^$" | cut -c1-150; rm -f *.txt *.json
