#!/usr/bin/env bash
# Wall-clock A/B of two agent-server binaries on one core, in the order A B B A A B B A: on this
# shared machine, plainly alternating runs favoured whichever binary ran first in each pair. Each
# run starts its server on a fresh data directory pinned to CPU 0 (`sync` and 1 s of rest before
# it), and `judge load` on CPU 1 sends 16-token turns at 64 connections for 8 s after 1 s of
# warm-up. Prints each run, then the mean turns/s of each binary. With BENCH_WHOLE_MACHINE=1 the
# server runs unpinned with 2 workers instead, as in bench-load.sh's part h; the generator stays
# on CPU 1 (part h pins it there too, through its `judge` helper).
#
#   scripts/bench/abba.sh /tmp/agent-server-before target/release/agent-server
#   BENCH_WHOLE_MACHINE=1 scripts/bench/abba.sh /tmp/agent-server-before target/release/agent-server
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/lib.sh
[ $# -eq 2 ] || { echo "usage: $0 AGENT_SERVER_A AGENT_SERVER_B" >&2; exit 2; }
cargo build --release --quiet -p judge-client --bin judge
port=${BENCH_PORT:-18320}
seconds=${BENCH_SECONDS:-8}
if [ "${BENCH_WHOLE_MACHINE:-0}" = 1 ]; then
  server_cpu=() workers=2
else
  server_cpu=(taskset -c 0) workers=1
fi
work=$(mktemp -d)
server=
cleanup() { [ -z "$server" ] || kill "$server" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# run BINARY: one measured run; its turns/s, p50 and p99 go to $work/result. Runs in this shell,
# not a subshell, so that the EXIT trap can stop its server if anything fails.
run() {
  rm -rf "$work/data"
  sync
  sleep 1
  "${server_cpu[@]}" "$1" --addr "127.0.0.1:$port" --workers "$workers" --data-dir "$work/data" \
    >"$work/server.log" 2>&1 &
  server=$!
  wait_up "$port"
  taskset -c 1 target/release/judge load --endpoint "http://127.0.0.1:$port" --threads 1 \
    --duration "${seconds}s" --warmup 1s --prompt-tokens 16 --output-tokens 16 --quiet \
    --concurrency 64 --out "$work/judge" >"$work/judge.txt" 2>&1 || { cat "$work/judge.txt" >&2; exit 1; }
  kill "$server"
  wait "$server" 2>/dev/null || true
  server=
  head -1 "$work/judge.txt" |
    sed -E 's/.*: ([0-9.]+) req\/s.*latency p50\/p99 ([0-9.]+)\/([0-9.]+) ms.*/\1 \2 \3/' \
      >"$work/result"
}

printf '%-8s %-40s %10s %8s %8s\n' run binary turns/s "p50 ms" "p99 ms"
i=0
for which in A B B A A B B A; do
  i=$((i + 1))
  if [ "$which" = A ]; then binary=$1; else binary=$2; fi
  run "$binary"
  read -r rate p50 p99 <"$work/result"
  printf '%-8s %-40s %10s %8s %8s\n' "$i ($which)" "$binary" "$rate" "$p50" "$p99" |
    tee -a "$work/runs.txt"
done
awk '$2 ~ /^\(A\)$/ {a += $4; na++} $2 ~ /^\(B\)$/ {b += $4; nb++}
     END {printf "mean A %.0f turns/s, B %.0f turns/s, B/A %.3f\n", a/na, b/nb, (b/nb)/(a/na)}' "$work/runs.txt"
