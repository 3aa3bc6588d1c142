"""Stand-in for Jaeger and Arize Phoenix in scripts/compose-check.sh, whose images no registry here
carries: an OTLP/HTTP trace receiver that counts the spans each service sends.

    POST /v1/traces      OTLP/HTTP, protobuf or JSON: answered 200, spans counted by service.name
    GET  /api/services   {"data": [service names]} (the shape of Jaeger's query API)
    GET  /api/spans      {"service name": span count}

Every service seen is also printed (`otlp-standin: spans service=NAME total=N`), so the check can
read it from `docker compose logs` after the containers stopped.

Ports come from OTLP_PORT and UI_PORT (the same port serves both when they are equal, as Phoenix's
6006 does). The protobuf is walked by hand (about 40 lines, below) because the stand-in image has no
OpenTelemetry package and is built from Debian's python3 alone.
"""

import http.server
import json
import os
import signal
import sys
import threading

spans = {}
lock = threading.Lock()


def varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def fields(buf):
    """(field number, wire type, value) of one protobuf message; length-delimited values as bytes."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            length, i = varint(buf, i)
            value, i = buf[i:i + length], i + length
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def from_protobuf(body):
    """ExportTraceServiceRequest: resource_spans = 1 { resource = 1 { attributes = 1 KeyValue },
    scope_spans = 2 { spans = 2 } }; KeyValue: key = 1, value = 2 AnyValue { string_value = 1 }."""
    for number, _, resource_spans in fields(body):
        if number != 1:
            continue
        service, count = "unknown", 0
        for n, _, part in fields(resource_spans):
            if n == 1:
                for a, _, attribute in fields(part):
                    if a != 1:
                        continue
                    kv = {k: v for k, _, v in fields(attribute)}
                    if kv.get(1) == b"service.name":
                        service = next((v.decode() for k, _, v in fields(kv.get(2, b"")) if k == 1), service)
            elif n == 2:
                count += sum(1 for s, _, _ in fields(part) if s == 2)
        yield service, count


def from_json(body):
    for resource_spans in json.loads(body).get("resourceSpans", []):
        attributes = resource_spans.get("resource", {}).get("attributes", [])
        service = next((a["value"].get("stringValue") for a in attributes if a.get("key") == "service.name"),
                       "unknown")
        count = sum(len(s.get("spans", [])) for s in resource_spans.get("scopeSpans", []))
        yield service, count


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, body=b"", content_type="application/json"):
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.path.rstrip("/") != "/v1/traces":
            return self.reply(404)
        try:
            json_body = "json" in self.headers.get("content-type", "")
            seen = list(from_json(body) if json_body else from_protobuf(body))
        except (ValueError, IndexError, KeyError) as e:
            print(f"otlp-standin: unreadable export: {e}", flush=True)
            return self.reply(400)
        with lock:
            for service, count in seen:
                spans[service] = spans.get(service, 0) + count
                print(f"otlp-standin: spans service={service} total={spans[service]}", flush=True)
        self.reply(200, b"{}" if json_body else b"",
                   "application/json" if json_body else "application/x-protobuf")

    def do_GET(self):
        with lock:
            if self.path == "/api/services":
                return self.reply(200, json.dumps({"data": sorted(spans)}).encode())
            if self.path == "/api/spans":
                return self.reply(200, json.dumps(spans).encode())
        self.reply(404)

    def log_message(self, *args):
        pass


def serve(port):
    http.server.ThreadingHTTPServer(("0.0.0.0", port), Handler).serve_forever()


if __name__ == "__main__":
    # PID 1 in its container: without a handler SIGTERM is ignored and `stop` waits for SIGKILL.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    ports = {int(os.environ.get("OTLP_PORT", "4318")), int(os.environ.get("UI_PORT", "16686"))}
    print(f"otlp-standin: listening on {sorted(ports)}", flush=True)
    for port in ports:
        threading.Thread(target=serve, args=(port,), daemon=True).start()
    threading.Event().wait()
    sys.exit(0)
