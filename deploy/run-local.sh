#!/usr/bin/env bash
# run-local.sh: fleetscope on this machine with the embedded defaults (what
# `make run` calls, after `make build`).
#
#   deploy/run-local.sh          bring up the database, bootstrap, run the server
#   deploy/run-local.sh stop     stop the private Postgres cluster
#   deploy/run-local.sh status   say whether the private cluster runs, and where
#
# Start:
#   1. Database. FLEETSCOPE_DATABASE_URL, when set, is used as it is.
#      Otherwise a private PostgreSQL cluster lives under ./.data/pg (data in
#      ./.data/pg/data, log in ./.data/pg/postgres.log), made with the newest
#      server binaries under /usr/lib/postgresql/*/bin (installed with apt-get
#      when there are none and we are root). It listens on 127.0.0.1 only (port
#      54329, or the next free one, kept in ./.data/pg/port) and on a unix
#      socket in ./.data/pg; superuser "postgres", trust authentication, so
#      any local user can connect to it: a development database, nothing
#      more. As root, the cluster belongs to the "postgres" system user (initdb
#      and postgres refuse to run as root). An existing cluster is reused and
#      started if it is stopped. Database "fleetscope" is created if missing.
#   2. FLEETSCOPE_BLOB_URL defaults to file://./.data/blobs.
#   3. ./bin/fleetscope migrate; tenant create default --if-not-exists;
#      key create --tenant default --scope ingest,read,admin (a new key on
#      every run, also written to ./.data/api-key); a banner with the URL,
#      the key and example commands.
#   4. exec ./bin/fleetscope server. Ctrl-C stops the server; the private
#      cluster keeps running until `deploy/run-local.sh stop`.
#
# Environment: FLEETSCOPE_* as the server reads them (deploy/fleetscope.env.example);
# PG_BIN, a directory of PostgreSQL server binaries to use instead of the
# newest installed; FLEETSCOPE_PG_PORT, the first port to try for the
# private cluster (default 54329).
#
# Start from scratch: deploy/run-local.sh stop && rm -rf .data
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"

FLEETSCOPE=./bin/fleetscope
DATA_DIR=$ROOT/.data
PG_DIR=$DATA_DIR/pg
PG_DATA=$PG_DIR/data
PG_LOG=$PG_DIR/postgres.log
PG_PORT_FILE=$PG_DIR/port
PG_FIRST_PORT=${FLEETSCOPE_PG_PORT:-54329}
PG_SUPERUSER=postgres
DB_NAME=fleetscope
TENANT=default
SCOPES=ingest,read,admin

say() { printf 'run-local: %s\n' "$*" >&2; }
die() {
  say "$*"
  exit 1
}

usage() {
  echo "usage: deploy/run-local.sh [start|stop|status]" >&2
  exit 2
}

# ---- PostgreSQL binaries -------------------------------------------------

# newest_pg_bin prints the newest /usr/lib/postgresql/*/bin holding a server.
newest_pg_bin() {
  local d best=
  while IFS= read -r d; do
    [[ -x $d/initdb && -x $d/pg_ctl && -x $d/postgres ]] && best=$d
  done < <(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V)
  [[ -n $best ]] && printf '%s\n' "$best"
}

# pg_bin sets PGBIN: PG_BIN if set; the binaries of the cluster's own major
# version if the cluster exists; else the newest installed (installing
# PostgreSQL with apt-get if none is and we are root).
pg_bin() {
  if [[ -n ${PG_BIN:-} ]]; then
    [[ -x $PG_BIN/pg_ctl ]] || die "PG_BIN=$PG_BIN has no pg_ctl"
    PGBIN=$PG_BIN
    return
  fi
  if [[ -f $PG_DATA/PG_VERSION ]]; then
    local v
    v=$(<"$PG_DATA/PG_VERSION")
    PGBIN=/usr/lib/postgresql/$v/bin
    [[ -x $PGBIN/pg_ctl ]] || die "the cluster in $PG_DATA was made by PostgreSQL $v, which is not installed: install postgresql-$v, or remove $PG_DIR (its data is lost)"
    return
  fi
  if PGBIN=$(newest_pg_bin); then
    return
  fi
  ((EUID == 0)) || die "no PostgreSQL server under /usr/lib/postgresql: install it (sudo apt-get install postgresql) or set FLEETSCOPE_DATABASE_URL"
  command -v apt-get >/dev/null || die "no PostgreSQL server under /usr/lib/postgresql and no apt-get: install PostgreSQL or set FLEETSCOPE_DATABASE_URL"
  say "installing PostgreSQL (apt-get install postgresql)"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q postgresql >&2; then
    apt-get update -q >&2 || die "apt-get update failed"
    apt-get install -y -q postgresql >&2 || die "apt-get install postgresql failed"
  fi
  PGBIN=$(newest_pg_bin) || die "apt-get installed postgresql, but no server appeared under /usr/lib/postgresql/*/bin"
}

