#!/usr/bin/env bash
# Creates the virtualenvs of the Python packages the cross-process tests use, each from its
# requirements file in tests/python/, each of its own because their pins need not agree:
#
#   .venv          the official OpenAI SDK, LiteLLM's proxy, numpy (requirements.txt)
#   .venv/inspect  inspect_ai (tests/client_harnesses.rs; inspect-requirements.txt)
#   .venv/agents   the official MCP SDK and the OpenAI Agents SDK, which pins its own openai
#                  (tests/apps_mcp.rs; agents-requirements.txt)
#   .venv/a2a      the official A2A SDK, which pins its own protobuf and starlette (tests/a2a.rs,
#                  tests/a2a_sdk.rs; a2a-requirements.txt)
#
# Idempotent: each is rebuilt only when its requirements file changed (its hash is stamped in it).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if ! command -v "$python" >/dev/null; then
  echo "python3 is needed for the Python client tests: apt-get install -y python3 python3-venv" >&2
  exit 1
fi

# venv DIR REQUIREMENTS LABEL: DIR holds REQUIREMENTS' packages.
venv() {
  local dir=$1 requirements=$2 label=$3 stamp want
  stamp=$dir/.requirements.sha256
  want=$(sha256sum "$requirements" | cut -d' ' -f1)
  if ! [ -x "$dir/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    "$python" -m venv "$dir"
    "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    echo "$want" > "$stamp"
    echo "$label ready: $dir"
  fi
}

venv .venv tests/python/requirements.txt "the OpenAI SDK and LiteLLM"
venv .venv/inspect tests/python/inspect-requirements.txt "inspect_ai"
venv .venv/agents tests/python/agents-requirements.txt "the MCP and Agents SDKs"
venv .venv/a2a tests/python/a2a-requirements.txt "the A2A SDK"
