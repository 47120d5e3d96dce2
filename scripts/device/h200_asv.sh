#!/usr/bin/env bash
# One device call for the history suites (issues 4, 12). First pytest-benchmark: save,
# compare twice (median:$COMPARE_FAIL), then a compare with an injected slowdown ($INJECT),
# which must fail (SKIP_PYTEST=1 skips it); rows of all four to $OUT/pytest_benchmark.csv
# (scripts/pytest_benchmark_rows.py). Then asv over the last commits that have
# gemmgate/run.py, or the commits named in $COMMITS (newest first: a deadline costs the
# oldest) -- the CURRENT benchmarks/ against each commit's OWN gemmgate/kernels (exported
# with git archive to /tmp/wt-<sha>); an old commit compiles its kernels from scratch
# (session 6: 126 s were not enough for its first mode on a bare machine).
# Needs the asv wheels in .whl/ (carry: [".whl"]). Aim: < 9 min. Everything to $OUT:
# asv.tgz (.asv/results, .asv/html, .benchmarks, logs) and summary.txt.
#
# asv drops PYTHONPATH in its benchmark processes and puts ASV_PYTHONPATH first on
# sys.path instead: that is what makes `import gemmgate` find the old commit's package.
set -u
export PYTHONUNBUFFERED=1
# The device's copy of the tree may arrive without history: then use a carried bundle.
if ! git rev-parse -q --verify HEAD >/dev/null 2>&1 && [ -f .whl/repo.bundle ]; then
  rm -rf /tmp/repo && git clone -q .whl/repo.bundle /tmp/repo && cp -r .whl /tmp/repo/ \
    && cd /tmp/repo && echo "using the carried bundle: $(git log --oneline -1)"
fi
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
CHIP=${CHIP:-nvidia-h200}          # asv machine name = gemmgate chip id
N_COMMITS=${N_COMMITS:-5}
ASV_END=${ASV_END:-540}            # s after start: no asv run may go past this
PYTEST_SAVE_TIMEOUT=${PYTEST_SAVE_TIMEOUT:-240}   # the first run compiles every kernel
PYTEST_TIMEOUT=${PYTEST_TIMEOUT:-110}
LOG=/tmp/asvlogs; rm -rf "$LOG"; mkdir -p "$LOG"
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
# The tree arrives as a copy, perhaps owned by another user: let git (and asv's git) read it.
export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*'
SITE=/tmp/site
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" .whl/*.whl || exit 1
else
  SITE=""                          # asv already installed (local dry run)
fi
export GEMMGATE_CHIP=$CHIP
{ nvidia-smi 2>&1 | head -15; git log --oneline -8
  PYTHONPATH=$PWD${SITE:+:$SITE} python3 -c 'import torch, triton, asv, pytest_benchmark as pb
print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__,
      "asv", asv.__version__, "pytest-benchmark", pb.__version__)'; } > "$LOG/env.txt" 2>&1
cat "$LOG/env.txt"
# asv's `branches: ["main"]` must name a branch of this copy (publish draws along it).
git rev-parse -q --verify refs/heads/main >/dev/null || git branch -f main HEAD
PYTHONPATH=$PWD${SITE:+:$SITE} python3 scripts/asv_machine.py --chip "$CHIP" > "$LOG/machine.txt" 2>&1
echo "asv_machine rc=$?"; cat "$LOG/machine.txt"

ASV_PYTHONPATH=$PWD${SITE:+:$SITE} PYTHONPATH=$PWD${SITE:+:$SITE} \
  python3 -m asv check --python=same > "$LOG/asv_check.txt" 2>&1
echo "asv check rc=$?"; tail -3 "$LOG/asv_check.txt"

# pytest-benchmark first: the warm pass compiles every kernel on a bare machine, so it
# and the save have their own, longer limit.
PP=$PWD${SITE:+:$SITE}
if [ -z "${SKIP_PYTEST:-}" ]; then
PT=(python3 -m pytest tests/perf -q -p no:cacheprovider --benchmark-enable)
[ -n "${PERF_GAP_MS:-}" ] && PT+=(--perf-gap-ms "$PERF_GAP_MS")   # DeviceClock gap_ms (default 10)
[ -n "${PERF_FIGURE:-}" ] && PT+=(--perf-figure "$PERF_FIGURE")   # time | ratio
COMPARE_FAIL=${COMPARE_FAIL:-5%}; INJECT=${INJECT:-0.1}
# A first pass with benchmarking off compiles every kernel, so the stored run is a warm
# one (session 7: a save run that compiled as it went idled the GPU between tests, and
# some of its figures were 5-17% off both later runs).
s=$(date +%s); PYTHONPATH=$PP timeout "$PYTEST_SAVE_TIMEOUT" python3 -m pytest tests/perf -q \
  -p no:cacheprovider > "$LOG/pytest_warm.txt" 2>&1
