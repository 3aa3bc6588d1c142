#!/usr/bin/env bash
# The calibration ladder: runs the judge's suites against a ladder of agent-servers
# whose order is known by construction, then `judge calibrate` reads the runs and says, per
# suite, whether the suite orders the rungs, with intervals, and how far apart adjacent rungs are
# in noise floors. The judge stays outside agent-server: each rung is an agent-server process
# started here with the rung's switches, on a free loopback port, with a data directory in a
# temporary folder, stopped (by its own PID) before the next rung starts.
#
#   scripts/calibrate.sh [OPTIONS]
#
# Rungs, lowest first (--rungs picks and orders them):
#   none        --memory off; judge --history new (ltm) / --protocol chat (membench): a stateless target
#   working     --recall-limit 0 --episodes false: working memory (and standing rules and reminders),
#               no fact or episode recalled
#   facts       --episodes false: facts, no episodes
#   episodes    the defaults: facts and episodes
#   embeddings  the defaults plus --embeddings-model-dir (all-MiniLM-L6-v2 in process)
#   full        --memory off; judge --history full (ltm) / --protocol context (membench): the
#               conversation in every request, the upper reference
#
# Suites (--suites): ltm (standard phrasing), ltm-heldout (--phrasing heldout), membench (LoCoMo).
#
# Options:
#   --out DIR             where the runs and the tables go (default runs/calibration-<UTC time>)
#   --rungs LIST          comma-separated rungs (default none,working,facts,episodes,embeddings,full)
#   --suites LIST         comma-separated suites (default ltm,ltm-heldout,membench)
#   --bin DIR             folder of the agent-server and judge binaries (default target/release;
#                         nothing is built here)
#   --seed N              seed of every run (default 1)
#   --trials N            judge ltm --trials (default 3)
#   --types LIST          judge ltm --types (default all 14)
#   --conversations N     LoCoMo conversations (default 10)
#   --sessions N          LoCoMo sessions ingested per conversation (default all; only questions
#                         whose evidence lies in them are asked)
#   --questions N         LoCoMo questions per conversation (default all)
#   --locomo FILE         LoCoMo's locomo10.json (default ../shared/datasets/locomo10.json)
#   --embeddings-model-dir DIR   the model of the `embeddings` rung (default: scripts/embedding-model.sh's)
#   -h, --help            this help
#
# Writes DIR/<suite>/<rung>/<run-id>/ (the judge's run directories), DIR/<suite>/calibration.md
# and .json (the ladder, from `judge calibrate`; membench also by the agent's evidence recall@8,
# without the full-history rung, in DIR/membench-recall/), DIR/agent-server-<rung>.log and DIR/timings.tsv (seconds per run).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

out="runs/calibration-$(date -u +%Y%m%dT%H%M%SZ)"
rungs=none,working,facts,episodes,embeddings,full
suites=ltm,ltm-heldout,membench
bin=target/release
seed=1
trials=3
types=
conversations=10
questions=
sessions=
locomo=../shared/datasets/locomo10.json
model_dir=
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --rungs) rungs=$2; shift 2 ;;
    --suites) suites=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --conversations) conversations=$2; shift 2 ;;
    --questions) questions=$2; shift 2 ;;
    --sessions) sessions=$2; shift 2 ;;
    --locomo) locomo=$2; shift 2 ;;
    --embeddings-model-dir) model_dir=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "calibrate.sh: unknown option $1 (see --help)" >&2; exit 1 ;;
  esac
done

IFS=, read -r -a rung_list <<<"$rungs"
IFS=, read -r -a suite_list <<<"$suites"
for rung in "${rung_list[@]}"; do
  case $rung in
    none | working | facts | episodes | embeddings | full) ;;
    *) echo "calibrate.sh: unknown rung '$rung' (none, working, facts, episodes, embeddings, full)" >&2; exit 1 ;;
  esac
done
for suite in "${suite_list[@]}"; do
  case $suite in
    ltm | ltm-heldout) ;;
    membench)
      if [ ! -f "$locomo" ]; then
        echo "calibrate.sh: no LoCoMo file at $locomo (give --locomo, or leave membench out of --suites)" >&2
        exit 1
      fi ;;
    *) echo "calibrate.sh: unknown suite '$suite' (ltm, ltm-heldout, membench)" >&2; exit 1 ;;
  esac
done
if [ "${#rung_list[@]}" -lt 2 ]; then
  echo "calibrate.sh: a ladder needs at least two rungs" >&2
  exit 1
fi
for b in agent-server judge; do
  if [ ! -x "$bin/$b" ]; then
    echo "calibrate.sh: no $bin/$b; build it first (cargo build --release --workspace --bins) or give --bin" >&2
    exit 1
  fi
done
judge=$bin/judge
for rung in "${rung_list[@]}"; do
  if [ "$rung" = embeddings ] && [ -z "$model_dir" ]; then
    model_dir=$(scripts/embedding-model.sh)
  fi
done

