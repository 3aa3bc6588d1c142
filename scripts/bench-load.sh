#!/usr/bin/env bash
# Load benchmarks (docs/results/load.md), all in ONE run so their ratios are comparable:
#   (a) bare actix-web fixed-JSON server vs agent-server (builtin model, embedded store),
#       non-streaming, 64 connections, generator `judge load` (and wrk as a cross-check);
#   (b) streamed turns/s of both;
#   (c) `judge load` vs guidellm against the bare server: highest sustained rate and client CPU
#       per request (process-tree user+sys time from bash's `time`, over requests made);
#   (d) upstream mode: time to first token through agent-server (--llm-base-url = the bare
#       server) vs the bare server directly, streaming, 16 connections;
#   (e) scale: agent-server's resident memory idle, after 1,000 concurrent sessions, after
#       1 million stored facts (1,000 sessions x 1,000, through /control/memory/inject), and after
#       turns on all of those sessions (the session cache at its --memory-cache-items budget);
#   (h) the whole machine: bare server and agent-server with 2 workers each, nothing pinned, the
#       generator sharing both cores with them (how the issue's "this 2-core machine" targets
#       read); non-streaming and streaming, 64 connections; and (d)'s upstream mode at 16
#       connections, the bare server as the model;
#   (g) trace export: agent-server exporting every span over OTLP/HTTP to a real Arize Phoenix
#       (.venv/phoenix, installed by scripts/phoenix-trace-check.sh), and exporting a 10 % sample
#       of traces (OTEL_TRACES_SAMPLER=parentbased_traceidratio), vs not exporting.
# Except in (h), servers run on CPU 0 and generators on CPU 1 (taskset), one worker/thread each,
# so a figure is "per core". Writes runs/bench-load-<time>/ and prints the summary table.
#
#   scripts/bench-load.sh                 # 10 s per measurement, 3 repeats, medians
#   BENCH_SECONDS=5 BENCH_REPEATS=1 scripts/bench-load.sh
#   BENCH_PARTS=a BENCH_AGENT_BASELINE=/tmp/agent-server-main scripts/bench-load.sh
#       # only (a), plus a second agent-server binary (e.g. built from main) measured in the same
#       # run, alternating with this tree's, for before/after ratios
parts=${BENCH_PARTS:-abcdegh}
baseline=${BENCH_AGENT_BASELINE:-}
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${BENCH_SECONDS:-10}
repeats=${BENCH_REPEATS:-3}
warmup=${BENCH_WARMUP:-2}
bare_port=${BENCH_BARE_PORT:-18091}
agent_port=${BENCH_AGENT_PORT:-18092}
baseline_port=${BENCH_BASELINE_PORT:-18093}
upstream_port=${BENCH_UPSTREAM_PORT:-18094}
scale_port=${BENCH_SCALE_PORT:-18095}
traced_port=${BENCH_TRACED_PORT:-18096}
phoenix_port=${BENCH_PHOENIX_PORT:-18097}
sampled_port=${BENCH_SAMPLED_PORT:-18098}
untraced_port=${BENCH_UNTRACED_PORT:-18099}
machine_bare_port=${BENCH_MACHINE_BARE_PORT:-18100}
machine_agent_port=${BENCH_MACHINE_AGENT_PORT:-18101}
machine_upstream_port=${BENCH_MACHINE_UPSTREAM_PORT:-18102}

cargo build --release --quiet -p agent-server -p judge-client -p agentwall --bins --example bare_server
out=runs/bench-load-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
echo "results in $out" >&2

server_cpu="taskset -c 0"
client_cpu="taskset -c 1"
if [ "$(nproc)" -lt 2 ]; then server_cpu=""; client_cpu=""; fi

pids=()
# Stops what the script started and waits for it (up to 10 s each, then SIGKILL): Phoenix, asked
# to stop, goes on ingesting its backlog of spans for tens of seconds, on the CPU of whatever
# runs next.
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT

source scripts/bench/lib.sh

$server_cpu target/release/examples/bare_server --port "$bare_port" --workers 1 --chunks 16 \
  2>"$out/bare_server.log" &
pids+=($!)
$server_cpu target/release/agent-server --addr "127.0.0.1:$agent_port" --workers 1 \
  --data-dir "$out/agent-data" >"$out/agent-server.log" 2>&1 &
