# Shared by the benchmark scripts; source it: `source "$(dirname "$0")/bench/lib.sh"`.

# wait_up PORT [SECONDS]: waits until the server on 127.0.0.1:PORT answers GET /v1/models (10 s
# by default); exits the script, saying so, if it never does.
wait_up() {
  local tries=$(( ${2:-10} * 10 ))
  for _ in $(seq "$tries"); do
    curl -fsS "http://127.0.0.1:$1/v1/models" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server on port $1 did not start" >&2
  exit 1
}

# fresh_redis_pg NAME: a clean redis+postgres memory for one run: creates database NAME on the
# server of $AGENTWALL_TEST_DATABASE_URL (an admin URL), empties the Redis database of
# $AGENTWALL_TEST_REDIS_URL, sets `database` to NAME and `memory` to the agent-server flags that
# use both. drop_database removes it again; call it from the EXIT trap too, while `database` is
# set.
fresh_redis_pg() {
  : "${AGENTWALL_TEST_REDIS_URL:?run under scripts/test-services.sh (needs its Redis)}"
  : "${AGENTWALL_TEST_DATABASE_URL:?set it to a Postgres admin URL (scripts/test-services.sh sets one)}"
  database=$1
  psql -q "$AGENTWALL_TEST_DATABASE_URL" -c "CREATE DATABASE $database"
  redis-cli -u "$AGENTWALL_TEST_REDIS_URL" FLUSHDB >/dev/null
  memory=(--redis-url "$AGENTWALL_TEST_REDIS_URL"
    --database-url "${AGENTWALL_TEST_DATABASE_URL%/*}/$database")
}

drop_database() {
  [ -z "${database:-}" ] || psql -q "$AGENTWALL_TEST_DATABASE_URL" -c "DROP DATABASE IF EXISTS $database"
  database=
}

# start_work: the state of a script's runs, cleaned up on exit (stop_work): `work` (a new
# temporary directory, removed), `server` and `generator` (the PIDs of a server and a load
# generator while they run, stopped), `database` (while set, dropped, after the server has gone)
# and `memory` (the server's memory flags). A script with more to clean up traps its own function,
# which calls stop_work.
start_work() {
  work=$(mktemp -d)
  server=
  generator=
  database=
  memory=()
  trap stop_work EXIT
}

# stop_server [SIGNAL]: stops `server` (with SIGTERM unless told) and waits for it, so that its
# connections are closed and its output written.
stop_server() {
  [ -z "$server" ] || { kill -"${1:-TERM}" "$server" 2>/dev/null; wait "$server" 2>/dev/null; } || true
  server=
}

stop_work() {
  [ -z "$generator" ] || kill "$generator" 2>/dev/null || true
  stop_server
  drop_database || true
  rm -rf "$work"
}

# start_memory_bench EMBED_PORT: start_work, plus what a memory benchmark of both backends needs,
# all stopped on exit: the hashed embeddings endpoint (scripts/bench/hash_embeddings.py) on
# EMBED_PORT, and throwaway Redis and Postgres (scripts/test-services.sh) in a folder of their own
# under the checkout (the unprivileged user Postgres runs as cannot reach mktemp's folder), their
# variables exported and their psql on PATH for fresh_redis_pg.
start_memory_bench() {
  start_work
  embedder=
  services_dir=
  trap stop_memory_bench EXIT
  python3 scripts/bench/hash_embeddings.py "$1" &
  embedder=$!
  services_dir=$PWD/.test-services/bench-$$
  AGENTWALL_TEST_SERVICES_DIR=$services_dir scripts/test-services.sh start > "$work/services.env"
  # shellcheck disable=SC1091
  source "$work/services.env"
  export AGENTWALL_TEST_REDIS_URL AGENTWALL_TEST_DATABASE_URL
  export PATH="$AGENTWALL_TEST_PG_BINDIR:$PATH"
}

stop_memory_bench() {
  [ -z "${embedder:-}" ] || kill "$embedder" 2>/dev/null || true
  stop_work
  [ -z "${services_dir:-}" ] || AGENTWALL_TEST_SERVICES_DIR=$services_dir scripts/test-services.sh stop >/dev/null 2>&1 || true
}
