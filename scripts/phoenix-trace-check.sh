#!/usr/bin/env bash
# One trace from caller to model in a real Arize Phoenix (tests/python/phoenix_trace_check.py):
# starts Phoenix, a LiteLLM mock upstream and agent-server (exporting spans over OTLP/HTTP), all on
# 127.0.0.1 and offline, sends one traced turn and checks what Phoenix received.
#
# Phoenix lives in its own virtualenv, .venv/phoenix (tests/python/phoenix-requirements.txt): it is
# large and pins its own versions. Reinstalled only when that file changes.
#
#   scripts/phoenix-trace-check.sh          # the check (scripts/test.sh runs it)
#   scripts/phoenix-trace-check.sh --keep   # and leave Phoenix running to open the trace in its UI
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
venv=.venv/phoenix
requirements=tests/python/phoenix-requirements.txt
stamp=$venv/.requirements.sha256
want=$(sha256sum "$requirements" | cut -d' ' -f1)
scripts/python-env.sh # .venv: LiteLLM, the upstream
if ! [ -x "$venv/bin/phoenix" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  echo "$want" > "$stamp"
fi
cargo build --quiet -p agent-server --bin agent-server
target=${CARGO_TARGET_DIR:-target}
exec "$venv/bin/python" tests/python/phoenix_trace_check.py \
  --agent-server "$(realpath "$target/debug/agent-server")" --litellm "$PWD/.venv/bin/litellm" "$@"