pids+=($!)
if [ -n "$baseline" ]; then
  $server_cpu "$baseline" --addr "127.0.0.1:$baseline_port" --workers 1 \
    --data-dir "$out/baseline-data" >"$out/baseline-server.log" 2>&1 &
  pids+=($!)
  wait_up "$baseline_port"
fi
if [[ $parts == *d* ]]; then
  $server_cpu target/release/agent-server --addr "127.0.0.1:$upstream_port" --workers 1 \
    --data-dir "$out/upstream-data" --llm-base-url "http://127.0.0.1:$bare_port/v1" \
    >"$out/upstream-server.log" 2>&1 &
  pids+=($!)
fi
if [[ $parts == *g* ]]; then
  if [ -x .venv/phoenix/bin/phoenix ]; then
    # Phoenix on the generator's core: its ingestion must not take the server's CPU.
    PHOENIX_PORT=$phoenix_port PHOENIX_WORKING_DIR="$out/phoenix" PHOENIX_GRPC_PORT=0 \
      $client_cpu .venv/phoenix/bin/phoenix serve >"$out/phoenix.log" 2>&1 &
    phoenix_pid=$!
    pids+=($!)
    for _ in $(seq 300); do
      curl -fsS "http://127.0.0.1:$phoenix_port/healthz" >/dev/null 2>&1 && break
      sleep 0.2
    done
    # Three servers with fresh data directories, so that none is slower for holding more
    # memory than the others: not exporting, exporting every span, exporting a sample.
    $server_cpu target/release/agent-server --addr "127.0.0.1:$untraced_port" --workers 1 \
      --data-dir "$out/untraced-data" >"$out/untraced-server.log" 2>&1 &
    pids+=($!)
    OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$phoenix_port" \
      $server_cpu target/release/agent-server --addr "127.0.0.1:$traced_port" --workers 1 \
      --data-dir "$out/traced-data" >"$out/traced-server.log" 2>&1 &
    pids+=($!)
    OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$phoenix_port" \
      OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0.1 \
      $server_cpu target/release/agent-server --addr "127.0.0.1:$sampled_port" --workers 1 \
      --data-dir "$out/sampled-data" >"$out/sampled-server.log" 2>&1 &
    pids+=($!)
  else
    echo "no Phoenix for (g): run scripts/phoenix-trace-check.sh once to install .venv/phoenix" >&2
    parts=${parts//g/}
  fi
fi
wait_up "$bare_port"
wait_up "$agent_port"
[[ $parts != *d* ]] || wait_up "$upstream_port"
[[ $parts != *g* ]] || { wait_up "$untraced_port"; wait_up "$traced_port"; wait_up "$sampled_port"; }

# judge NAME PORT ARGS...: one `judge load` measurement, its process CPU time in NAME.cpu.
judge() {
  local name=$1 port=$2
  shift 2
  local TIMEFORMAT='%U %S'
  { time $client_cpu target/release/judge load --endpoint "http://127.0.0.1:$port" \
      --threads 1 --duration "${seconds}s" --warmup "${warmup}s" --prompt-tokens 16 \
      --output-tokens 16 --quiet --out "$out/judge/$name" "$@" >"$out/$name.log" 2>&1; } \
    2>"$out/$name.cpu"
}

# collector_idle NAME: waits (up to 60 s) until Phoenix uses under a twentieth of a core, so that
# the backlog of spans an exporting run left is not ingested on the generator's core during the
# next run; how long it took goes to NAME.idle.
collector_idle() {
  local started=$SECONDS before after
  local quiet=$(( $(getconf CLK_TCK) / 40 ))
  for _ in $(seq 120); do
    before=$(awk '{print $14 + $15}' "/proc/$phoenix_pid/stat" 2>/dev/null) || break
    sleep 0.5
    after=$(awk '{print $14 + $15}' "/proc/$phoenix_pid/stat" 2>/dev/null) || break
    (( after - before <= quiet )) && break
  done
  echo "$(( SECONDS - started ))" >"$out/$1.idle"
}

# metrics NAME [PORT]: the agent-server's /metrics, for server-side time per memory operation.
metrics() { curl -fsS "http://127.0.0.1:${2:-$agent_port}/metrics" >"$out/$1.metrics" || true; }

for rep in $(seq "$repeats"); do
  echo "repeat $rep/$repeats" >&2
  if [[ $parts == *a* ]]; then
    # (a) non-streaming, 64 connections
    judge "a-bare-judge-$rep" "$bare_port" --concurrency 64
    # With a baseline, even repeats measure it first: on this machine the first of two
    # back-to-back runs tended to measure faster (scripts/bench/abba.sh), so a fixed order
    # would favour one build.
    if [ -n "$baseline" ] && (( rep % 2 == 0 )); then order="baseline agent"; else order="agent baseline"; fi
    for who in $order; do
      if [ "$who" = agent ]; then
        metrics "a-agent-judge-$rep.before"
        judge "a-agent-judge-$rep" "$agent_port" --concurrency 64
        metrics "a-agent-judge-$rep.after"
      elif [ -n "$baseline" ]; then
        metrics "a-baseline-judge-$rep.before" "$baseline_port"
        judge "a-baseline-judge-$rep" "$baseline_port" --concurrency 64
        metrics "a-baseline-judge-$rep.after" "$baseline_port"
      fi
    done
    if command -v wrk >/dev/null; then
      $client_cpu wrk -t1 -c64 -d"${seconds}s" --latency -s scripts/bench/chat.lua \
        "http://127.0.0.1:$bare_port/v1/chat/completions" >"$out/a-bare-wrk-$rep.log"
      $client_cpu wrk -t1 -c64 -d"${seconds}s" --latency -s scripts/bench/chat.lua \
        "http://127.0.0.1:$agent_port/v1/chat/completions" >"$out/a-agent-wrk-$rep.log"
    fi
  fi
  if [[ $parts == *b* ]]; then
    # (b) streaming, 64 connections (16 output chunks per reply from the bare server)
    judge "b-bare-judge-$rep" "$bare_port" --concurrency 64 --stream
    judge "b-agent-judge-$rep" "$agent_port" --concurrency 64 --stream
  fi
  if [[ $parts == *d* ]]; then
    # (d) time to first token, upstream directly vs through agent-server, 16 connections
    judge "d-direct-judge-$rep" "$bare_port" --concurrency 16 --stream
    judge "d-agent-judge-$rep" "$upstream_port" --concurrency 16 --stream
    # ... and at a rate agent-server sustains (open loop), where no queue hides the overhead
    judge "d-direct-rate-judge-$rep" "$bare_port" --rate 200 --stream
    judge "d-agent-rate-judge-$rep" "$upstream_port" --rate 200 --stream
  fi
  if [[ $parts == *g* ]]; then
    # (g) the same load on a server exporting every span, and on one not exporting, alternately
    # (each exporting run is followed by a wait for Phoenix to finish ingesting its spans)
    judge "g-plain-judge-$rep" "$untraced_port" --concurrency 64
    judge "g-traced-judge-$rep" "$traced_port" --concurrency 64
    collector_idle "g-traced-judge-$rep"
    judge "g-sampled-judge-$rep" "$sampled_port" --concurrency 64
    collector_idle "g-sampled-judge-$rep"
  fi
done

# rss NAME PID: VmRSS and VmHWM of PID, in NAME.rss.
rss() { grep -E '^(VmRSS|VmHWM)' "/proc/$2/status" >"$out/$1.rss"; }
if [[ $parts == *e* ]]; then
  # (e) scale, on a server of its own with a fresh data directory
  $server_cpu target/release/agent-server --addr "127.0.0.1:$scale_port" --workers 1 \
    --data-dir "$out/scale-data" >"$out/scale-server.log" 2>&1 &
  scale_pid=$!
  pids+=("$scale_pid")
  wait_up "$scale_port"
  rss e-idle "$scale_pid"
  judge "e-sessions-1" "$scale_port" --concurrency 64 --sessions 1000
  rss e-sessions "$scale_pid"
  # The sessions `judge load --sessions 1000 --threads 1` (seed 1) sends turns to afterwards.
  python3 scripts/bench/inject_facts.py "http://127.0.0.1:$scale_port" --sessions 1000 \
    --facts 1000 --prefix load-1-w0 >"$out/e-inject.log" 2>"$out/e-inject.progress"
  rss e-facts "$scale_pid"
  judge "e-facts-turns-1" "$scale_port" --concurrency 64 --sessions 1000
  rss e-facts-turns "$scale_pid"
  # The same data with a cache that holds all of it: every session is loaded once, then hit.
  kill "$scale_pid"
  wait "$scale_pid" 2>/dev/null || true
  $server_cpu target/release/agent-server --addr "127.0.0.1:$scale_port" --workers 1 \
    --data-dir "$out/scale-data" --memory-cache-items 1200000 >"$out/scale-big-server.log" 2>&1 &
  scale_pid=$!
  pids+=("$scale_pid")
  wait_up "$scale_port"
  # A first pass loads every session into the cache; the second is measured.
  judge "e-bigcache-warm-1" "$scale_port" --concurrency 64 --sessions 1000
  judge "e-bigcache-turns-1" "$scale_port" --concurrency 64 --sessions 1000
  rss e-bigcache-turns "$scale_pid"
  du -sb "$out/scale-data" >"$out/e-disk.txt"
fi

if [[ $parts == *h* ]]; then
  # (h) the whole machine: fresh servers with 2 workers each, nothing pinned, so the kernel
  # shares both cores between them, the writer thread and the generator.
  target/release/examples/bare_server --port "$machine_bare_port" --workers 2 --chunks 16 \
    2>"$out/machine-bare.log" &
  pids+=($!)
  target/release/agent-server --addr "127.0.0.1:$machine_agent_port" --workers 2 \
    --data-dir "$out/machine-data" >"$out/machine-agent.log" 2>&1 &
  pids+=($!)
  # Upstream mode as in (d), on the whole machine: the bare server is the model.
  target/release/agent-server --addr "127.0.0.1:$machine_upstream_port" --workers 2 \
    --data-dir "$out/machine-upstream-data" \
    --llm-base-url "http://127.0.0.1:$machine_bare_port/v1" >"$out/machine-upstream.log" 2>&1 &
  pids+=($!)
  wait_up "$machine_bare_port"
  wait_up "$machine_agent_port"
  wait_up "$machine_upstream_port"
  pinned_client_cpu=$client_cpu
  client_cpu=""
  for rep in $(seq "$repeats"); do
    judge "h-bare-judge-$rep" "$machine_bare_port" --concurrency 64
    judge "h-agent-judge-$rep" "$machine_agent_port" --concurrency 64
    judge "h-bare-stream-judge-$rep" "$machine_bare_port" --concurrency 64 --stream
    judge "h-agent-stream-judge-$rep" "$machine_agent_port" --concurrency 64 --stream
    judge "h-direct-judge-$rep" "$machine_bare_port" --concurrency 16 --stream
    judge "h-upstream-judge-$rep" "$machine_upstream_port" --concurrency 16 --stream
  done
  client_cpu=$pinned_client_cpu
fi

# (c) judge vs guidellm, streaming, against the bare server: each at its highest rate
# (closed loop at 64 streams, guidellm's `throughput` profile at 64).
# guidellm's CPU per request is its marginal cost: process-tree CPU of a run minus that of a
# one-request run (Python start-up, imports, tokenizer load), over the requests of the run.
guidellm() {
  local name=$1 constraint=$2
  local TIMEFORMAT='%U %S'
  { time HF_HUB_OFFLINE=1 $client_cpu .venv/guidellm/bin/guidellm run \
      --backend "kind=openai_http,target=http://127.0.0.1:$bare_port,model=bare,validate_backend=false" \
      --profile kind=throughput,max_concurrency=64 --constraint "$constraint" \
      --tokenizer "kind=hf_auto,model=$PWD/.venv/guidellm-tokenizer" \
      --data kind=synthetic_text,prompt_tokens=16,output_tokens=16 \
      --output "kind=json,path=$PWD/$out/$name.json" \
      --disable-progress >"$out/$name.log" 2>&1; } 2>"$out/$name.cpu" ||
    echo "guidellm failed: see $out/$name.log" >&2
}
if [[ $parts != *c* ]]; then
  :
elif [ -x .venv/guidellm/bin/guidellm ]; then
  [ -d .venv/guidellm-tokenizer ] ||
    .venv/guidellm/bin/python scripts/bench/make_tokenizer.py .venv/guidellm-tokenizer >/dev/null
  guidellm c-guidellm-startup "kind=max_requests,count=1"
  guidellm c-guidellm "kind=max_duration,seconds=$((seconds * 2))"
else
  echo "no guidellm: python3 -m venv .venv/guidellm && .venv/guidellm/bin/pip install guidellm" >&2
fi
[[ $parts != *c* ]] || judge "c-judge" "$bare_port" --concurrency 64 --stream

python3 scripts/bench/summarise.py "$out" | tee "$out/summary.txt"
