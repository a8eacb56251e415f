#!/usr/bin/env bash
# Dashboard performance figures, printed (not asserted), measured in real
# Chromium against a real server on this machine (a few minutes, most of it
# generating and uploading the profiles):
#   - first-paint budgets, warm, median of 9 (FIRST_PAINT_RUNS), timed by a
#     MutationObserver on the canvases: navigation → heatmap drawn (≤ 100 ms)
#     and → flame graph drawn (≤ 120 ms) for the 10-minute profile; a range
#     selected → its flame graph drawn (≤ 60 ms); a fleet of 4 hosts,
#     navigation → heatmap (≤ 150 ms) and → flame graph drawn (≤ 200 ms);
#     each printed with its budget and whether it is met
#     (FIRST_PAINT_ONLY=1: only these)
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
say "generating and uploading a fleet of 4 hosts (60 s each, the same wall-clock seconds)"
for n in 1 2 3 4; do
  python3 "$SHARED/tools/planted.py" "$TMP/fleet-$n" --seed $((30 + n)) --seconds 60 --cpus 4 --epoch >/dev/null
  upload --app bench-fleet --host "fleet-$n" "$TMP/fleet-$n/planted.perf" >/dev/null
  rm -rf "$TMP/fleet-$n"
done
P_BENCH=
if [[ ${FIRST_PAINT_ONLY:-} != 1 ]]; then
  say "uploading the benchmark profile"
  P_BENCH=$(upload --app bench-mixed "$bench_file")
fi
(cd web && BENCH_URL=$URL BENCH_KEY=$KEY BENCH_LONG=$P_LONG BENCH_MIXED=$P_BENCH BENCH_FLEET="app=bench-fleet&from=1795000000&to=1795000060" RUNS=${RUNS:-25} node e2e/bench.mjs)