echo "pytest warm pass rc=$? wall_s=$(( $(date +%s) - s ))"
# (the save's own --benchmark-json is the rows' reference: .benchmarks/ outlives a call
# on a warm machine, and its 0001_* was an earlier call's save, not this one's; a review)
s=$(date +%s); PYTHONPATH=$PP timeout "$PYTEST_SAVE_TIMEOUT" "${PT[@]}" --benchmark-autosave \
  --benchmark-json "$LOG/pytest_save.json" > "$LOG/pytest_save.txt" 2>&1
echo "pytest save rc=$? wall_s=$(( $(date +%s) - s ))"
for run in compare1 compare2 inject; do
  extra=(); [ "$run" = inject ] && extra=(--inject-slowdown "$INJECT")
  s=$(date +%s); PYTHONPATH=$PP timeout "$PYTEST_TIMEOUT" "${PT[@]}" --benchmark-compare \
    --benchmark-compare-fail=median:$COMPARE_FAIL --benchmark-json "$LOG/pytest_$run.json" \
    "${extra[@]}" > "$LOG/pytest_$run.txt" 2>&1
  echo "pytest $run rc=$? wall_s=$(( $(date +%s) - s )) (t=$(el)s)"
done
saved=""; [ -s "$LOG/pytest_save.json" ] && saved=$LOG/pytest_save.json
runs=(); for run in compare1 compare2 inject; do
  [ -s "$LOG/pytest_$run.json" ] && runs+=("$run=$LOG/pytest_$run.json"); done
[ -n "$saved" ] && python3 scripts/pytest_benchmark_rows.py "$OUT/pytest_benchmark.csv" \
  "$saved" "${runs[@]}"
fi

SHAS=()
for s in ${COMMITS:-$(git rev-list --first-parent HEAD)}; do
  s=$(git rev-parse "$s")
  git cat-file -e "$s:gemmgate/run.py" 2>/dev/null && SHAS+=("$s")
  [ ${#SHAS[@]} -ge "$N_COMMITS" ] && break
done
echo "commits: ${SHAS[*]}"
for sha in "${SHAS[@]}"; do           # newest first: a deadline costs the oldest
  short=${sha:0:8}; left=$(( ASV_END - $(el) ))
  if [ "$left" -lt 60 ]; then echo "$short skipped: ${left}s left before ASV_END"; continue; fi
  wt=/tmp/wt-$short; rm -rf "$wt"; mkdir -p "$wt"
  git archive "$sha" gemmgate kernels | tar -x -C "$wt"
  s=$(date +%s)
  ASV_PYTHONPATH=$wt${SITE:+:$SITE} PYTHONPATH=$wt${SITE:+:$SITE} timeout "$left" \
    python3 -m asv run --python=same --set-commit-hash "$sha" --machine "$CHIP" \
    --launch-method spawn --show-stderr > "$LOG/asv_$short.txt" 2>&1
  rc=$?; echo "asv $short rc=$rc wall_s=$(( $(date +%s) - s )) (t=$(el)s)"
  python3 scripts/asv_results.py ".asv/results/$CHIP" >/dev/null
  [ "$rc" -ne 0 ] && tail -15 "$LOG/asv_$short.txt" | cut -c1-160
done
PYTHONPATH=${SITE:-} python3 -m asv publish > "$LOG/asv_publish.txt" 2>&1; echo "publish rc=$?"

python3 - "$CHIP" > "$LOG/summary.txt" 2>&1 <<'PY'
# Per commit: how many figures each benchmark has, and the geomean ratio of each mode.
import glob, itertools, json, math, sys
for f in sorted(glob.glob(f".asv/results/{sys.argv[1]}/*.json")):
    if f.endswith("machine.json"):
        continue
    d = json.load(open(f))
    print(f"commit {d['commit_hash'][:8]}  {f.rsplit('/', 1)[1]}")
    for name, row in sorted(d["results"].items()):
        vals, params = row[0], row[1]
        combos = list(itertools.product(*params)) if params else [()]
        ok = [(p, v) for p, v in zip(combos, vals) if isinstance(v, (int, float)) and math.isfinite(v)]
        nul = sum(v is None for v in vals)
        line = f"  {name:34} {len(ok):2}/{len(vals)} numbers, {nul} failed"
        if name.endswith("track_time_ratio") and ok:   # one class per mode: bench_gemm.Bf16...
            vs = [v for _, v in ok]
            line += f"  geomean {math.exp(sum(map(math.log, vs)) / len(vs)):.3g}"
        print(line)
PY
cat "$LOG/summary.txt"
grep -E "passed|failed|error|regress|Comparing" "$LOG"/pytest_*.txt | cut -c1-200 | tail -12
cp "$LOG/summary.txt" "$OUT/summary.txt"
tar czf "$OUT/asv.tgz" .asv/results .asv/html .benchmarks -C /tmp asvlogs 2>/dev/null
ls -la "$OUT"; echo "total t=$(el)s"
