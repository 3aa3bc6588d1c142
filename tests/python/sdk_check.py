"""Drives agent-server with the official OpenAI Python SDK, as a new user would.

Usage: sdk_check.py BASE_URL   (for example http://127.0.0.1:8080)
Exits non-zero with a message on the first failed check.
"""

import sys
import uuid

import json
import urllib.request
from openai import OpenAI

BASE = sys.argv[1].rstrip("/")
T0 = "2026-03-01T09:00:00Z"


def client_for(session):
    return OpenAI(base_url=f"{BASE}/v1", api_key="not-needed", default_headers={"X-Session-Id": session})


def ask(client, text, mock_time=None, **kwargs):
    headers = {"X-Mock-Time": mock_time} if mock_time else None
    r = client.chat.completions.create(
        model="agentwall-builtin", messages=[{"role": "user", "content": text}], extra_headers=headers, **kwargs
    )
    assert r.object == "chat.completion", r
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, r.usage
    return r.choices[0].message.content


def control(path, session, body=None):
    """POST to the control plane with the standard library; returns (status, parsed JSON)."""
    data = json.dumps(body).encode() if body is not None else b""
    request = urllib.request.Request(f"{BASE}{path}", data=data, method="POST", headers={"X-Session-Id": session, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, json.loads(response.read())


def check(name, condition, detail):
    if not condition:
        print(f"FAILED {name}: {detail}")
        sys.exit(1)
    print(f"ok {name}")


session = f"sdk-{uuid.uuid4()}"
client = client_for(session)

ack = ask(client, "My favourite colour is teal.")
check("completion", "teal" in ack, ack)

answer = ask(client, "What is my favourite colour?")
check("recall from an earlier request", "teal" in answer, answer)

stream = client.chat.completions.create(
    model="agentwall-builtin",
    messages=[{"role": "user", "content": "What is my favourite colour?"}],
    stream=True,
    stream_options={"include_usage": True},
)
pieces, usage = [], None
for chunk in stream:
    if chunk.usage is not None:
        usage = chunk.usage
    for choice in chunk.choices:
        pieces.append(choice.delta.content or "")
streamed = "".join(pieces)
check("stream", "teal" in streamed, streamed)
check("stream usage chunk", usage is not None and usage.completion_tokens > 0, usage)

models = client.models.list()
check("models", [m.id for m in models.data] == ["agentwall-builtin"], models)

status, reset = control("/control/session/reset", session)
check("reset", status == 200 and reset["facts_removed"] >= 1, reset)
answer = ask(client, "What is my favourite colour?")
check("forgotten after reset", "teal" not in answer, answer)

status, inject = control(
    "/control/memory/inject", session, {"facts": [{"text": "My passport number is X1234567.", "importance": 0.9}]}
)
check("inject", status == 200 and inject["injected"][0]["current"], inject)
answer = ask(client, "What is my passport number?")
check("injected fact recalled", "X1234567" in answer, answer)

# Time travel: working memory expires after 6 h on the session clock; promoted facts stay.
timed = client_for(f"sdk-time-{uuid.uuid4()}")
ask(timed, "I had ramen for lunch.", T0)
ask(timed, "Important: my bike is locked at gate 7.", T0)
early = ask(timed, "What did I have for lunch?", "2026-03-01T10:00:00Z")
check("working memory before its TTL", "ramen" in early, early)
late = ask(timed, "What did I have for lunch?", "2026-03-01T16:00:00Z")
check("working memory expired on the mock clock", "ramen" not in late, late)
kept = ask(timed, "Where is my bike locked?", "2026-03-01T16:00:00Z")
check("promoted fact kept past the TTL", "gate 7" in kept, kept)

# Without X-Session-Id a chat completion is answered without memory, and the answer says so.
raw = OpenAI(base_url=f"{BASE}/v1", api_key="x").chat.completions.with_raw_response.create(
    model="m", messages=[{"role": "user", "content": "hi"}]
)
check("a request without a session is answered without memory", raw.headers.get("x-memory-write") == "off", dict(raw.headers))

# Errors arrive as the SDK's typed exceptions.
try:
    client_for("sdk-errors").chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], temperature=3
    )
    check("an invalid temperature is rejected", False, "no error raised")
except Exception as e:  # openai.BadRequestError
    check("an invalid temperature is rejected", getattr(e, "status_code", None) == 400 and "temperature" in str(e), repr(e))

print("all checks passed")
