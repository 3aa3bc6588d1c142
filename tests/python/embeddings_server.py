"""An OpenAI-compatible embeddings server for tests, with fault switches.

Serves `POST /v1/embeddings` (and `/embeddings`) from the numpy forward pass of
embeddings/tests/reference/minilm_numpy.py: all-MiniLM-L6-v2 computed independently of the Rust
crate that agent-server embeds with in process. Standard library and numpy only.

Usage: embeddings_server.py MODEL_DIR [--port PORT] [--api-key KEY] [--fault MODE] [--delay S]
Prints `listening on 127.0.0.1:PORT` once the model is loaded (port 0 picks a free port).

Faults, set at start (--fault) or at any time with `POST /control/fault {"mode": M, "delay": S}`:
  none             answer normally
  error            HTTP 500 with an OpenAI error body
  rate-limit       HTTP 429 with `Retry-After: 7`
  slow             sleep S seconds (--delay), then answer normally
  wrong-dimension  every vector one component short
  wrong-count      one vector fewer than inputs
  not-json         HTTP 200 with an HTML page
  nan              NaN in the first vector (Python's json writes it; it is not JSON)
`GET /control/requests` lists what was received (path, model, input count, auth and trace
headers); `POST /control/reset` clears that list.
"""

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# One BLAS thread: the matrices are small, and BLAS threads that spin for work on a busy machine
# made each request ten times slower.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "embeddings" / "tests" / "reference"))
from minilm_numpy import Model  # noqa: E402

FAULTS = {"none", "error", "rate-limit", "slow", "wrong-dimension", "wrong-count", "not-json", "nan"}


class State:
    def __init__(self, model, api_key, fault, delay):
        self.model, self.api_key = model, api_key
        self.fault, self.delay = fault, delay
        self.requests = []
        self.lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: State

    def log_message(self, *args):
        pass

    def send(self, status, body, content_type="application/json", headers=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting (the `slow` fault)

    def error(self, status, message, headers=()):
        self.send(status, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}, headers=headers)

    def body(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw or b"{}")

    def do_GET(self):
        if self.path == "/control/requests":
            with self.state.lock:
                self.send(200, {"requests": list(self.state.requests)})
        else:
            self.error(404, f"no route for GET {self.path}")

    def do_POST(self):
        state = self.state
        if self.path == "/control/fault":
            body = self.body()
            mode = body.get("mode", "none")
            if mode not in FAULTS:
                return self.error(400, f"unknown fault {mode!r}; one of {sorted(FAULTS)}")
            with state.lock:
                state.fault, state.delay = mode, float(body.get("delay", state.delay))
            return self.send(200, {"mode": state.fault, "delay": state.delay})
        if self.path == "/control/reset":
            with state.lock:
                state.requests.clear()
            return self.send(200, {})
        if self.path not in ("/v1/embeddings", "/embeddings"):
            return self.error(404, f"no route for POST {self.path}")
        try:
            body = self.body()
        except ValueError as e:
            return self.error(400, f"the body is not JSON: {e}")
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        with state.lock:
            state.requests.append({
                "path": self.path,
                "model": body.get("model"),
                "inputs": len(texts) if isinstance(texts, list) else None,
                "encoding_format": body.get("encoding_format"),
                "authorization": self.headers.get("authorization"),
                "traceparent": self.headers.get("traceparent"),
            })
            fault, delay = state.fault, state.delay
        if state.api_key and self.headers.get("authorization") != f"Bearer {state.api_key}":
            return self.error(401, "Incorrect API key provided")
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return self.error(400, "input must be a string or a non-empty array of strings")
        if not body.get("model"):
            return self.error(400, "model is required")
        if fault == "error":
            return self.error(500, "injected failure: the embedding model crashed")
        if fault == "rate-limit":
            return self.error(429, "Rate limit reached for requests", headers=[("retry-after", "7")])
        if fault == "not-json":
            return self.send(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
        if fault == "slow":
            time.sleep(delay)
        if fault in ("wrong-dimension", "wrong-count", "nan"):
            # Garbage needs no forward pass: unit vectors of the model's dimension, spoiled.
            dimension = state.model.config["hidden_size"]
            vectors = [[1.0] + [0.0] * (dimension - 1) for _ in texts]
        else:
            vectors = state.model.embed(texts)
        if fault == "wrong-dimension":
            vectors = [v[:-1] for v in vectors]
        if fault == "wrong-count":
            vectors = vectors[:-1]
        if fault == "nan":
            vectors[0][0] = float("nan")
        tokens = sum(len(state.model.tokenizer.encode(t)) for t in texts)
        self.send(200, {
            "object": "list",
            "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
            "model": body["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        })


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--api-key")
    parser.add_argument("--fault", choices=sorted(FAULTS), default="none")
    parser.add_argument("--delay", type=float, default=5.0)
    args = parser.parse_args()
    Handler.state = State(Model(args.model_dir), args.api_key, args.fault, args.delay)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
