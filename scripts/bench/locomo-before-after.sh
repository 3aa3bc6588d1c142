#!/usr/bin/env bash
# LoCoMo evidence recall of two agent-server builds on both backends, in one run: `judge membench
# --protocol chat` ingests LoCoMo into each build (embedded store, then Redis + Postgres), with
# semantic recall through the hashed embeddings endpoint of scripts/bench/hash_embeddings.py, and
# the judge's recall@k of each run is printed side by side. For a change that must not move what
# is recalled (docs/results/semantic-recall.md).
#
#   BENCH_OLD_BINARY=/tmp/agent-server-old scripts/bench/locomo-before-after.sh
#       # the old build: e.g. `git worktree add /tmp/old <rev>` and a release build there
#
# Needs the dataset (BENCH_LOCOMO, default ../shared/datasets/locomo10.json) and the test
# services (scripts/test-services.sh, started in a folder of their own here). About 2 minutes a
# run on an idle machine; writes runs/locomo-before-after-<time>/.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/lib.sh
old=${BENCH_OLD_BINARY:?set BENCH_OLD_BINARY to the agent-server binary to compare with}
data=${BENCH_LOCOMO:-../shared/datasets/locomo10.json}
port=${BENCH_PORT:-18291}
embed_port=${BENCH_EMBED_PORT:-18292}
out=runs/locomo-before-after-$(date -u +%Y%m%dT%H%M%SZ)
cargo build --release --locked -p agent-server -p judge-client --bins >&2

start_memory_bench "$embed_port"

for backend in embedded redis+postgres; do
  for build in old new; do
    binary=./target/release/agent-server
    [ "$build" = old ] && binary=$old
    memory=()
    [ "$backend" = redis+postgres ] && fresh_redis_pg "locomo_${build}_$$"
    "$binary" --addr "127.0.0.1:$port" --data-dir "$work/data-$build-$backend" \
      --embeddings-base-url "http://127.0.0.1:$embed_port/v1" --embeddings-model hash-384 \
      "${memory[@]}" > "$work/agent-$build-$backend.log" 2>&1 &
    server=$!
    wait_up "$port" 30
    ./target/release/judge membench --endpoint "http://127.0.0.1:$port" --dataset locomo \
      --data "$data" --protocol chat --concurrency 4 --seed 1 --quiet \
      --out "$out/$build-$backend" >&2
    stop_server
    drop_database
  done
done
python3 - "$out" <<'PY'
import glob, json, sys
for backend in ["embedded", "redis+postgres"]:
    for build in ["old", "new"]:
        s = json.load(open(glob.glob(f"{sys.argv[1]}/{build}-{backend}/*/results.json")[0]))["summary"]
        cats = {c["category"]: c for c in s["categories"]}
        n = sum(cats[c]["recall_questions"] for c in "1234")
        r14 = sum(cats[c]["agent_recall"]["8"] * cats[c]["recall_questions"] for c in "1234") / n
        o = s["overall"]
        print(f"{backend:15} {build}: recall@8 all {100*o['agent_recall']['8']:.2f} %, "
              f"categories 1-4 {100*r14:.2f} %, BM25 {100*o['bm25_recall']['8']:.2f} %, "
              f"failed {o['failed']}")
PY
echo "runs: $out" >&2
