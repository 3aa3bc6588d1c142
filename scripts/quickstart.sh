#!/usr/bin/env bash
# The main job (README): a full benchmark of the bundled agent on its embedded defaults.
#
#   scripts/quickstart.sh [JUDGE LTM FLAGS...]     e.g. scripts/quickstart.sh --trials 5 --seed 7
#
# Builds both binaries (release), starts agent-server on a free loopback port with a fresh data
# directory and no external service, waits until it is ready, runs the judge's long-term-memory
# suite, its simulated-applications suite and its persona simulations against it, prints each
# summary and the path of each report.html, and stops the server. Flags go to `judge ltm`; its exit
# code wins (2: below --fail-under, 3: regression against --baseline), then the others'.
#
# Then the field's benchmark beside our own suites: `judge membench` on one LoCoMo conversation
# (about 200 questions; the agent's answers scored by LoCoMo's token F1, its recall beside a BM25
# reference). LoCoMo is not redistributed with agentwall: LOCOMO names the file, by default
# ../shared/datasets/locomo10.json; without it the script says where to get it.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> building agent-server and judge (release; the first build takes a few minutes)"
cargo build --release --workspace --bin agent-server --bin judge

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
data=$(mktemp -d -t agentwall-quickstart.XXXXXX)
mkdir -p runs
log=runs/agent-server-quickstart.log
target/release/agent-server --addr "127.0.0.1:$port" --data-dir "$data" >"$log" 2>&1 &
server=$!
cleanup() {
  kill -TERM "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
  rm -rf "$data"
}
trap cleanup EXIT

echo "==> agent-server on http://127.0.0.1:$port (log: $log)"
for _ in $(seq 1 100); do
  if curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$server" 2>/dev/null; then echo "agent-server exited; see $log" >&2; exit 1; fi
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null || { echo "agent-server is not ready; see $log" >&2; exit 1; }

echo "==> judge ltm (long-term memory)"
set +e
target/release/judge ltm --endpoint "http://127.0.0.1:$port" --out runs "$@"
status=$?
echo
echo "==> judge apps (simulated applications: the agent operates PayPal)"
target/release/judge apps --endpoint "http://127.0.0.1:$port" --out runs
apps_status=$?
echo
echo "==> judge sim (15-round conversations with the shipped persona panel)"
target/release/judge sim --endpoint "http://127.0.0.1:$port" --out runs
sim_status=$?
echo
locomo=${LOCOMO:-../shared/datasets/locomo10.json}
membench_status=0
if [ -f "$locomo" ]; then
  echo "==> judge membench (LoCoMo, one conversation: the field's benchmark, not written for this agent)"
  target/release/judge membench --endpoint "http://127.0.0.1:$port" --dataset locomo --data "$locomo" \
    --protocol chat --limit-conversations 1 --out runs --quiet
  membench_status=$?
else
  echo "==> judge membench: no LoCoMo file at $locomo, not run. Get data/locomo10.json from the"
  echo "    snap-research/LoCoMo repository on GitHub (CC BY-NC 4.0) and run again with LOCOMO=/path/to/locomo10.json"
fi
set -e
# The LTM verdict (with the caller's --fail-under / --baseline) wins; then the others'.
for s in "$status" "$apps_status" "$sim_status" "$membench_status"; do
  if [ "$s" -ne 0 ]; then exit "$s"; fi
done
