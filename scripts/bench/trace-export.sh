#!/usr/bin/env bash
# What exporting traces costs the server itself (the target of docs/benchmarks.md: trace export at benchmark rates stays
# batched and changes the figures by at most 10 %), without a collector's cost in the figure:
# the same load on embedded agent-servers, each on CPU 0 with one worker and a fresh data
# directory, exporting over OTLP/HTTP to scripts/bench/otlp_sink.py (answers every POST, decodes
# nothing) on CPU 1 with the generator:
#   plain    not exporting;
#   all      exporting every span (the default sampler, parent-based always-on);
#   sample-R exporting a sample of traces, for each ratio R of BENCH_SAMPLES ("0.1 0.01" by
#            default: OTEL_TRACES_SAMPLER=parentbased_traceidratio, OTEL_TRACES_SAMPLER_ARG=R).
# `judge load` sends 16-token turns at 64 connections for BENCH_SECONDS (6) after 2 s of
# warm-up, to each server in turn (each round starting one server later), BENCH_ROUNDS (4)
# times; prints each run, then each server's median turns/s and its ratio to plain. Part (g) of bench-load.sh measures the same against a
# real Arize Phoenix, which on this machine cannot ingest every span and takes the generator's
# core.
#
#   scripts/bench/trace-export.sh
#   scripts/bench/trace-export.sh /tmp/agent-server-before   # its all and sample servers too
#   BENCH_SAMPLES=0 scripts/bench/trace-export.sh             # what a request not sampled costs
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/lib.sh
new=target/release/agent-server
old=${1:-}
cargo build --release --quiet -p agent-server -p judge-client
rounds=${BENCH_ROUNDS:-4}
seconds=${BENCH_SECONDS:-6}
samples=${BENCH_SAMPLES:-0.1 0.01}
port=${BENCH_PORT:-18420}
sink_port=$port
start_work
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  stop_work
}
trap cleanup EXIT
taskset -c 1 python3 scripts/bench/otlp_sink.py "$sink_port" &
pids+=($!)
export_to=OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$sink_port
names=() ports=()
# serve NAME BINARY ENV...: a server of its own, on the next port.
serve() {
  local name=$1 binary=$2
  shift 2
  port=$((port + 1))
  env "$@" taskset -c 0 "$binary" --addr "127.0.0.1:$port" --workers 1 \
    --data-dir "$work/$name-data" >"$work/$name.log" 2>&1 &
  pids+=($!)
  names+=("$name") ports+=("$port")
}
sampler=OTEL_TRACES_SAMPLER=parentbased_traceidratio
serve plain "$new" OTEL_SDK_DISABLED=true
serve all "$new" "$export_to"
for ratio in $samples; do
  serve "sample-$ratio" "$new" "$export_to" "$sampler" "OTEL_TRACES_SAMPLER_ARG=$ratio"
done
if [ -n "$old" ]; then
  serve before-all "$old" "$export_to"
  for ratio in $samples; do
    serve "before-sample-$ratio" "$old" "$export_to" "$sampler" "OTEL_TRACES_SAMPLER_ARG=$ratio"
  done
fi
for p in "${ports[@]}"; do wait_up "$p"; done
printf '%-5s %-20s %9s\n' round server turns/s
count=${#names[@]}
for round in $(seq "$rounds"); do
  # Each round starts one server later, so that no server always runs first (on this machine
  # the first of back-to-back runs tended to measure faster, see abba.sh).
  for step in $(seq 0 $((count - 1))); do
    i=$(( (step + round - 1) % count ))
    out="$work/judge-${names[$i]}-$round"
    taskset -c 1 target/release/judge load --endpoint "http://127.0.0.1:${ports[$i]}" \
      --threads 1 --concurrency 64 --duration "${seconds}s" --warmup 2s --prompt-tokens 16 \
      --output-tokens 16 --quiet --out "$out" >/dev/null
    rate=$(python3 -c 'import json, glob, sys
print(round(json.load(open(glob.glob(sys.argv[1] + "/*/results.json")[0]))["steps"][0]["throughput"]["requests_per_s"]))' "$out")
    echo "$rate" >>"$work/${names[$i]}.rates"
    printf '%-5s %-20s %9s\n' "$round" "${names[$i]}" "$rate"
  done
done
echo
echo "medians of $rounds runs:"
# median NAME: the median of NAME's runs.
median() {
  sort -n "$work/$1.rates" | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'
}
plain=$(median plain)
for name in "${names[@]}"; do
  rate=$(median "$name")
  printf '%-20s %9.0f  %5.1f %% of plain\n' "$name" "$rate" "$(echo "100 * $rate / $plain" | bc -l)"
done
echo "sink received (POSTs, bytes): $(curl -fsS "http://127.0.0.1:$sink_port/")"
