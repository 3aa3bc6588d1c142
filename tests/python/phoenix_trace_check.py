"""One trace from caller to model, in a real Arize Phoenix.

Starts, all on 127.0.0.1 and offline: Arize Phoenix (its OTLP/HTTP collector), the LiteLLM proxy
with a mock_response model, and agent-server in upstream mode exporting spans to Phoenix. Then, as
the judge would, opens a caller span exported to the same Phoenix, sends one streamed chat turn
through the official OpenAI SDK with that span's `traceparent`, stops agent-server with SIGTERM
(which must flush its spans), and checks that Phoenix holds, under the caller's trace id:

  caller span  ->  agent-server request span  ->  recall, chat <model> (the upstream call), store

with the GenAI attributes on the model call, the session id on the server spans, and no message
text anywhere (agent-server runs without --trace-content).

Usage: phoenix_trace_check.py --agent-server BIN --litellm LITELLM_BIN [--keep]
  --keep leaves Phoenix running at the end so the trace can be opened in its UI.
Exits non-zero with a message on the first failed check.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

MOCK_REPLY = "Hello from the LiteLLM mock upstream."
SECRET = "My favourite colour is teal."


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url, what, proc, log, timeout=180):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            fail(f"{what} exited with {proc.returncode}", log)
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            pass
        time.sleep(0.25)
    fail(f"{what} did not answer {url} within {timeout} s", log)


def fail(message, log=None):
    print(f"FAILED {message}")
    if log and os.path.exists(log):
        print(f"--- {log} (tail) ---")
        with open(log, errors="replace") as f:
            print("".join(f.readlines()[-60:]))
    sys.exit(1)


def check(name, condition, detail, log=None):
    if not condition:
        fail(f"{name}: {detail}", log)
    print(f"ok {name}")


def start(cmd, log, env=None, cwd=None):
    out = open(log, "w")
    return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent-server", required=True)
    parser.add_argument("--litellm", required=True)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    args.agent_server, args.litellm = os.path.abspath(args.agent_server), os.path.abspath(args.litellm)

    work = tempfile.mkdtemp(prefix="phoenix-trace-")
    procs = []
    try:
        run(args, work, procs)
    finally:
        for p in reversed(procs):
            if args.keep and getattr(p, "is_phoenix", False):
                print(f"Phoenix left running (pid {p.pid}); stop it with: kill {p.pid}")
                continue
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()


def run(args, work, procs):
    phoenix_port, grpc_port, litellm_port, agent_port = free_port(), free_port(), free_port(), free_port()
    phoenix_url = f"http://127.0.0.1:{phoenix_port}"

    # Arize Phoenix, offline, its data in a throwaway directory.
    phoenix_env = dict(os.environ,
                       PHOENIX_WORKING_DIR=os.path.join(work, "phoenix"),
                       PHOENIX_HOST="127.0.0.1", PHOENIX_PORT=str(phoenix_port),
                       PHOENIX_GRPC_PORT=str(grpc_port), PHOENIX_TELEMETRY_ENABLED="false")
    phoenix_bin = os.path.join(os.path.dirname(sys.executable), "phoenix")
    phoenix_log = os.path.join(work, "phoenix.log")
    phoenix = start([phoenix_bin, "serve"], phoenix_log, env=phoenix_env)
    phoenix.is_phoenix = True
    procs.append(phoenix)

    # LiteLLM with a mock model: the upstream.
    config = os.path.join(work, "litellm.yaml")
    with open(config, "w") as f:
        f.write("model_list:\n  - model_name: mock-gpt\n    litellm_params:\n      model: openai/mock-gpt\n"
                f"      api_key: sk-not-used\n      mock_response: \"{MOCK_REPLY}\"\n"
                "litellm_settings:\n  telemetry: false\n")
    litellm_log = os.path.join(work, "litellm.log")
    litellm_env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    litellm_env.pop("DATABASE_URL", None)
    litellm = start([args.litellm, "--config", config, "--host", "127.0.0.1", "--port", str(litellm_port)],
                    litellm_log, env=litellm_env, cwd=work)
    procs.append(litellm)

    started = time.time()
    wait_http(f"{phoenix_url}/healthz", "Phoenix", phoenix, phoenix_log)
    wait_http(f"http://127.0.0.1:{litellm_port}/health/liveliness", "LiteLLM", litellm, litellm_log)
    print(f"ok Phoenix and LiteLLM up in {time.time() - started:.0f} s")

    # agent-server in upstream mode, exporting spans to Phoenix over OTLP/HTTP (protobuf).
    agent_env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k not in ("REDIS_URL", "DATABASE_URL")}
    # A batch delay far longer than the check: the server's spans can only reach Phoenix through the
    # flush at shutdown, so the check also proves that SIGTERM flushes.
    agent_env.update(OTEL_EXPORTER_OTLP_ENDPOINT=phoenix_url, OTEL_BSP_SCHEDULE_DELAY="600000", RUST_LOG="info")
    agent_log = os.path.join(work, "agent-server.log")
    agent = start([args.agent_server, "--addr", f"127.0.0.1:{agent_port}", "--data-dir", os.path.join(work, "data"),
                   "--llm-base-url", f"http://127.0.0.1:{litellm_port}/v1", "--llm-model", "mock-gpt"],
                  agent_log, env=agent_env)
    procs.append(agent)
    base = f"http://127.0.0.1:{agent_port}"
    wait_http(f"{base}/healthz", "agent-server", agent, agent_log, timeout=60)

    # The caller: its own span, exported to the same Phoenix, sent along as traceparent.
    from openai import OpenAI
    from opentelemetry import propagate, trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "judge"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{phoenix_url}/v1/traces")))
    tracer = provider.get_tracer("phoenix_trace_check")
    session = f"phoenix-{uuid.uuid4()}"
    client = OpenAI(base_url=f"{base}/v1", api_key="not-needed", default_headers={"X-Session-Id": session})
    with tracer.start_as_current_span("judge.turn") as caller:
        headers = {}
        propagate.inject(headers)
        stream = client.chat.completions.create(
            model="mock-gpt", messages=[{"role": "user", "content": SECRET}], stream=True, extra_headers=headers)
        reply = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        trace_id = format(caller.get_span_context().trace_id, "032x")
        caller_span_id = format(caller.get_span_context().span_id, "016x")
    provider.force_flush()
    check("streamed reply from the upstream", reply == MOCK_REPLY, repr(reply))
    check("traceparent sent", headers.get("traceparent", "").split("-")[1:2] == [trace_id], headers)

    # Nothing of the server's can have been exported yet (see OTEL_BSP_SCHEDULE_DELAY above).
    from phoenix.client import Client
    phoenix_client = Client(base_url=phoenix_url)
    early = phoenix_client.spans.get_spans(project_identifier="default", trace_ids=[trace_id], limit=100)
    check("server spans wait in the batch until shutdown", {s["name"] for s in early} <= {"judge.turn"},
          sorted(s["name"] for s in early))

    # SIGTERM: a clean exit that flushes the last spans.
    agent.send_signal(signal.SIGTERM)
    code = agent.wait(timeout=30)
    with open(agent_log, errors="replace") as f:
        agent_text = f.read()
    check("agent-server exits cleanly on SIGTERM", code == 0 and "panicked" not in agent_text, f"exit {code}", agent_log)

    # What Phoenix holds for the caller's trace.
    wanted = {"judge.turn", "POST /v1/chat/completions", "recall", "chat mock-gpt", "store"}
    spans, deadline = [], time.time() + 60
    while time.time() < deadline:
        spans = phoenix_client.spans.get_spans(project_identifier="default", trace_ids=[trace_id], limit=100)
        if wanted <= {s["name"] for s in spans}:
            break
        time.sleep(0.5)
    by_name = {s["name"]: s for s in spans}
    check("one trace holds the caller, the request, recall, the upstream call and store",
          wanted <= set(by_name), sorted(by_name), agent_log)
    check("all in the caller's trace", all(s["context"]["trace_id"] == trace_id for s in spans), spans)

    request = by_name["POST /v1/chat/completions"]
    check("the request span continues the caller's span", request.get("parent_id") == caller_span_id,
          (request.get("parent_id"), caller_span_id))
    request_id = request["context"]["span_id"]
    for name in ("recall", "chat mock-gpt", "store"):
        check(f"{name} is a child of the request span", by_name[name].get("parent_id") == request_id,
              (by_name[name].get("parent_id"), request_id))

    model = by_name["chat mock-gpt"].get("attributes", {})
    flat = flatten(model)
    check("model call has GenAI attributes",
          flat.get("gen_ai.request.model") == "mock-gpt" and flat.get("gen_ai.operation.name") == "chat"
          and int(flat.get("gen_ai.usage.input_tokens", 0)) > 0 and int(flat.get("gen_ai.usage.output_tokens", 0)) > 0,
          flat)
    check("server spans carry the session id",
          flatten(request.get("attributes", {})).get("session.id") == session
          and flatten(by_name["recall"].get("attributes", {})).get("session.id") == session,
          request.get("attributes"))
    debugging = ("code.", "thread.", "target", "busy_ns", "idle_ns")
    extra = {name: sorted(k for k in flatten(by_name[name].get("attributes", {}))
                          if k.startswith(debugging))
             for name in ("POST /v1/chat/completions", "recall", "chat mock-gpt", "store")}
    check("server spans carry no source location, thread, module path or busy/idle times",
          not any(extra.values()), extra)
    server_text = repr([s for s in spans if s["name"] != "judge.turn"])
    check("no message text in the server's spans (no --trace-content)",
          "teal" not in server_text and MOCK_REPLY not in server_text, server_text[:2000])

    print(f"trace {trace_id}: open {phoenix_url}/projects (project 'default', search for the trace id)")
    print("all checks passed")


def flatten(attributes, prefix=""):
    """Phoenix returns attributes nested by their dotted names; flattens them back."""
    out = {}
    if isinstance(attributes, list):
        # OTLP-style [{"key": ..., "value": {...}}]
        for kv in attributes:
            value = kv.get("value", {})
            out[kv.get("key")] = next(iter(value.values()), None) if isinstance(value, dict) else value
        return out
    for k, v in attributes.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


if __name__ == "__main__":
    main()
