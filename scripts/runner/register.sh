#!/usr/bin/env bash
# Register a self-hosted GitHub Actions runner for one chip (see docs/RUNNERS.md).
#
# The official actions-runner package must already be unpacked in the runner dir.
# Labels: self-hosted,gemmgate-<chip>,<vendor>; name: <host>-<chip>.
# The runner's .env gets GEMMGATE_CHIP, a per-chip TRITON_CACHE_DIR and a per-runner
# GEMMGATE_TUNING_DIR, so compiled kernels and autotune results never leak between chips
# sharing a home directory.
#
# The registration token never appears on a command line (argv is world-readable in
# `ps` and /proc/PID/cmdline): it is read from a file, from stdin (--token-file -) or
# from $RUNNER_TOKEN, and handed to config.sh in the environment variable
# ACTIONS_RUNNER_INPUT_TOKEN. The runner's CommandSettings reads every
# ACTIONS_RUNNER_INPUT_<ARG> as if it were `--<arg>` (src/Runner.Listener/
# CommandSettings.cs in github.com/actions/runner), registers the value with its secret
# masker and deletes it from its own environment; a process environment is readable
# only by the same user and root. config.sh's env.sh copies only a fixed list of
# variables (LANG, JAVA_HOME, ...) into .env, so the token is not persisted there.

# xtrace would print the token (assignments and the config.sh command line): keep it
# off in this script even under `bash -x register.sh`.
{ set +x; } 2>/dev/null
set -euo pipefail

KNOWN_CHIPS=(nvidia-a100 nvidia-h100 nvidia-h200 amd-mi300x cpu)

usage() {
  cat <<EOF
usage: $0 --url URL --token-file FILE --chip ID [--runner-dir DIR] [--dry-run]

  --url URL          repository (or organization) URL, e.g. https://github.com/OWNER/REPO
  --token-file FILE  file whose first line is the runner registration token; '-' reads it
                     from stdin (silently when stdin is a terminal). Or set RUNNER_TOKEN.
                     There is no --token: a token on the command line shows in 'ps'.
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

# Read the token from FILE ('-': stdin) into the global `token`: first line, surrounding
# whitespace (and a CR) stripped.
read_token_file() {
  local src="$1" line="" mode
  if [[ "$src" == "-" ]]; then
    if [[ -t 0 ]]; then
      IFS= read -rs -p "runner registration token: " line || true
      echo >&2
    else
      IFS= read -r line || true
    fi
  else
    [[ -f "$src" && -r "$src" ]] || die_usage "--token-file '$src' is not a readable file"
    if mode="$(stat -c '%a' -- "$src" 2>/dev/null)" && [[ "$mode" =~ ^[0-7]+$ ]] &&
      ((8#$mode & 8#077)); then
      echo "register.sh: warning: '$src' is accessible to other users (mode $mode); chmod 600 it" >&2
    fi
    IFS= read -r line <"$src" || true
  fi
  line="${line%$'\r'}"
  line="${line#"${line%%[![:space:]]*}"}"
  token="${line%"${line##*[![:space:]]}"}"
}

# Take the token out of the environment that every child (python3, config.sh) inherits;
# config.sh gets it back below as ACTIONS_RUNNER_INPUT_TOKEN, for that one command only.
token="${RUNNER_TOKEN:-}"
unset RUNNER_TOKEN ACTIONS_RUNNER_INPUT_TOKEN
url="" token_file="" chip="" runner_dir="" dry_run=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --url) [[ $# -ge 2 ]] || die_usage "--url needs a value"; url="$2"; shift 2 ;;
    --token | --token=*)
      # Do not echo the value: it is the secret.
      die_usage "--token is not accepted (a token on the command line shows in 'ps'); use --token-file FILE, --token-file - (stdin) or RUNNER_TOKEN" ;;
    --token-file) [[ $# -ge 2 ]] || die_usage "--token-file needs a value"; token_file="$2"; shift 2 ;;
    --chip) [[ $# -ge 2 ]] || die_usage "--chip needs a value"; chip="$2"; shift 2 ;;
    --runner-dir) [[ $# -ge 2 ]] || die_usage "--runner-dir needs a value"; runner_dir="$2"; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die_usage "unknown argument: $1" ;;
  esac
done

[[ -n "$url" ]] || die_usage "--url is required"
[[ "$url" =~ ^https?://[^[:space:]]+$ ]] || die_usage "--url must be an http(s) URL, got '$url'"
[[ -n "$chip" ]] || die_usage "--chip is required"
# Not `known_chips | grep -q`: grep -q exits at the first match, the writer then dies of
# SIGPIPE, and under pipefail the pipeline fails (seen once in ten suite runs under load).
chips="$(known_chips)"
if ! grep -qxF -- "$chip" <<<"$chips"; then
  die_usage "unknown chip '$chip'; known: $(tr '\n' ' ' <<<"$chips")"
fi
if [[ -n "$token_file" ]]; then read_token_file "$token_file"; fi
[[ -n "$token" ]] || die_usage "a registration token is required: --token-file FILE, --token-file - (stdin) or RUNNER_TOKEN"
[[ "$token" =~ ^[A-Za-z0-9._~+/=-]+$ ]] || die_usage "the registration token has unexpected characters (is the file the token alone?)"

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
tuning_dir="$runner_dir/gemmgate-tuning"

if [[ ! -x "$runner_dir/config.sh" && $dry_run -eq 0 ]]; then
  die_usage "no actions-runner in '$runner_dir' (config.sh missing): download and unpack the runner release there first (docs/RUNNERS.md)"
fi

if [[ $dry_run -eq 1 ]]; then
  echo "would run in $runner_dir: ACTIONS_RUNNER_INPUT_TOKEN=*** ./config.sh --unattended --replace --url $url --name $host-$chip --labels $labels"
  echo "would set in $runner_dir/.env: GEMMGATE_CHIP=$chip TRITON_CACHE_DIR=$cache_dir GEMMGATE_TUNING_DIR=$tuning_dir"
  exit 0
fi

cd "$runner_dir"
# The assignment prefix puts the token into config.sh's environment only (not exported
# from this shell, never in any argv).
ACTIONS_RUNNER_INPUT_TOKEN="$token" ./config.sh --unattended --replace --url "$url" \
  --name "$host-$chip" --labels "$labels"
unset token

# config.sh (env.sh) may already have written .env: replace only our keys.
# The runner reads KEY=VALUE lines verbatim, so values are not quoted.
mkdir -p "$cache_dir" "$tuning_dir"
touch .env
grep -vE '^(GEMMGATE_CHIP|TRITON_CACHE_DIR|GEMMGATE_TUNING_DIR)=' .env >.env.new || true
{
  echo "GEMMGATE_CHIP=$chip"
  echo "TRITON_CACHE_DIR=$cache_dir"
  echo "GEMMGATE_TUNING_DIR=$tuning_dir"
} >>.env.new
mv .env.new .env

echo "registered runner '$host-$chip' with labels $labels in $runner_dir"
echo "start it with ./run.sh, or as a service: sudo ./svc.sh install && sudo ./svc.sh start"
