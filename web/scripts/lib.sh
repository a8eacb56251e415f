# Shared by web/scripts/test.sh and bench.sh (sourced, from the repository
# root): what the browser runs need, and a throw-away fleetscope server.
#
#   need_browser_tools      chromium (apt-get if missing), python3, psql, Postgres up
#   start_server            go build ./bin/fleetscope; a new database, a blob
#                           directory, a port the server picks (127.0.0.1:0,
#                           read from its log); sets URL, KEY (scopes
#                           ingest,read), ADMIN_KEY (ingest,read,admin), TMP, FS
#   upload ARGS...          fleetscope upload with that server and key; prints the id
# An EXIT trap stops the server and drops the database and directory, also
# on failure (it prints the server's log then).

SHARED=${SHARED:-$ROOT/../shared}
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}

say() { printf '%s: %s\n' "${SAY_PREFIX:-web}" "$*" >&2; }

need_browser_tools() {
  if [[ ! -x /usr/bin/chromium && -z ${CHROMIUM:-} ]]; then
    say "installing chromium (apt-get)"
    apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
  fi
  command -v python3 >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q python3 >/dev/null; }
  command -v psql >/dev/null || { say "psql is missing (apt-get install postgresql-client)"; return 1; }
  [[ -f $SHARED/tools/planted.py ]] || { say "no $SHARED/tools/planted.py (set SHARED)"; return 1; }
  # Postgres: the machine's cluster, started if it is down (as .ci/run does).
  if ! pg_isready -q -d "$PG_URL"; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
    for _ in $(seq 30); do pg_isready -q -d "$PG_URL" && break; sleep 1; done
  fi
}

SERVER_PID=
DB_NAME=
TMP=
_cleanup() {
  local rc=$?
  if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$SERVER_PID" 2>/dev/null || true
  fi
  if [[ $rc -ne 0 && -n $TMP && -f $TMP/server.log ]]; then
    say "server log (last 30 lines):"
    tail -30 "$TMP/server.log" >&2 || true
  fi
  if [[ -n $DB_NAME ]]; then
    psql -q "$PG_URL" -c "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  [[ -n $TMP ]] && rm -rf "$TMP"
  exit $rc
}

start_server() {
  trap _cleanup EXIT
  trap 'exit 130' INT TERM
  say "go build ./bin/fleetscope (embeds web/dist)"
  CGO_ENABLED=0 go build -o bin/fleetscope ./cmd/fleetscope # static, as make build and the image
  FS=$ROOT/bin/fleetscope
  TMP=$(mktemp -d)
  DB_NAME=fs_web_${SAY_PREFIX//[^a-z]/}_$$_$RANDOM
  psql -q "$PG_URL" -c "CREATE DATABASE $DB_NAME" >/dev/null
  local db_url addr i
  db_url=$(python3 -c 'import sys, urllib.parse as u; p = u.urlparse(sys.argv[1]); print(u.urlunparse(p._replace(path="/" + sys.argv[2])))' "$PG_URL" "$DB_NAME")
  # Port 0: the server binds a free port itself, holds it from then on, and
  # logs it ({"msg":"serving","addr":"127.0.0.1:PORT"}, at level info), so
  # no port is chosen here and handed over for another process to take.
  # Permalinks default to http://ADDR, the bound address.
  FLEETSCOPE_DATABASE_URL=$db_url FLEETSCOPE_ADDR=127.0.0.1:0 FLEETSCOPE_BLOB_URL=file://$TMP/blobs \
    FLEETSCOPE_LOG_LEVEL=info "$FS" server >"$TMP/server.log" 2>&1 &
  SERVER_PID=$!
  URL=
  for i in $(seq 150); do
    if [[ -z $URL ]]; then
      addr=$(python3 -c '
import json, sys
for line in open(sys.argv[1], errors="replace"):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if isinstance(e, dict) and e.get("msg") == "serving":
        print(e["addr"])
        break
' "$TMP/server.log")
      [[ -n $addr ]] && URL=http://$addr
    fi
    [[ -n $URL ]] && curl -fsS "$URL/healthz" >/dev/null 2>&1 && break
    kill -0 "$SERVER_PID" 2>/dev/null || { say "the server exited at start"; return 1; }
    [[ $i == 150 ]] && { say "the server did not become healthy"; return 1; }
    sleep 0.2
  done
  FLEETSCOPE_DATABASE_URL=$db_url "$FS" tenant create web >/dev/null
  KEY=$(FLEETSCOPE_DATABASE_URL=$db_url "$FS" key create --tenant web --scope ingest,read)
  ADMIN_KEY=$(FLEETSCOPE_DATABASE_URL=$db_url "$FS" key create --tenant web --scope ingest,read,admin)
}

upload() {
  FLEETSCOPE_URL=$URL FLEETSCOPE_API_KEY=$KEY "$FS" upload "$@" | cut -d' ' -f1
}
