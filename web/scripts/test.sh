#!/usr/bin/env bash
# Tests the dashboard (run from anywhere; about 30 s warm, a minute or two
# the first time, when npm packages and chromium are installed):
#   1. web/src/gen and web/dist are what the sources build, byte for byte
#      (scripts/build.sh --check; installs node_modules when needed)
#   2. unit tests (Vitest): heatmap and flame graph maths, formats, routes,
#      and `go vet` + `go test` of the package that embeds the build
#   3. end to end in real Chromium (playwright-core, Debian's chromium,
#      installed with apt-get when missing) against a real `fleetscope
#      server`: a throw-away Postgres database, blobs in a temporary
#      directory, a tenant and two keys (ingest,read and ingest,read,admin),
#      planted profiles uploaded with the CLI (among them a fleet: three
#      hosts of one app on the epoch clock, windows overlapping).
# Everything it starts is stopped and everything it creates is removed,
# also on failure. Screenshots of each step go to web/test-results/e2e
# (E2E_ARTIFACTS to change).
#
# Environment: SHARED (default ../shared beside the repository), PG_URL (a
# Postgres server URL whose user may create databases; default
# postgres://postgres@127.0.0.1:5432/postgres), SKIP_E2E=1 for steps 1-2 only.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
cd "$ROOT"
SAY_PREFIX=web/test
source web/scripts/lib.sh
ARTIFACTS=${E2E_ARTIFACTS:-$ROOT/web/test-results/e2e}
t0=$(date +%s)

say "1/3 dist reproducibility"
bash web/scripts/build.sh --check

say "2/3 unit tests (vitest; go test ./web/)"
(cd web && npx --no-install vitest run)
go vet ./web/
go test -count=1 ./web/

if [[ ${SKIP_E2E:-} == 1 ]]; then
  if [[ ${FLEETSCOPE_TEST_REQUIRE:-} == 1 ]]; then
    say "SKIP_E2E=1 with FLEETSCOPE_TEST_REQUIRE=1: every test must run (CI), the browser tests too"
    exit 1
  fi
  say "SKIP_E2E=1: no browser tests"
  exit 0
fi

say "3/3 browser tests"
need_browser_tools
start_server
python3 "$SHARED/tools/planted.py" "$TMP/boot" --seed 11 >/dev/null
python3 "$SHARED/tools/planted.py" "$TMP/epoch" --seed 12 --epoch >/dev/null
python3 "$SHARED/tools/planted.py" "$TMP/other" --seed 13 --seconds 10 >/dev/null
python3 "$SHARED/tools/planted.py" "$TMP/drop" --seed 14 --seconds 8 --cpus 4 >/dev/null
python3 "$SHARED/tools/planted.py" "$TMP/long" --seed 15 --seconds 1500 --hz 9 --cpus 2 >/dev/null
P_BOOT=$(upload --app checkout --host web-1 --label env=prod "$TMP/boot/planted.perf")
P_EPOCH=$(upload --app checkout --host web-2 --label env=staging "$TMP/epoch/planted.perf")
upload --app billing --host db-1 "$TMP/other/planted.perf" >/dev/null
P_TWO=$(upload --app twoevents --host vm "$SHARED/corpus/perf/recorded-perf-realtime-2events.txt")
P_UNTIMED=$(upload --app untimed "$SHARED/corpus/perf/perf-js-stacks-01.txt")
P_PPROF=$(upload --app gosort "$SHARED/corpus/pprof/go-sha-sort.cpu.pprof")
P_LONG=$(upload --app batch --host worker-7 "$TMP/long/planted.perf")
# A uprobe recording (request entry/return): the spans panel. The CLI's
# count from the file is the reference for the server's answer.
P_SPANS=$(upload --app reqsim "$SHARED/corpus/perf/recorded-perf-uprobe-reqsim.txt")
SPANS_SLOW=$("$FS" flamegraph --in-spans slower:p95 "$SHARED/corpus/perf/recorded-perf-uprobe-reqsim.txt" | awk '{ n += $NF } END { print n + 0 }')
# A fleet: app "fleet", hosts a, b, c recording from the same epoch second
# for 30, 20 and 12 s on 8, 4 and 2 CPUs; c is the canary.
FLEET=
for h in a:21:30:8:prod b:22:20:4:prod c:23:12:2:canary; do
  IFS=: read -r host seed secs cpus envl <<<"$h"
  python3 "$SHARED/tools/planted.py" "$TMP/fleet-$host" --seed "$seed" --seconds "$secs" --cpus "$cpus" --epoch >/dev/null
  upload --app fleet --host "fleet-$host" --label "env=$envl" "$TMP/fleet-$host/planted.perf" >/dev/null
  FLEET="$FLEET fleet-$host=$TMP/fleet-$host/planted.perf"
done

rm -rf "$ARTIFACTS"
mkdir -p "$ARTIFACTS"
say "server $URL, profiles $P_BOOT (boot clock), $P_EPOCH (epoch clock); screenshots in $ARTIFACTS"
(
  cd web
  E2E_URL=$URL E2E_KEY=$KEY E2E_ADMIN_KEY=$ADMIN_KEY E2E_PROFILE=$P_BOOT E2E_EPOCH_PROFILE=$P_EPOCH E2E_TWO_EVENTS=$P_TWO E2E_UNTIMED=$P_UNTIMED E2E_PPROF=$P_PPROF E2E_LONG=$P_LONG E2E_SPANS=$P_SPANS E2E_SPANS_SLOW=$SPANS_SLOW \
    E2E_PERF=$TMP/boot/planted.perf E2E_TRUTH=$TMP/boot/truth.json E2E_DROP_FILE=$TMP/drop/planted.perf E2E_LONG_PERF=$TMP/long/planted.perf \
    E2E_FLEET="${FLEET# }" \
    E2E_ARTIFACTS=$ARTIFACTS node --test --test-concurrency=1 --test-reporter=spec e2e/e2e.test.mjs
)
say "passed in $(($(date +%s) - t0)) s; screenshots in ${ARTIFACTS#"$ROOT"/}"
