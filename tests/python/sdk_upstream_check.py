"""The official OpenAI Python SDK against agent-server in upstream mode (its upstream: a real
OpenAI-compatible server, the LiteLLM proxy with a mock_response model).

Usage: sdk_upstream_check.py BASE_URL EXPECTED_REPLY
Exits non-zero with a message on the first failed check.
"""

import json
import sys
import urllib.request
import uuid

from openai import OpenAI

BASE = sys.argv[1].rstrip("/")
EXPECTED = sys.argv[2]


def check(name, condition, detail):
    if not condition:
        print(f"FAILED {name}: {detail}")
        sys.exit(1)
    print(f"ok {name}")


def memory(session):
    request = urllib.request.Request(f"{BASE}/control/memory", headers={"X-Session-Id": session})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


session = f"sdk-upstream-{uuid.uuid4()}"
client = OpenAI(base_url=f"{BASE}/v1", api_key="not-needed", default_headers={"X-Session-Id": session})

# A streamed reply produced by the upstream, relayed chunk by chunk.
stream = client.chat.completions.create(
    model="mock-gpt",
    messages=[{"role": "user", "content": "My favourite colour is teal."}],
    stream=True,
    stream_options={"include_usage": True},
)
pieces, usage, finish, models = [], None, None, set()
for chunk in stream:
    models.add(chunk.model)
    if chunk.usage is not None:
        usage = chunk.usage
    for choice in chunk.choices:
        pieces.append(choice.delta.content or "")
        finish = choice.finish_reason or finish
streamed = "".join(pieces)
check("streamed reply comes from the upstream", streamed == EXPECTED, repr(streamed))
check("the stream arrived in several chunks", len([p for p in pieces if p]) > 1, pieces)
check("finish reason", finish == "stop", finish)
check("usage chunk (asked for)", usage is not None and usage.total_tokens > 0, usage)
check("upstream model reported", models == {"mock-gpt"}, models)

# Without include_usage the client gets no usage.
stream = client.chat.completions.create(
    model="mock-gpt", messages=[{"role": "user", "content": "Hello again."}], stream=True
)
chunks = list(stream)
check("no usage unless asked", all(c.usage is None for c in chunks), [c.usage for c in chunks])

# A whole completion, passed through.
r = client.chat.completions.create(model="mock-gpt", messages=[{"role": "user", "content": "And once more."}])
check("completion from the upstream", r.choices[0].message.content == EXPECTED, r)
check("completion usage", r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, r.usage)

# Memory works whatever the model: the streamed turn was stored, its fact extracted.
view = memory(session)
working = [w["text"] for w in view["working_memory"]]
check("streamed turn stored in working memory", "My favourite colour is teal." in working and EXPECTED in working, working)
facts = [f["text"] for f in view["facts"]]
check("fact extracted from the user turn", any("teal" in f for f in facts), facts)

print("all checks passed")
