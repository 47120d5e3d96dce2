#!/usr/bin/env bash
# Publish asv results and screenshot a graph in headless Chromium, offline.
# asv's index.html pulls jQuery/flot/bootstrap from CDNs; this machine has only the npm
# registry, so the same libraries come from npm into a scratch folder and the page is
# pointed at them (integrity hashes dropped: npm ships the unminified builds).
# Usage: scripts/render_asv_site.sh RESULTS_DIR OUT.png 'URL-FRAGMENT'
#   e.g. scripts/render_asv_site.sh docs/results/h200-asv docs/img/x.png \
#        '#bench_gemm.Bf16.track_time_ratio?machine=nvidia-h200'
set -euo pipefail
results=$(cd "$1" && pwd); png=$2; frag=$3
top=$(git rev-parse --show-toplevel); work=$(mktemp -d)
python3 - "$top" "$results" "$work" <<'PY'
import json, sys
import json5
top, results, work = sys.argv[1:]
c = json5.load(open(f"{top}/asv.conf.json"))
c.update(repo=top, results_dir=results, html_dir=f"{work}/html", env_dir=f"{work}/env")
json.dump(c, open(f"{work}/asv.json", "w"))
PY
python3 -m asv publish --config "$work/asv.json" >/dev/null
(cd "$work" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund \
  jquery@3.3.1 flot@0.8.3 flot-orderbars@1.0.0 stupid-table-plugin blueimp-md5@2.19.0 bootstrap@3.1.1)
n=$work/node_modules; v=$work/html/vendor; mkdir -p "$v"
cp "$n/jquery/dist/jquery.min.js" "$n"/flot/jquery.flot{,.time,.selection,.categories}.js \
  "$n/flot-orderbars/js/jquery.flot.orderBars.js" "$n/stupid-table-plugin/stupidtable.js" \
  "$n/blueimp-md5/js/md5.min.js" "$n/bootstrap/dist/js/bootstrap.js" \
  "$n/bootstrap/dist/css/bootstrap.min.css" "$v/"
sed -i -E -e 's/ integrity="[^"]*"//g' \
  -e 's#"https://[^"]*/(jquery)-3\.3\.1\.min\.js"#"vendor/jquery.min.js"#' \
  -e 's#"https://[^"]*/(jquery\.flot[a-z.]*)\.min\.js"#"vendor/\1.js"#' \
  -e 's#"https://[^"]*/(jquery\.flot\.orderBars\.js)"#"vendor/\1"#' \
  -e 's#"https://[^"]*/stupidtable\.min\.js"#"vendor/stupidtable.js"#' \
  -e 's#"https://[^"]*/md5\.min\.js"#"vendor/md5.min.js"#' \
  -e 's#"https://[^"]*/bootstrap\.min\.js"#"vendor/bootstrap.js"#' \
  -e 's#"https://[^"]*/bootstrap\.min\.css"#"vendor/bootstrap.min.css"#' "$work/html/index.html"
port=$((20000 + RANDOM % 20000))
(cd "$work/html" && exec python3 -m http.server "$port" >/dev/null 2>&1) & srv=$!
trap 'kill $srv 2>/dev/null; rm -rf "$work"' EXIT
sleep 1
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$work/chrome" --window-size=1400,900 --virtual-time-budget=15000 \
  --screenshot="$(realpath -m "$png")" "http://127.0.0.1:$port/$frag" 2>/dev/null
echo "wrote $png"