# Human-readable labels of the rungs, for the tables.
label() {
  case $1 in
    none) echo "no memory" ;;
    working) echo "working memory only" ;;
    facts) echo "facts only" ;;
    episodes) echo "facts + episodes" ;;
    embeddings) echo "episodes + embeddings" ;;
    full) echo "full history (reference)" ;;
  esac
}

# agent-server's switches of a rung, into the array `flags`.
set_flags() {
  case $1 in
    none | full) flags=(--memory off) ;;
    working) flags=(--recall-limit 0 --episodes false) ;;
    facts) flags=(--episodes false) ;;
    episodes) flags=() ;;
    embeddings) flags=(--embeddings-model-dir "$model_dir" --embeddings-model all-MiniLM-L6-v2) ;;
  esac
}

mkdir -p "$out"
data=$(mktemp -d -t agentwall-calibrate.XXXXXX)
server=
flags=()
stop_server() {
  if [ -n "$server" ]; then
    if kill -TERM "$server" 2>/dev/null; then wait "$server" 2>/dev/null || true; fi
    server=
  fi
}
cleanup() {
  stop_server
  rm -rf "$data"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_server() {
  local rung=$1 port log
  port=$(free_port)
  log=$out/agent-server-$rung.log
  set_flags "$rung"
  "$bin/agent-server" --addr "127.0.0.1:$port" --data-dir "$data/$rung" "${flags[@]}" >"$log" 2>&1 &
  server=$!
  endpoint=http://127.0.0.1:$port
  for _ in $(seq 1 600); do
    if curl -fsS "$endpoint/readyz" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$server" 2>/dev/null; then
      echo "calibrate.sh: agent-server ($rung) exited; see $log" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "calibrate.sh: agent-server ($rung) not ready after 60 s; see $log" >&2
  exit 1
}

# The one run directory the judge made under $1.
run_dir_in() {
  local dirs=("$1"/*/)
  if [ "${#dirs[@]}" -ne 1 ] || [ ! -d "${dirs[0]}" ]; then
    echo "calibrate.sh: expected one run directory in $1" >&2
    exit 1
  fi
  echo "${dirs[0]%/}"
}

printf 'suite\trung\tseconds\n' >"$out/timings.tsv"
for rung in "${rung_list[@]}"; do
  set_flags "$rung"
  echo "==> rung $rung ($(label "$rung")): agent-server ${flags[*]}"
  start_server "$rung"
  for suite in "${suite_list[@]}"; do
    dest=$out/$suite/$rung
    rm -rf "$dest"
    mkdir -p "$dest"
    cmd=()
    case $suite in
      ltm | ltm-heldout)
        cmd=("$judge" ltm --endpoint "$endpoint" --seed "$seed" --trials "$trials" --out "$dest" --quiet)
        [ "$suite" = ltm-heldout ] && cmd+=(--phrasing heldout)
        [ -n "$types" ] && cmd+=(--types "$types")
        if [ "$rung" = full ]; then cmd+=(--history full); else cmd+=(--history new); fi
        ;;
      membench)
        cmd=("$judge" membench --endpoint "$endpoint" --dataset locomo --data "$locomo" --seed "$seed"
          --limit-conversations "$conversations" --out "$dest" --quiet)
        [ -n "$questions" ] && cmd+=(--limit-questions "$questions")
        [ -n "$sessions" ] && cmd+=(--limit-sessions "$sessions")
        if [ "$rung" = full ]; then cmd+=(--protocol context); else cmd+=(--protocol chat); fi
        ;;
    esac
    echo "    $suite: ${cmd[*]}"
    started=$(date +%s)
    status=0
    "${cmd[@]}" >"$dest/judge.out" 2>&1 || status=$?
    # 2 is a score below --fail-under, which is not given here: any non-zero exit is a failure.
    if [ "$status" -ne 0 ]; then
      echo "calibrate.sh: $suite against rung $rung exited $status; see $dest/judge.out" >&2
      exit 1
    fi
    echo -e "$suite\t$rung\t$(($(date +%s) - started))" >>"$out/timings.tsv"
  done
  stop_server
done

# The ladders: one per suite, rungs in the order given.
for suite in "${suite_list[@]}"; do
  args=()
  recall_args=()
  for rung in "${rung_list[@]}"; do
    args+=("$(label "$rung")=$(run_dir_in "$out/$suite/$rung")")
    # The full-history rung puts the conversation in the prompt and stores nothing: no recall.
    [ "$rung" = full ] || recall_args+=("${args[-1]}")
  done
  echo
  echo "==> $suite"
  "$judge" calibrate --out "$out/$suite" "${args[@]}"
  if [ "$suite" = membench ] && [ "${#recall_args[@]}" -ge 2 ]; then
    echo
    echo "==> membench, by the agent's evidence recall@8 (POST /control/memory/recall)"
    "$judge" calibrate --measure recall@8 --out "$out/membench-recall" "${recall_args[@]}"
  fi
done
echo
echo "ladders: $out/<suite>/calibration.md and calibration.json; timings: $out/timings.tsv"
