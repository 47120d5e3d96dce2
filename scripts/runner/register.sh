#!/usr/bin/env bash
# Register a self-hosted GitHub Actions runner for one chip (see docs/RUNNERS.md).
#
# The official actions-runner package must already be unpacked in the runner dir.
# Labels: self-hosted,gemmgate-<chip>,<vendor>; name: <host>-<chip>.
# The runner's .env gets GEMMGATE_CHIP and a per-chip TRITON_CACHE_DIR, so compiled
# kernels and autotune results never leak between chips sharing a home directory.
set -euo pipefail

KNOWN_CHIPS=(nvidia-a100 nvidia-h100 nvidia-h200 amd-mi300x cpu)

usage() {
  cat <<EOF
usage: $0 --url URL --token TOKEN --chip ID [--runner-dir DIR] [--dry-run]

  --url URL          repository (or organization) URL, e.g. https://github.com/OWNER/REPO
  --token TOKEN      runner registration token (or set RUNNER_TOKEN)
  --chip ID          chip id, one of: $(known_chips | tr '\n' ' ')
  --runner-dir DIR   unpacked actions-runner directory (default: \$HOME/actions-runner-<chip>)
  --dry-run          print the config.sh command and the .env lines, change nothing
EOF
}

die_usage() {
  echo "register.sh: $*" >&2
  echo "run '$0 --help' for usage" >&2
  exit 2
}

# Chip ids from the harness when it can be imported, else the fixed list.
known_chips() {
  local repo_root ids
  repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  if ids="$(cd "$repo_root" && python3 -m gemmgate chips --ids 2>/dev/null)" && [[ -n "$ids" ]]; then
    printf '%s\n' "$ids" | tr -s '[:space:],' '\n'
  else
    printf '%s\n' "${KNOWN_CHIPS[@]}"
  fi
}

url="" token="${RUNNER_TOKEN:-}" chip="" runner_dir="" dry_run=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --url) [[ $# -ge 2 ]] || die_usage "--url needs a value"; url="$2"; shift 2 ;;
    --token) [[ $# -ge 2 ]] || die_usage "--token needs a value"; token="$2"; shift 2 ;;
    --chip) [[ $# -ge 2 ]] || die_usage "--chip needs a value"; chip="$2"; shift 2 ;;
    --runner-dir) [[ $# -ge 2 ]] || die_usage "--runner-dir needs a value"; runner_dir="$2"; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die_usage "unknown argument: $1" ;;
  esac
done

[[ -n "$url" ]] || die_usage "--url is required"
[[ "$url" =~ ^https?://[^[:space:]]+$ ]] || die_usage "--url must be an http(s) URL, got '$url'"
[[ -n "$token" ]] || die_usage "--token (or RUNNER_TOKEN) is required"
[[ -n "$chip" ]] || die_usage "--chip is required"
if ! known_chips | grep -qxF -- "$chip"; then
  die_usage "unknown chip '$chip'; known: $(known_chips | tr '\n' ' ')"
fi

case "$chip" in
  nvidia-*) vendor=nvidia ;;
  amd-*) vendor=amd ;;
  *) vendor=cpu ;;
esac
runner_dir="${runner_dir:-$HOME/actions-runner-$chip}"
if [[ -d "$runner_dir" ]]; then runner_dir="$(cd "$runner_dir" && pwd)"; fi
host="$(hostname -s 2>/dev/null || hostname)"
labels="self-hosted,gemmgate-$chip,$vendor"
cache_dir="$runner_dir/triton-cache-$chip"

if [[ ! -x "$runner_dir/config.sh" && $dry_run -eq 0 ]]; then
  die_usage "no actions-runner in '$runner_dir' (config.sh missing): download and unpack the runner release there first (docs/RUNNERS.md)"
fi

if [[ $dry_run -eq 1 ]]; then
  echo "would run in $runner_dir: ./config.sh --unattended --replace --url $url --token *** --name $host-$chip --labels $labels"
  echo "would set in $runner_dir/.env: GEMMGATE_CHIP=$chip TRITON_CACHE_DIR=$cache_dir"
  exit 0
fi

cd "$runner_dir"
./config.sh --unattended --replace --url "$url" --token "$token" \
  --name "$host-$chip" --labels "$labels"

# config.sh (env.sh) may already have written .env: replace only our keys.
# The runner reads KEY=VALUE lines verbatim, so values are not quoted.
mkdir -p "$cache_dir"
touch .env
grep -vE '^(GEMMGATE_CHIP|TRITON_CACHE_DIR)=' .env >.env.new || true
{
  echo "GEMMGATE_CHIP=$chip"
  echo "TRITON_CACHE_DIR=$cache_dir"
} >>.env.new
mv .env.new .env

echo "registered runner '$host-$chip' with labels $labels in $runner_dir"
echo "start it with ./run.sh, or as a service: sudo ./svc.sh install && sudo ./svc.sh start"
