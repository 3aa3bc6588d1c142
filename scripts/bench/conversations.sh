#!/usr/bin/env bash
# How a turn's latency grows with the conversation (docs/results/conversations.md): `judge load
# --turns` against agent-server (builtin model, episodes on, semantic recall through a hashed
# embeddings endpoint this script starts, so that no model's CPU is what is measured), on the
# embedded store and on Redis + Postgres (pgvector), one after the other in one run. Each virtual
# user holds a session for BENCH_TURNS turns, its messages from judge's generator, the history
# left to agent-server's memory; streamed, so TTFT is what a user waits before the first word.
#
#   scripts/bench/conversations.sh                      # 256 turns, 4 users, 4096 turns per backend
#   BENCH_TURNS=128 BENCH_USERS=2 BENCH_REQUESTS=1024 scripts/bench/conversations.sh
#
# Needs release binaries (built here) and, for Redis + Postgres, the test services (started here
# in a folder of their own and stopped at the end). Writes runs/conversations-<time>/ with each
# backend's judge run and prints the by-turn tables.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/lib.sh

turns=${BENCH_TURNS:-256}
users=${BENCH_USERS:-4}
requests=${BENCH_REQUESTS:-4096}
port=${BENCH_PORT:-18191}
embed_port=${BENCH_EMBED_PORT:-18192}
out=runs/conversations-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"

cargo build --release --locked -p agent-server -p judge-client --bins >&2

start_memory_bench "$embed_port"

for backend in embedded redis+postgres; do
  memory=()
  if [ "$backend" = redis+postgres ]; then
    fresh_redis_pg "conversations_$$"
  fi
  ./target/release/agent-server --addr "127.0.0.1:$port" --data-dir "$work/data-$backend" \
    --embeddings-base-url "http://127.0.0.1:$embed_port/v1" --embeddings-model hash-384 \
    "${memory[@]}" > "$work/agent-$backend.log" 2>&1 &
  server=$!
  wait_up "$port" 30
  ./target/release/judge load --endpoint "http://127.0.0.1:$port" --stream \
    --concurrency "$users" --turns "$turns" --requests "$requests" --threads 1 \
    --prompt-tokens uniform:8-40 --output-tokens 32 --timeout 60s --quiet \
    --out "$out/$backend" >&2
  stop_server
  drop_database
  python3 - "$backend" "$out/$backend"/*/results.json <<'PY'
import json, sys
backend, path = sys.argv[1], sys.argv[2]
step = json.load(open(path))["steps"][0]
print(f"\n{backend}: {step['requests']['ok']} ok, {step['requests']['failed']} failed, "
      f"{step['throughput']['requests_per_s']:.0f} turns/s")
print(f"{'turns':>9} {'n':>6} {'latency p50':>12} {'p90':>8} {'p99':>8} {'TTFT p50':>9} {'p99':>8}  (ms)")
for b in step["by_turn"]:
    turns = str(b["first_turn"]) if b["first_turn"] == b["last_turn"] else f"{b['first_turn']}-{b['last_turn']}"
    l, t = b["latency"], b["ttft"]
    print(f"{turns:>9} {b['ok']:>6} {l['p50_ms']:>12.2f} {l['p90_ms']:>8.2f} {l['p99_ms']:>8.2f} "
          f"{t['p50_ms']:>9.2f} {t['p99_ms']:>8.2f}")
PY
done
echo "runs: $out" >&2
