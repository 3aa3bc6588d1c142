# Shared by the benchmark scripts; source it: `source "$(dirname "$0")/bench/lib.sh"`.

# wait_up PORT [SECONDS]: waits until the server on 127.0.0.1:PORT answers GET /v1/models (10 s
# by default); exits the script, saying so, if it never does.
wait_up() {
  local tries=$(( ${2:-10} * 10 ))
  for _ in $(seq "$tries"); do
    curl -fsS "http://127.0.0.1:$1/v1/models" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server on port $1 did not start" >&2
  exit 1
}
