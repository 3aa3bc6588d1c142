#!/usr/bin/env bash
# The test command (README): provisions everything the tests need on this machine, then runs the
# whole workspace's tests. Nothing is skipped: a missing service or tool is an error that says
# what to install.
#
#   1. the Python clients' virtualenvs (scripts/python-env.sh: the OpenAI, MCP, Agents and A2A
#      SDKs, LiteLLM, inspect_ai); promptfoo
#      (`npm ci` in tests/clients/promptfoo); for the dashboard's
#      browser test, Debian's chromium, node 20+ and npm (installed with apt-get when run as
#      root) and playwright-core (`npm ci` in judge-client/tests/browser, skipped when the
#      installed packages already match the lockfile)
#   2. throwaway Redis and Postgres instances (scripts/test-services.sh), stopped on exit
#   3. the binaries the cross-process tests start
#   4. cargo nextest (installed with `cargo install` when missing)
#   5. the Arize Phoenix trace check (scripts/phoenix-trace-check.sh)
#
# A real language model serves the tests in tests/real_model.rs: scripts/real-model.sh starts
# llama.cpp's server of SmolLM2-135M (its virtualenv is built once per machine, about 11 minutes
# on 2 cores, then cached under ~/.cache/agentwall/) and stops it on exit.
#   6. the deployment files (scripts/validate-deploy.sh)
#   7. `docker compose up` for real (scripts/compose-check.sh: podman and Docker Compose v2 from
#      Debian's packages, stand-in images built from Debian's packages, the binaries of step 3)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/python-env.sh

# The dashboard's browser test (judge-client/tests/serve_browser.rs) drives Debian's chromium
# with playwright-core under node. Installs happen only when something is missing.
apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    if [ -z "${apt_updated:-}" ]; then apt-get update -qq; apt_updated=1; fi
    apt-get install -y -qq "$@"
  else
    echo "test.sh: $1 is missing for the dashboard's browser test: run 'sudo apt-get install -y $*'" >&2
    exit 1
  fi
}
if [ -z "${CHROMIUM:-}" ] && ! [ -x /usr/bin/chromium ]; then
  apt_install chromium
fi
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ] || ! command -v npm >/dev/null; then
  apt_install nodejs npm
  node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  if [ "$node_major" -lt 20 ]; then
    echo "test.sh: playwright-core needs node 20 or newer, this machine has $(node --version 2>/dev/null || echo none): install node 20+ (Debian 12 ships node 18: take nodejs from a newer release or backports)" >&2
    exit 1
  fi
fi
# `npm ci` once per lockfile: its hash is stamped into node_modules when the install succeeds.
npm_ci_once() {
  local dir=$1 lock_hash
  lock_hash=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [ "$(cat "$dir/node_modules/.lock-sha256" 2>/dev/null)" != "$lock_hash" ]; then
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$lock_hash" > "$dir/node_modules/.lock-sha256"
  fi
}
npm_ci_once judge-client/tests/browser
# promptfoo, a real client harness agent-server is tested with (tests/client_harnesses.rs).
npm_ci_once tests/clients/promptfoo

services_env=$(mktemp)
cleanup() {
  scripts/real-model.sh stop >/dev/null 2>&1 || true
  scripts/test-services.sh stop >/dev/null 2>&1 || true
  rm -f "$services_env"
}
trap cleanup EXIT
scripts/test-services.sh start > "$services_env"
# shellcheck disable=SC1090
source "$services_env"
: "${AGENTWALL_TEST_REDIS_URL:?scripts/test-services.sh did not export AGENTWALL_TEST_REDIS_URL}"
: "${AGENTWALL_TEST_DATABASE_URL:?scripts/test-services.sh did not export AGENTWALL_TEST_DATABASE_URL}"
export AGENTWALL_TEST_REDIS_URL AGENTWALL_TEST_DATABASE_URL
export AGENTWALL_PYTHON="$PWD/.venv/bin/python"

scripts/real-model.sh start > "$services_env"
# shellcheck disable=SC1090
source "$services_env"
: "${AGENTWALL_REAL_MODEL_URL:?scripts/real-model.sh did not export AGENTWALL_REAL_MODEL_URL}"
export AGENTWALL_REAL_MODEL_URL AGENTWALL_REAL_MODEL_NAME

cargo build --workspace --bins
# nextest runs each test in a process of its own: a test that hangs or crashes takes only itself
# down, and its output is kept apart. No test needs that: each server and store has its own
# metrics (no process-wide state), so plain `cargo test --workspace`, with this environment,
# passes too. Installed once where missing (a few minutes' build, from crates.io), at the version
# these tests were run with.
if ! cargo nextest --version >/dev/null 2>&1; then
  echo "test: installing cargo-nextest (once per machine)" >&2
  cargo install --locked cargo-nextest@0.9.143
fi
cargo nextest run --workspace --no-fail-fast "$@"

# One trace from caller to model, checked in a real Arize Phoenix (its own virtualenv).
scripts/phoenix-trace-check.sh

# Every citation in code and docs resolves inside the repository (docs/contracts/, docs/results/).
scripts/check-citations.sh

# docker-compose.yml, the Kubernetes manifests and the Dockerfiles, validated without Docker or a
# cluster (schemas, hadolint, structure checks; validators in their own virtualenv).
scripts/validate-deploy.sh

# docker-compose.yml run as users run it, with the binaries built above in the images' runtime
# stages (`scripts/compose-check.sh --dockerfile` builds them with the Dockerfiles' own stages).
scripts/compose-check.sh
