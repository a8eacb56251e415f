#!/usr/bin/env bash
# Dashboard performance figures, printed (not asserted), measured in real
# Chromium against a real server on this machine (a few minutes, most of it
# generating and uploading the profiles):
#   - navigation to heatmap drawn, for a 10-minute planted profile
#   - flame graph of the whole benchmark profile (../shared/bench/
#     perf-mixed-60s.txt.gz): server + transfer + decode, layout, drawing
#   - a synthetic 100k-node flame graph: layout and drawing
#   - live: a live batch's sample timestamp to the fleet heatmap drawn
# Target: <= 100 ms each. RUNS (default 25) page loads per figure: median and quartiles.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
cd "$ROOT"
SAY_PREFIX=web/bench
source web/scripts/lib.sh

bash web/scripts/build.sh --check >/dev/null 2>&1 || say "note: web/dist is not a fresh build of the sources (measuring it anyway)"
need_browser_tools
start_server
bench_file=$SHARED/bench/perf-mixed-60s.txt.gz
[[ -f $bench_file ]] || { say "no $bench_file (set SHARED)"; exit 1; }
say "generating and uploading a 10-minute planted profile"
python3 "$SHARED/tools/planted.py" "$TMP/long" --seed 21 --seconds 600 --cpus 4 >/dev/null
P_LONG=$(upload --app bench-long "$TMP/long/planted.perf")
rm -rf "$TMP/long"
say "uploading the benchmark profile"
P_BENCH=$(upload --app bench-mixed "$bench_file")
(cd web && BENCH_URL=$URL BENCH_KEY=$KEY BENCH_LONG=$P_LONG BENCH_MIXED=$P_BENCH RUNS=${RUNS:-25} node e2e/bench.mjs)
