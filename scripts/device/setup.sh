# Source at the start of a device call: `. scripts/device/setup.sh`. Makes the device's
# copy of the tree measure what this checkout holds, then every experiment is a plain
# gemmgate command (`gemmgate trials ...`, `gemmgate check ...`): no per-experiment script.
# - The copy's git metadata can lag the tree: a carried bundle (`git bundle create
#   .whl/repo.bundle --all`, carry [".whl"]) moves HEAD to the bundle's main (tree
#   untouched), so provenance and `--ab-ref HEAD` name the commit measured.
# - Wheels in .whl/ (asv, import-linter...) install into /tmp/site.
# - Triton and tuning caches stay inside the tree's .cache (one lease = one cache).
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out}
export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*'
mkdir -p "$OUT"
if [ -f .whl/repo.bundle ]; then
  git fetch -q .whl/repo.bundle "+refs/heads/main:refs/remotes/bundle/main" \
    && git reset -q --mixed bundle/main
fi
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site \
    || echo "setup.sh: the carried wheels did not install (.whl/*.whl)" >&2
fi
# Other Triton releases (scripts/device/pack_triton.py): /tmp/triton-VERSION each, for an
# experiment's PYTHONPATH=/tmp/triton-VERSION:$PYTHONPATH
for t in .triton/triton-*.tar.xz; do
  [ -f "$t" ] || continue
  v=${t#.triton/triton-}; v=${v%.tar.xz}
  python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
    "$t" "/tmp/triton-$v" && echo "setup.sh: triton $v in /tmp/triton-$v" \
    || echo "setup.sh: $t did not unpack" >&2
done
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export TRITON_CACHE_DIR=$PWD/.cache/triton GEMMGATE_TUNING_DIR=$PWD/.cache/tuning
echo "HEAD $(git rev-parse --short HEAD 2>/dev/null); $(git status --porcelain 2>/dev/null | wc -l) changed files"
nvidia-smi --query-gpu=index,name,uuid,serial,power.limit,clocks.max.sm --format=csv,noheader
