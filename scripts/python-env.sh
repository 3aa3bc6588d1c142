#!/usr/bin/env bash
# Creates .venv with the Python packages the cross-process tests use (the official OpenAI SDK),
# and .venv/inspect with inspect_ai.
# Idempotent: each reinstalls only when its requirements file changed.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if ! command -v "$python" >/dev/null; then
  echo "python3 is needed for the OpenAI SDK tests: apt-get install -y python3 python3-venv" >&2
  exit 1
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum tests/python/requirements.txt | cut -d' ' -f1)
if ! [ -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$python" -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
  echo "$want" > "$stamp"
  echo "python test environment ready: .venv ($(.venv/bin/python -c 'import openai; print("openai", openai.__version__)'))"
fi
# inspect_ai (tests/client_harnesses.rs) in a virtualenv of its own, .venv/inspect: it pins its own
# versions, which need not agree with LiteLLM's.
inspect_stamp=.venv/inspect/.requirements.sha256
inspect_want=$(sha256sum tests/python/inspect-requirements.txt | cut -d' ' -f1)
if ! [ -x .venv/inspect/bin/inspect ] || [ "$(cat "$inspect_stamp" 2>/dev/null)" != "$inspect_want" ]; then
  "$python" -m venv .venv/inspect
  .venv/inspect/bin/pip install --quiet --disable-pip-version-check -r tests/python/inspect-requirements.txt
  echo "$inspect_want" > "$inspect_stamp"
  echo "inspect_ai ready: .venv/inspect"
fi
# The official MCP SDK and the OpenAI Agents SDK (tests/apps_mcp.rs) in .venv/agents: the Agents
# SDK pins its own openai version.
agents_stamp=.venv/agents/.requirements.sha256
agents_want=$(sha256sum tests/python/agents-requirements.txt | cut -d' ' -f1)
if ! [ -x .venv/agents/bin/python ] || [ "$(cat "$agents_stamp" 2>/dev/null)" != "$agents_want" ]; then
  "$python" -m venv .venv/agents
  .venv/agents/bin/pip install --quiet --disable-pip-version-check -r tests/python/agents-requirements.txt
  echo "$agents_want" > "$agents_stamp"
  echo "MCP and Agents SDKs ready: .venv/agents"
fi
# The official A2A SDK (tests/a2a.rs: an A2A agent the judge benchmarks) in .venv/a2a: it pins its
# own protobuf and starlette.
a2a_stamp=.venv/a2a/.requirements.sha256
a2a_want=$(sha256sum tests/python/a2a-requirements.txt | cut -d' ' -f1)
if ! [ -x .venv/a2a/bin/python ] || [ "$(cat "$a2a_stamp" 2>/dev/null)" != "$a2a_want" ]; then
  "$python" -m venv .venv/a2a
  .venv/a2a/bin/pip install --quiet --disable-pip-version-check -r tests/python/a2a-requirements.txt
  echo "$a2a_want" > "$a2a_stamp"
  echo "A2A SDK ready: .venv/a2a ($(.venv/a2a/bin/python -c 'import importlib.metadata as m; print("a2a-sdk", m.version("a2a-sdk"))'))"
fi