# ---- who runs the cluster ------------------------------------------------

# pg_user sets PG_OS_USER, the system user that owns and runs the cluster.
pg_user() {
  local me owner=
  me=$(id -un)
  [[ -d $PG_DIR ]] && owner=$(stat -c %U "$PG_DIR")
  if ((EUID == 0)); then
    if [[ -n $owner && $owner != root && $owner != UNKNOWN ]]; then
      PG_OS_USER=$owner
    else
      id -u postgres >/dev/null 2>&1 || die "running as root, and there is no 'postgres' system user to own the cluster (initdb refuses root): install postgresql, create the user, or set FLEETSCOPE_DATABASE_URL"
      PG_OS_USER=postgres
    fi
  else
    [[ -z $owner || $owner == "$me" ]] || die "$PG_DIR belongs to $owner: run as root or $owner, or remove it"
    PG_OS_USER=$me
  fi
}

# as_pg runs a command as PG_OS_USER, from inside PG_DIR, without the lock
# descriptor (the postmaster must not inherit it).
as_pg() {
  if [[ $PG_OS_USER == "$(id -un)" ]]; then
    (cd "$PG_DIR" && "$@") 9>&-
  else
    (cd "$PG_DIR" && runuser -u "$PG_OS_USER" -- "$@") 9>&-
  fi
}

# ---- cluster state -------------------------------------------------------

