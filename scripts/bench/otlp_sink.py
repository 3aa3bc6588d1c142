"""A minimal OTLP/HTTP trace sink for scripts/bench/trace-export.sh: answers 200 to every POST,
decoding nothing, so that what a benchmark measures is the exporting server's cost, not a
collector's. GET / returns the number of POSTs and bytes received.

    python3 scripts/bench/otlp_sink.py PORT
"""

import http.server
import sys

received = {"posts": 0, "bytes": 0}


class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a collector would

    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        self.rfile.read(length)
        received["posts"] += 1
        received["bytes"] += length
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self):
        body = f'{received["posts"]} {received["bytes"]}\n'.encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
