#!/usr/bin/env bash
# Creates .venv with the Python packages the cross-process tests use (the official OpenAI SDK).
# Idempotent: reinstalls only when tests/python/requirements.txt changed.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if ! command -v "$python" >/dev/null; then
  echo "python3 is needed for the OpenAI SDK tests: apt-get install -y python3 python3-venv" >&2
  exit 1
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum tests/python/requirements.txt | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
"$python" -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
echo "$want" > "$stamp"
echo "python test environment ready: .venv ($(.venv/bin/python -c 'import openai; print("openai", openai.__version__)'))"
