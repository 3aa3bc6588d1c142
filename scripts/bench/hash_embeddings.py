#!/usr/bin/env python3
"""An OpenAI-compatible /v1/embeddings endpoint that costs next to nothing: each text's vector is
a hashed bag of its words (384 dimensions, L2-normalised), so texts that share words are similar
and a benchmark of agent-server with semantic recall measures the memory layer, not a model's CPU.

    python3 scripts/bench/hash_embeddings.py PORT

Serves on 127.0.0.1:PORT until killed. Standard library only.
"""
import hashlib
import json
import math
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIMS = 384
WORD = re.compile(r"[a-z0-9']+")


def embed(text):
    vector = [0.0] * DIMS
    for word in WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "little") % DIMS
        vector[slot] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0:
        vector[0], norm = 1.0, 1.0
    return [x / norm for x in vector]


class Handler(BaseHTTPRequestHandler):
    # Keep-alive, as agent-server's client expects: under HTTP/1.0 each reply closed its
    # connection, and a request sent on a pooled one just closed failed ("connector has been
    # disconnected"), leaving those turns without vectors.
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: with Nagle's algorithm the body waits for the
    # client's delayed ACK, 40 ms a request.
    disable_nagle_algorithm = True

    def do_POST(self):
        if not self.path.rstrip("/").endswith("/embeddings"):
            self.send_error(404)
            return
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        reply = json.dumps({
            "object": "list",
            "model": body.get("model", "hash-384"),
            "data": [{"object": "embedding", "index": i, "embedding": embed(t)}
                     for i, t in enumerate(texts)],
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
