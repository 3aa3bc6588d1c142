#!/usr/bin/env bash
# The test command (README): provisions everything the tests need on this machine, then runs the
# whole workspace's tests. Nothing is skipped: a missing service or tool is an error that says
# what to install.
#
#   1. .venv with the official OpenAI Python SDK (scripts/python-env.sh); Debian's chromium for
#      the dashboard's browser test (installed with apt-get when run as root)
#   2. throwaway Redis and Postgres instances (scripts/test-services.sh), stopped on exit
#   3. the binaries the cross-process tests start
#   4. cargo nextest (or cargo test when nextest is not installed)
#   5. the Arize Phoenix trace check (scripts/phoenix-trace-check.sh)
#   6. the deployment files (scripts/validate-deploy.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/python-env.sh

# The dashboard's browser test (judge-client/tests/serve_browser.rs) drives Debian's chromium.
if [ -z "${CHROMIUM:-}" ] && ! [ -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq chromium
  else
    echo "test.sh: headless Chromium is missing: run 'sudo apt-get install -y chromium' (or set CHROMIUM to a Chromium binary)" >&2
    exit 1
  fi
fi

services_env=$(mktemp)
cleanup() {
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

cargo build --workspace --bins
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast "$@"
else
  cargo test --workspace --no-fail-fast "$@"
fi

# One trace from caller to model, checked in a real Arize Phoenix (its own virtualenv).
scripts/phoenix-trace-check.sh

# docker-compose.yml, the Kubernetes manifests and the Dockerfiles, validated without Docker or a
# cluster (schemas, hadolint, structure checks; validators in their own virtualenv).
scripts/validate-deploy.sh
