#!/usr/bin/env bash
# Wall-clock A/B of two agent-server binaries on one core, in the order A B B A A B B A: on this
# shared machine, plainly alternating runs favoured whichever binary ran first in each pair. Each
# run starts its server on a fresh data directory pinned to CPU 0 (`sync` and 1 s of rest before
# it), and `judge load` on CPU 1 sends 16-token turns at 64 connections for 8 s after 1 s of
# warm-up. Prints each run, then the mean and median turns/s of each binary; BENCH_ROUNDS=N
# repeats the eight runs N times, every second time as B A A B B A A B (an even N balances the
# places). With BENCH_WHOLE_MACHINE=1 the server runs unpinned with 2 workers instead, as in
# bench-load.sh's part h; the generator stays on CPU 1 (part h pins it there too, through its
# `judge` helper). With
# BENCH_BACKEND=redis+postgres each run uses the redis+postgres backend of the services that
# scripts/test-services.sh started, on a fresh database (dropped after the run) and an emptied
# Redis, and also prints the share of the facts table's updates that Postgres made HOT. Each run
# also prints BUSY, the share of its time in which a batch of the group commit (or of the embedded
# writer) ran, read from the server's /metrics: near 100 % means batching ran back to back. With
# BENCH_UPSTREAM=1 the servers run in upstream mode, as in bench-load.sh's parts d and h: their
# model is a bare_server (16 chunks per reply) placed and sized as they are (CPU 0 and 1 worker, or
# unpinned with 2), the turns are streamed at 16 connections, and each run also prints the time to
# first token (TTFT) p50 and p99, with the model's own TTFT measured directly before the first run
# and after the last (what agent-server adds is the difference); BENCH_RATE=N sends them open
# loop at N requests/s instead (where no queue hides what a turn adds), BENCH_CONCURRENCY=N streams
# them at N connections instead of 16, and BENCH_MODEL_DELAY_MS=N makes the model wait N ms before
# each reply (a real model's time to first token; agent-server's part is then a share of it).
#
#   scripts/bench/abba.sh /tmp/agent-server-before target/release/agent-server
#   BENCH_WHOLE_MACHINE=1 scripts/bench/abba.sh /tmp/agent-server-before target/release/agent-server
#   BENCH_BACKEND=redis+postgres scripts/test-services.sh run \
#     scripts/bench/abba.sh /tmp/agent-server-before target/release/agent-server
#   BENCH_UPSTREAM=1 scripts/bench/abba.sh /tmp/agent-server-before target/release/agent-server
#   BENCH_UPSTREAM=1 BENCH_RATE=200 scripts/bench/abba.sh /tmp/agent-server-before target/release/agent-server
#   BENCH_UPSTREAM=1 BENCH_MODEL_DELAY_MS=100 BENCH_CONCURRENCY=64 scripts/bench/abba.sh A B
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/lib.sh
[ $# -eq 2 ] || { echo "usage: $0 AGENT_SERVER_A AGENT_SERVER_B" >&2; exit 2; }
cargo build --release --quiet -p judge-client --bin judge
port=${BENCH_PORT:-18320}
upstream_port=$((port + 1))
seconds=${BENCH_SECONDS:-8}
if [ "${BENCH_WHOLE_MACHINE:-0}" = 1 ]; then
  server_cpu=() workers=2
else
  server_cpu=(taskset -c 0) workers=1
fi
start_work
upstream=
cleanup() {
  [ -z "$upstream" ] || kill "$upstream" 2>/dev/null || true
  stop_work
}
trap cleanup EXIT

backend=${BENCH_BACKEND:-embedded}
case "$backend" in
  embedded) ;;
  redis+postgres)
    : "${AGENTWALL_TEST_REDIS_URL:?run under scripts/test-services.sh run (needs its Redis)}"
    : "${AGENTWALL_TEST_DATABASE_URL:?run under scripts/test-services.sh run (needs its Postgres)}"
    ;;
  *) echo "BENCH_BACKEND must be embedded or redis+postgres, not $backend" >&2; exit 2 ;;
esac

load=(--concurrency 64)
model=()
if [ "${BENCH_UPSTREAM:-0}" = 1 ]; then
  cargo build --release --quiet -p agentwall --example bare_server
  "${server_cpu[@]}" target/release/examples/bare_server --port "$upstream_port" \
    --workers "$workers" --chunks 16 --delay-ms "${BENCH_MODEL_DELAY_MS:-0}" 2>"$work/upstream.log" &
  upstream=$!
  wait_up "$upstream_port"
  if [ -n "${BENCH_RATE:-}" ]; then load=(--rate "$BENCH_RATE" --stream); else load=(--concurrency "${BENCH_CONCURRENCY:-16}" --stream); fi
  model=(--llm-base-url "http://127.0.0.1:$upstream_port/v1")
fi

# generate PORT NAME: one `judge load` measurement against PORT on CPU 1; its summary goes to
# $work/NAME.txt, its run directory under $work/NAME.
generate() {
  taskset -c 1 target/release/judge load --endpoint "http://127.0.0.1:$1" --threads 1 \
    --duration "${seconds}s" --warmup 1s --prompt-tokens 16 --output-tokens 16 --quiet \
    "${load[@]}" --out "$work/$2" >"$work/$2.txt" 2>&1 || { cat "$work/$2.txt" >&2; exit 1; }
}

