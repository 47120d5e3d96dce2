#!/usr/bin/env bash
# One device call for the run path (issue 2): environment, ceilings, GPU tests, the `pr`
# set in all five modes (graph timing), a bf16 eager run. Everything lands in $OUT.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ nvidia-smi; python3 -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.version.cuda)'; } 2>&1 | tee "$OUT/env.txt"
timeout 120 python3 scripts/device/ceilings.py 2>&1 | tee "$OUT/ceilings.txt"
timeout 200 python3 -m pytest tests -m gpu -q -x -p no:cacheprovider 2>&1 | tee "$OUT/pytest_gpu.txt" | tail -15
timeout 330 python3 -m gemmgate run --shapes pr --modes fp32,tf32,bf16,fp16,fp8 \
  --json "$OUT/pr_graph.json" 2>&1 | tee "$OUT/pr_graph.txt"
echo "rc=$?"
timeout 100 python3 -m gemmgate run --shapes pr --modes bf16 --timing eager \
  --json "$OUT/pr_eager_bf16.json" 2>&1 | tee "$OUT/pr_eager_bf16.txt"
echo "rc=$?"
