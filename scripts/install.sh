#!/usr/bin/env bash
# pip install -e ".[EXTRA]" (scripts/install.sh test; no argument: no extra), keeping a
# triton that torch brought under another distribution name (ROCm's pytorch-triton-rocm,
# a nightly torch's pytorch-triton): pip, seeing no distribution named triton, would put
# PyPI's CUDA build over its module. There gemmgate goes in without its dependencies,
# then all of them but torch and triton (scripts/deps_except.py). bootstrap.sh and the
# GPU workflows install through this.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
extra=${1:-}
spec=".${extra:+[$extra]}"
# An extra pyproject.toml does not declare (`install.sh tests`) is refused before pip runs:
# pip only warned, installed none of the tools and exited 0 (a review)
if [ -n "$extra" ] && ! "$PY" - "$extra" <<'PY'
import sys
try:
    import tomllib
except ImportError:   # Python 3.10: pip's vendored copy
    from pip._vendor import tomli as tomllib
with open("pyproject.toml", "rb") as f:
    extras = tomllib.load(f)["project"].get("optional-dependencies", {})
if sys.argv[1] not in extras:
    print(f"install: no extra {sys.argv[1]!r} in pyproject.toml (its extras: "
          f"{', '.join(extras) or 'none'})", file=sys.stderr)
    sys.exit(2)
PY
then
  exit 2
fi
if "$PY" -c 'import triton' >/dev/null 2>&1 && ! "$PY" -m pip show -q triton >/dev/null 2>&1; then
  echo "install: keeping the installed triton (not PyPI's 'triton' distribution)" >&2
  "$PY" -m pip install -q --no-deps -e "$spec"
  reqs=$(mktemp)
  trap 'rm -f "$reqs"' EXIT
  "$PY" scripts/deps_except.py --extra "$extra" torch triton >"$reqs"
  # (pip's resolver would say "gemmgate requires triton, which is not installed" as an
  # ERROR line over a working install: the triton kept is this one)
  "$PY" -m pip install -q --no-warn-conflicts -r "$reqs"
else
  "$PY" -m pip install -q -e "$spec"
fi