# direct WHEN: the model's own TTFT p50/p99 under the same load, without agent-server.
direct() {
  generate "$upstream_port" direct
  printf '%-8s %-40s %47s\n' "$1" "the model directly" \
    "$(head -1 "$work/direct.txt" | sed -E 's/.*ttft ([^ ]+) ms.*/\1/')" | tee -a "$work/direct-runs.txt"
}

# memory_flags RUN: sets `memory` to the server's memory flags for run RUN; for redis+postgres,
# creates the run's database and empties Redis.
memory_flags() {
  if [ "$backend" = embedded ]; then
    memory=(--data-dir "$work/data")
    return
  fi
  fresh_redis_pg "abba_$$_$1"
}

# hot_share: sets `hot` to, for redis+postgres, the share of the facts table's updates that were
# HOT (read after the server has stopped, so that its connections have reported their counts),
# and drops the run's database; to "-" for embedded.
hot_share() {
  hot=-
  [ "$backend" = embedded ] && return
  sleep 1
  hot=$(psql -At "${AGENTWALL_TEST_DATABASE_URL%/*}/$database" -c \
    "SELECT coalesce(round(100.0 * n_tup_hot_upd / nullif(n_tup_upd, 0)) || '%', 'none')
     FROM pg_stat_user_tables WHERE relname = 'agentwall_facts'")
  drop_database
}

# batch_busy SECONDS: sets `busy` to the share of the run's SECONDS (warm-up included) in which a
# commit batch ran, from the server's `agentwall_memory_batch_duration_seconds` (redis+postgres's
# group commit, the embedded writer): near 100 % means batching ran back to back. "-" for a build
# without that metric.
batch_busy() {
  local batch=commit
  [ "$backend" = embedded ] && batch=write
  busy=$(curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null | awk -v batch="$batch" -v took="$1" '
    $1 ~ /^agentwall_memory_batch_duration_seconds_sum[{]/ && index($1, "batch=\"" batch "\"") {
      printf "%.0f%%", 100 * $2 / took; found = 1 }
    END { if (!found) print "-" }')
}

# run BINARY: one measured run; its turns/s, p50, p99 and TTFT go to $work/result. Runs in this shell,
# not a subshell, so that the EXIT trap can stop its server if anything fails.
run() {
  rm -rf "$work/data"
  memory_flags "$2"
  sync
  sleep 1
  "${server_cpu[@]}" "$1" --addr "127.0.0.1:$port" --workers "$workers" "${memory[@]}" "${model[@]}" \
    >"$work/server.log" 2>&1 &
  server=$!
  wait_up "$port"
  local started
  started=$(date +%s.%N)
  generate "$port" judge
  batch_busy "$(echo "$(date +%s.%N) - $started" | bc)"
  stop_server
  hot_share
  head -1 "$work/judge.txt" |
    sed -E "s/.*: ([0-9.]+) req\/s.*latency p50\/p99 ([0-9.]+)\/([0-9.]+) ms, ttft ([^ ]+) ms.*/\1 \2 \3 \4 $hot $busy/" \
      >"$work/result"
}

printf '%-8s %-40s %10s %8s %8s %12s %6s %6s\n' run binary turns/s "p50 ms" "p99 ms" "TTFT p50/p99" HOT BUSY
rounds=${BENCH_ROUNDS:-1}
# Every second round swaps the places (B A A B B A A B): on a durable Postgres the runs in B's
# places came out slower even with A and B the same binary (x0.88 over 8 runs), so one order alone
# can favour a binary.
order=$(for round in $(seq "$rounds"); do
  if [ $((round % 2)) = 1 ]; then printf 'A B B A A B B A '; else printf 'B A A B B A A B '; fi
done)
[ "${BENCH_UPSTREAM:-0}" != 1 ] || direct before
i=0
for which in $order; do
  i=$((i + 1))
  if [ "$which" = A ]; then binary=$1; else binary=$2; fi
  run "$binary" "$i"
  read -r rate p50 p99 ttft hot busy <"$work/result"
  printf '%-8s %-40s %10s %8s %8s %12s %6s %6s\n' "$i ($which)" "$binary" "$rate" "$p50" "$p99" "$ttft" "$hot" "$busy" |
    tee -a "$work/runs.txt"
done
[ "${BENCH_UPSTREAM:-0}" != 1 ] || direct after
# Means and medians of each binary's runs: on this shared machine a run now and then lands in a
# slow spell, which moves a mean more than a median.
awk -v upstream="${BENCH_UPSTREAM:-0}" '$2 ~ /^\(A\)$/ {a[++na] = $4; split($7, t, "/"); a50[na] = t[1]; a99[na] = t[2]}
     $2 ~ /^\(B\)$/ {b[++nb] = $4; split($7, t, "/"); b50[nb] = t[1]; b99[nb] = t[2]}
     function mean(v, n,   s, k) { for (k = 1; k <= n; k++) s += v[k]; return s / n }
     function median(v, n,   k, j, x) {
       for (k = 2; k <= n; k++) { x = v[k]; for (j = k - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
       return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
     }
     END {
       ma = mean(a, na); mb = mean(b, nb)
       printf "mean A %.0f turns/s, B %.0f turns/s, B/A %.3f", ma, mb, mb / ma
       da = median(a, na); db = median(b, nb)
       printf "; median A %.0f, B %.0f, B/A %.3f", da, db, db / da
       if (upstream == 1) printf "; median TTFT p50 A %.3f ms, B %.3f ms; p99 A %.3f ms, B %.3f ms",
         median(a50, na), median(b50, nb), median(a99, na), median(b99, nb)
       printf "\n"
     }' "$work/runs.txt"
