#!/usr/bin/env bash
# User-space instructions per builtin turn of agent-server binaries, counted by callgrind: unlike
# turns/s, the count does not depend on what else the shared machine is doing, so small changes
# show. Each binary serves 1,000 and then 4,000 turns (`judge load --requests N --concurrency 16`,
# 16-token prompts) from a fresh data directory; the difference over 3,000 turns is the cost of a
# turn without the start-up (mostly compiling regexes). The kernel's share (WAL writes, fsync,
# sockets) is not counted. Needs valgrind. With BENCH_BACKEND=redis+postgres the servers use the
# redis+postgres backend instead of the embedded store, each run on a fresh database (dropped
# after it) and an emptied Redis; Redis's and Postgres's own instructions are not counted.
#
#   scripts/bench/turn-instructions.sh target/release/agent-server /tmp/agent-server-base
#   scripts/test-services.sh start && eval "$(scripts/test-services.sh env)"
#   BENCH_BACKEND=redis+postgres scripts/bench/turn-instructions.sh target/release/agent-server
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/lib.sh
[ $# -ge 1 ] || { echo "usage: $0 AGENT_SERVER_BINARY..." >&2; exit 2; }
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 2; }
cargo build --release --quiet -p judge-client --bin judge
port=${BENCH_PORT:-18310}
backend=${BENCH_BACKEND:-embedded}
case "$backend" in
  embedded | redis+postgres) ;;
  *) echo "BENCH_BACKEND must be embedded or redis+postgres, not $backend" >&2; exit 2 ;;
esac
start_work

# instructions BINARY TURNS: total instructions of one server process serving TURNS turns, into
# $work/count. Runs in this shell, not a subshell, so that the EXIT trap can stop its server.
instructions() {
  local dir="$work/run-$2"
  rm -rf "$dir"
  mkdir -p "$dir"
  if [ "$backend" = embedded ]; then
    memory=(--data-dir "$dir/data")
  else
    fresh_redis_pg "instructions_$$_$2"
  fi
  valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out" "$1" \
    --addr "127.0.0.1:$port" --workers 1 "${memory[@]}" >"$dir/server.log" 2>&1 &
  server=$!
  # Under valgrind a server takes a while to start.
  wait_up "$port" 60
  target/release/judge load --endpoint "http://127.0.0.1:$port" --threads 1 --requests "$2" \
    --concurrency 16 --prompt-tokens 16 --output-tokens 16 --timeout 120s --quiet \
    --out "$dir/judge" >"$dir/judge.log" 2>&1
  stop_server INT
  drop_database
  awk '/^(summary|totals):/ {print $2; exit}' "$dir/callgrind.out" >"$work/count"
}

printf '%-40s %s\n' binary "instructions per turn"
for binary in "$@"; do
  instructions "$binary" 1000
  small=$(<"$work/count")
  instructions "$binary" 4000
  large=$(<"$work/count")
  awk -v b="$binary" -v s="$small" -v l="$large" 'BEGIN { printf "%-40s %.0fk\n", b, (l - s) / 3000 / 1000 }'
done
