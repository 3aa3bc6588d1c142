"""The official OpenAI Python SDK against agent-server in upstream mode, its upstream a real
language model (llama.cpp's server of SmolLM2, scripts/real-model.sh). The model is weak: only
the protocol is checked, never what it says.

Usage: sdk_real_model_check.py BASE_URL MODEL
Exits non-zero with a message on the first failed check.
"""

import sys
import uuid

from openai import OpenAI

BASE = sys.argv[1].rstrip("/")
MODEL = sys.argv[2]


def check(name, condition, detail):
    if not condition:
        print(f"FAILED {name}: {detail}")
        sys.exit(1)
    print(f"ok {name}")


session = f"sdk-real-model-{uuid.uuid4()}"
client = OpenAI(
    base_url=f"{BASE}/v1",
    api_key="not-needed",
    default_headers={"X-Session-Id": session},
    timeout=180,
)

completion = client.chat.completions.create(
    model=MODEL,
    messages=[{"role": "user", "content": "My favourite colour is teal. Say hello."}],
    max_tokens=32,
    temperature=0,
)
text = completion.choices[0].message.content or ""
check("plain reply", text.strip() != "", completion)
check("plain usage", completion.usage is not None and completion.usage.completion_tokens > 0, completion.usage)
check(
    "finish reason",
    completion.choices[0].finish_reason in ("stop", "length"),
    completion.choices[0].finish_reason,
)

stream = client.chat.completions.create(
    model=MODEL,
    messages=[{"role": "user", "content": "Tell me a short story about a lighthouse."}],
    max_tokens=32,
    temperature=0,
    stream=True,
    stream_options={"include_usage": True},
)
pieces, usage, finish = [], None, None
for chunk in stream:
    if chunk.usage is not None:
        usage = chunk.usage
    for choice in chunk.choices:
        pieces.append(choice.delta.content or "")
        finish = choice.finish_reason or finish
check("streamed in several chunks", len([p for p in pieces if p]) > 1, pieces)
check("streamed finish reason", finish in ("stop", "length"), finish)
# llama-cpp-python's server sends no usage chunk, whatever include_usage says (judge conform
# records it): agent-server passes on what the upstream sends and invents no counts.
if usage is None:
    print("ok streamed usage: none, as the upstream sends none")
else:
    check("streamed usage", usage.completion_tokens > 0, usage)
