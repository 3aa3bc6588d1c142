#!/usr/bin/env bash
# CPU time per turn of agent-server and of Postgres, at a FIXED open-loop rate, for one or more
# agent-server binaries run in turn (A B A B ... for BENCH_ROUNDS rounds).
#
# Wall-clock turns/s on this shared machine spreads by about 12 % between runs of one binary
# (abba.sh); at a fixed rate every binary does the same work, so what it costs in CPU can be
# compared directly. Each run uses the redis+postgres backend on a fresh database (dropped after
# the run) and an emptied Redis; the server runs unpinned with 2 workers, `judge load` on CPU 1
# sends constant arrivals of 16-token turns for 8 s, and the CPU time (user + system, from
# /proc/PID/stat) of agent-server and of the Postgres cluster (its postmaster and every child
# process: backends, WAL writer, checkpointer, autovacuum), and Redis's (`INFO cpu`) with its
# commands (`INFO commandstats`), are read over the 5 s from 2 s in, so run nothing else against
# that cluster or that Redis meanwhile.
#
#   scripts/test-services.sh start && eval "$(scripts/test-services.sh env)"
#   export AGENTWALL_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres   # durable
#   BENCH_RATE=6000 BENCH_ROUNDS=3 scripts/bench/cpu-per-turn.sh /tmp/agent-server-before \
#     target/release/agent-server
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/lib.sh
[ $# -ge 1 ] || { echo "usage: $0 AGENT_SERVER..." >&2; exit 2; }
: "${AGENTWALL_TEST_REDIS_URL:?run under scripts/test-services.sh (needs its Redis)}"
: "${AGENTWALL_TEST_DATABASE_URL:?set it to a Postgres admin URL (tests create one database each)}"
cargo build --release --quiet -p judge-client --bin judge
port=${BENCH_PORT:-18330}
rate=${BENCH_RATE:-6000}
seconds=8
rounds=${BENCH_ROUNDS:-1}
tick=$(getconf CLK_TCK)
start_work
postmaster=$(head -1 "$(psql -At "$AGENTWALL_TEST_DATABASE_URL" -c 'SHOW data_directory')/postmaster.pid" 2>/dev/null || true)
[ -n "$postmaster" ] || { echo "cannot find the Postgres cluster's postmaster.pid (is the cluster on this machine, and readable?)" >&2; exit 1; }

# redis_usage: Redis's CPU seconds (user + system) and the commands it has run, on one line.
redis_usage() {
  redis-cli -u "$AGENTWALL_TEST_REDIS_URL" INFO all | tr -d '\r' | awk -F'[:=,]' '
    $1 == "used_cpu_user" || $1 == "used_cpu_sys" { cpu += $2 }
    $1 ~ /^cmdstat_/ && $1 != "cmdstat_info" { calls += $3 }
    END { printf "%.6f %d\n", cpu, calls }'
}

# postgres_ticks: CPU time of the Postgres cluster so far, in clock ticks: the postmaster's own,
# that of its children that have exited (which it has reaped), and that of those running now.
# Children come and go (autovacuum workers, the backend of every psql), so they are listed anew
# each time; one that exits between the listing and the reading is missed, which is rare.
postgres_ticks() {
  local own
  own=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$postmaster/stat")
  echo $((own + $(ticks $(pgrep -P "$postmaster"))))
}

# ticks PID...: user + system CPU time of the processes, in clock ticks (0 for one that is gone).
ticks() {
  local sum=0 pid
  for pid in "$@"; do
    sum=$((sum + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
  done
  echo "$sum"
}

printf '%-8s %-40s %8s %16s %12s %9s %15s\n' run binary turns/s "agent-server µs" "postgres µs" \
  "redis µs" "redis commands"
i=0
for _ in $(seq "$rounds"); do
  for binary in "$@"; do
    i=$((i + 1))
    fresh_redis_pg "cpu_$$_$i"
    sync
    sleep 1
    "$binary" --addr "127.0.0.1:$port" --workers 2 "${memory[@]}" >"$work/server.log" 2>&1 &
    server=$!
    wait_up "$port"
    taskset -c 1 target/release/judge load --endpoint "http://127.0.0.1:$port" --threads 1 \
      --duration "${seconds}s" --prompt-tokens 16 --output-tokens 16 --quiet --rate "$rate" \
      --arrivals constant --out "$work/judge" >"$work/judge.txt" 2>&1 &
    generator=$!
    sleep 2
    agent0=$(ticks "$server") pg0=$(postgres_ticks) t0=$(date +%s.%N)
    read -r redis_cpu0 redis_calls0 < <(redis_usage)
    sleep 5
    agent1=$(ticks "$server") pg1=$(postgres_ticks) t1=$(date +%s.%N)
    read -r redis_cpu1 redis_calls1 < <(redis_usage)
    wait "$generator" || { cat "$work/judge.txt" >&2; exit 1; }
    generator=
    stop_server
    drop_database
    # Turns answered, not sent: a server that falls behind the rate must not look cheaper.
    ok=$(head -1 "$work/judge.txt" | sed -nE 's/.*, ok ([0-9]+),.*/\1/p')
    [ -n "$ok" ] || { echo "no request count in judge's output:" >&2; cat "$work/judge.txt" >&2; exit 1; }
    awk -v run="$i" -v bin="$binary" -v answered="$((ok / seconds))" -v t0="$t0" -v t1="$t1" \
      -v tick="$tick" -v agent=$((agent1 - agent0)) -v pg=$((pg1 - pg0)) \
      -v redis="$redis_cpu0 $redis_cpu1" -v calls=$((redis_calls1 - redis_calls0)) 'BEGIN {
        turns = answered * (t1 - t0)
        split(redis, r, " ")
        printf "%-8s %-40s %8.0f %16.1f %12.1f %9.1f %15.2f\n", run, bin, answered,
          agent / tick * 1e6 / turns, pg / tick * 1e6 / turns, (r[2] - r[1]) * 1e6 / turns,
          calls / turns
      }'
  done
done
