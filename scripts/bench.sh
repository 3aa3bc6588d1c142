#!/usr/bin/env bash
# Most figures of docs/benchmarks.md in one command (the rows comparing two builds, the
# Responses API row and the LoCoMo row have their own commands there). Each part prints its
# table; the load part also keeps its raw results under runs/bench-load-<time>/.
#
#   scripts/bench.sh                       # everything (about 15 minutes on 2 cores)
#   BENCH_SECONDS=5 BENCH_REPEATS=1 scripts/bench.sh   # quicker, noisier
#
# Needs: guidellm in .venv/guidellm for part (c) and Arize Phoenix in .venv/phoenix for part (g)
# (scripts/bench-load.sh says how to install each when missing; those parts are then left out
# with a message); valgrind for the instruction counts; redis-server and Postgres binaries for
# the redis+postgres rows (throwaway instances from scripts/test-services.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== load: bare server, agent-server, streaming, judge vs guidellm, upstream TTFT, scale, tracing"
scripts/bench-load.sh

echo "== trace export: the server's own cost, exporting to a sink that decodes nothing"
scripts/bench/trace-export.sh

echo "== recall latency against facts per session (embedded, then redis+postgres)"
cargo bench --quiet -p agent-server --bench recall_scaling
scripts/test-services.sh run cargo bench --quiet -p agent-server --bench recall_scaling -- \
  --backend redis+postgres --queries 300

echo "== chat turns per memory backend (embedded, redis+postgres)"
scripts/test-services.sh run cargo bench --quiet --bench memory_turns -- --concurrency 1,16,64

if command -v valgrind >/dev/null; then
  echo "== instructions per builtin turn (callgrind)"
  scripts/bench/turn-instructions.sh target/release/agent-server
else
  echo "== instructions per builtin turn: left out, needs valgrind"
fi