# pg_running succeeds when the cluster's postmaster is alive: the process
# named in postmaster.pid works in PG_DATA (postgres chdirs there). A
# postmaster.pid left by a crash, a reboot or a container restart (its PID
# dead, a zombie, or reused by another program) is removed with the socket
# lock files, once no process works in PG_DATA any more.
pg_running() {
  local pidfile=$PG_DATA/postmaster.pid pid others
  [[ -f $pidfile ]] || return 1
  pid=$(head -n1 "$pidfile")
  if [[ $pid =~ ^[0-9]+$ && $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$PG_DATA" ]]; then
    return 0
  fi
  others=$(pg_cluster_pids)
  [[ -z $others ]] || die "no postmaster, but processes $(echo "$others" | tr '\n' ' ')still work in $PG_DATA: stop them and run again"
  say "removing the stale $pidfile (PID $pid is not its postmaster)"
  rm -f "$pidfile" "$PG_DIR"/.s.PGSQL.*.lock
  return 1
}

# pg_cluster_pids prints the PIDs of the processes whose working directory
# is PG_DATA: the postmaster and its children, or orphans of a crash.
pg_cluster_pids() {
  local d
  for d in /proc/[0-9]*; do
    if [[ $(readlink "$d/cwd" 2>/dev/null) == "$PG_DATA" ]]; then
      printf '%s\n' "${d#/proc/}"
    fi
  done
}

# running_port prints the port of the running postmaster.
running_port() {
  sed -n 4p "$PG_DATA/postmaster.pid"
}

# port_busy succeeds when something accepts connections on 127.0.0.1:$1.
port_busy() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_port prints the port to start on: the saved one if it is free, else
# the first free one from PG_FIRST_PORT on.
free_port() {
  local p saved=
  [[ -f $PG_PORT_FILE ]] && saved=$(<"$PG_PORT_FILE")
  for p in $saved $(seq "$PG_FIRST_PORT" $((PG_FIRST_PORT + 100))); do
    if [[ $p =~ ^[0-9]+$ ]] && ! port_busy "$p"; then
      printf '%s\n' "$p"
      return 0
    fi
  done
  return 1
}

# conf_quote quotes a postgresql.conf string value.
conf_quote() {
  printf "'%s'" "${1//\'/\'\'}"
}

# write_conf writes the settings run-local owns, included from postgresql.conf.
write_conf() {
  local port=$1 sockdir=$PG_DIR
  # A unix socket path must fit in 107 bytes; past that, TCP only.
  if ((${#sockdir} + 16 > 107)); then
    say "path too long for a unix socket; the cluster listens on TCP only"
    sockdir=
  fi
  cat >"$PG_DATA/fleetscope.conf" <<EOF
# Written by deploy/run-local.sh at every start: edits here are lost.
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = $(conf_quote "$sockdir")
unix_socket_permissions = 0700
EOF
  chown "$PG_OS_USER": "$PG_DATA/fleetscope.conf" 2>/dev/null || true
  printf '%s\n' "$port" >"$PG_PORT_FILE"
}

pg_init() {
  if [[ -d $PG_DATA ]] && [[ -n $(ls -A "$PG_DATA") ]]; then
    die "$PG_DATA is not empty but holds no cluster (an interrupted initdb?): remove $PG_DIR and run again"
  fi
  say "creating a private PostgreSQL cluster in $PG_DATA ($PGBIN)"
  if ! as_pg "$PGBIN/initdb" -D "$PG_DATA" -U "$PG_SUPERUSER" -A trust -E UTF8 --locale=C >"$PG_DIR/initdb.log" 2>&1; then
    tail -n 20 "$PG_DIR/initdb.log" >&2
    die "initdb failed (log: $PG_DIR/initdb.log)"
  fi
  printf '\n# deploy/run-local.sh: listen address, port and socket\ninclude_if_exists = %s\n' "'fleetscope.conf'" >>"$PG_DATA/postgresql.conf"
}

pg_start() {
  local port
  port=$(free_port) || die "no free port in $PG_FIRST_PORT-$((PG_FIRST_PORT + 100)) on 127.0.0.1 for the private cluster"
  write_conf "$port"
  say "starting the private PostgreSQL on 127.0.0.1:$port (log: $PG_LOG)"
  if ! as_pg "$PGBIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t 60 -s start >/dev/null; then
    tail -n 20 "$PG_LOG" >&2 || true
    die "the private PostgreSQL did not start (log: $PG_LOG)"
  fi
}

# pg_up brings the private cluster up and exports FLEETSCOPE_DATABASE_URL.
pg_up() {
  mkdir -p "$PG_DIR"
  pg_user
  pg_bin
  if ((EUID == 0)); then
    chown "$PG_OS_USER": "$PG_DIR"
  fi
  chmod 700 "$PG_DIR"
  as_pg test -w "$PG_DIR" -a -x "$PG_DIR" ||
    die "user $PG_OS_USER cannot write $PG_DIR: each parent directory must be searchable by it (chmod o+x), or set FLEETSCOPE_DATABASE_URL"

  if [[ ! -f $PG_DATA/PG_VERSION ]]; then
    pg_init
  fi
  if pg_running; then
    say "reusing the running private PostgreSQL ($PG_DATA)"
  else
    pg_start
  fi

  local port i
  port=$(running_port)
  [[ $port =~ ^[0-9]+$ ]] || die "cannot read the port from $PG_DATA/postmaster.pid"
  for i in $(seq 1 60); do
    "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$port" -U "$PG_SUPERUSER" -d postgres && break
    ((i < 60)) || die "PostgreSQL on 127.0.0.1:$port is not ready after 30s (log: $PG_LOG)"
    sleep 0.5
  done

  local psql=("$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U "$PG_SUPERUSER" -d postgres)
  if [[ $("${psql[@]}" -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'") != 1 ]]; then
    say "creating database $DB_NAME"
    "${psql[@]}" -c "CREATE DATABASE $DB_NAME" || die "cannot create database $DB_NAME on 127.0.0.1:$port"
  fi
  export FLEETSCOPE_DATABASE_URL="postgres://$PG_SUPERUSER@127.0.0.1:$port/$DB_NAME?sslmode=disable"
}

pg_stop() {
  [[ ! -d $PG_DIR ]] || pg_user
  if [[ ! -f $PG_DATA/PG_VERSION ]]; then
    say "no private PostgreSQL under $PG_DIR"
    return
  fi
  pg_bin
  if ! pg_running; then
    say "the private PostgreSQL is not running"
    return
  fi
  as_pg "$PGBIN/pg_ctl" -D "$PG_DATA" -m fast -w -t 60 -s stop ||
    die "pg_ctl stop failed (log: $PG_LOG)"
  say "stopped the private PostgreSQL ($PG_DATA)"
}

pg_status() {
  [[ ! -d $PG_DIR ]] || pg_user
  if [[ ! -f $PG_DATA/PG_VERSION ]]; then
    echo "no private PostgreSQL under $PG_DIR"
  elif pg_running; then
    echo "running: postgres://$PG_SUPERUSER@127.0.0.1:$(running_port)/$DB_NAME?sslmode=disable ($PG_DATA)"
  else
    echo "stopped ($PG_DATA)"
  fi
}

# ---- fleetscope ----------------------------------------------------------

# base_url prints the URL clients on this machine reach FLEETSCOPE_ADDR at.
base_url() {
  local addr=${FLEETSCOPE_ADDR:-127.0.0.1:8080} host port
  host=${addr%:*}
  port=${addr##*:}
  case $host in
  "" | 0.0.0.0) host=127.0.0.1 ;;
  "[::]") host="[::1]" ;;
  esac
  printf 'http://%s:%s\n' "$host" "$port"
}

# redact hides the password of a URL.
redact() {
  sed -E 's#^([a-z]+://[^:/@]*):[^@/]*@#\1:***@#' <<<"$1"
}

banner() {
  local key=$1 url env
  url=$(base_url)
  env="FLEETSCOPE_API_KEY=$key"
  [[ $url == http://127.0.0.1:8080 ]] || env="FLEETSCOPE_URL=$url $env"
  cat <<EOF

  fleetscope   $url   (sign in with the key below)
  database     $(redact "$FLEETSCOPE_DATABASE_URL")
  blobs        ${FLEETSCOPE_BLOB_URL}
  API key      $key
               tenant "$TENANT", scopes $SCOPES; also in .data/api-key

  Try:
    perf record -F 49 -a -g -- sleep 30 && perf script --header > perf.txt
    $env ./bin/fleetscope upload --app myapp perf.txt
    $env ./bin/fleetscope profiles --app myapp

  (make install puts fleetscope on your PATH: \$GOBIN or ~/go/bin.)
  Ctrl-C stops the server. The private PostgreSQL keeps running; stop it
  with: make stop (or deploy/run-local.sh stop)

EOF
}

start() {
  [[ -x $FLEETSCOPE ]] || die "$FLEETSCOPE not found: run make build (make run builds it first)"
  mkdir -p "$DATA_DIR"

  # One start at a time (the lock is dropped before the server runs).
  if command -v flock >/dev/null; then
    exec 9>"$DATA_DIR/.run-local.lock"
    flock -w 120 9 || die "another deploy/run-local.sh is starting in $ROOT"
  fi

  if [[ -n ${FLEETSCOPE_DATABASE_URL:-} ]]; then
    say "using FLEETSCOPE_DATABASE_URL from the environment"
  else
    pg_up
  fi
  export FLEETSCOPE_BLOB_URL=${FLEETSCOPE_BLOB_URL:-file://./.data/blobs}

  "$FLEETSCOPE" migrate || die "fleetscope migrate failed (database: $(redact "$FLEETSCOPE_DATABASE_URL"))"
  "$FLEETSCOPE" tenant create "$TENANT" --if-not-exists || die "fleetscope tenant create $TENANT failed"
  local key
  key=$("$FLEETSCOPE" key create --tenant "$TENANT" --scope "$SCOPES") || die "fleetscope key create failed"
  key=${key#"${key%%[![:space:]]*}"}
  key=${key%"${key##*[![:space:]]}"}
  [[ -n $key ]] || die "fleetscope key create printed no key"
  [[ $key != *[[:space:]]* ]] || die "fleetscope key create printed more than a key: $key"
  (umask 077 && printf '%s\n' "$key" >"$DATA_DIR/api-key")
  banner "$key"

  exec 9>&-
  exec "$FLEETSCOPE" server
}

case ${1:-start} in
start) start ;;
stop) pg_stop ;;
status) pg_status ;;
-h | --help | help)
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
  ;;
*) usage ;;
esac
