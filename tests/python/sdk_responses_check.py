"""The official OpenAI Python SDK against agent-server's Responses and Conversations APIs, with no
X-Session-Id anywhere (a generic client's defaults).

Run in two phases around a restart of agent-server (tests/openai_sdk.rs drives it):

    python sdk_responses_check.py before BASE_URL STATE_FILE
    python sdk_responses_check.py after  BASE_URL STATE_FILE

`before`: plain, streamed, a function tool round trip, store=False, a conversation; writes the
ids that `after` continues. `after`: chains with previous_response_id across the restart, uses
and deletes the conversation. Prints "all checks passed" at the end of each phase.
"""

import json
import sys

import openai
from openai import OpenAI

MODEL = "agentwall-builtin"
TOOLS = [
    {
        "type": "function",
        "name": "paypal__check_balance",
        "description": "View the PayPal balance.",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    }
]


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def not_found(call):
    try:
        call()
    except openai.NotFoundError:
        return True
    return False


def before(client, state_file):
    # Plain: a new session is made for a client that names none, and said in the header.
    raw = client.responses.with_raw_response.create(model=MODEL, input="My kayak is green.")
    first = raw.parse()
    session = raw.headers.get("x-session-id", "")
    check(session.startswith("auto:"), f"no session named: {dict(raw.headers)}")
    check(first.status == "completed", first)
    check("green" in first.output_text, first.output_text)
    check(first.usage.total_tokens == first.usage.input_tokens + first.usage.output_tokens, first.usage)
    check(client.responses.retrieve(first.id).output_text == first.output_text, "retrieve")
    items = client.responses.input_items.list(first.id)
    check(any(getattr(i, "role", None) == "user" for i in items.data), items)

    # Streamed: semantic events in order, deltas adding up to the final text.
    stream = client.responses.create(model=MODEL, input="My canoe is red.", stream=True)
    kinds, deltas, final = [], [], None
    for event in stream:
        kinds.append(event.type)
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)
        if event.type == "response.completed":
            final = event.response
    check(kinds[0] == "response.created" and kinds[-1] == "response.completed", kinds)
    check(final is not None and "".join(deltas) == final.output_text, (deltas, final))
    check(client.responses.retrieve(final.id).id == final.id, "a streamed response is stored")

    # A function tool round trip, the output chained to the response holding the call.
    asked = client.responses.create(model=MODEL, input="What is my PayPal balance?", tools=TOOLS)
    calls = [item for item in asked.output if item.type == "function_call"]
    check(calls and calls[0].name == "paypal__check_balance", asked.output)
    answered = client.responses.create(
        model=MODEL,
        previous_response_id=asked.id,
        tools=TOOLS,
        input=[
            {
                "type": "function_call_output",
                "call_id": calls[0].call_id,
                "output": json.dumps({"balance": "$120.00"}),
            }
        ],
    )
    check("120" in answered.output_text, answered.output_text)

    # store=False: answered, not kept.
    unstored = client.responses.create(model=MODEL, input="Hello!", store=False)
    check(not_found(lambda: client.responses.retrieve(unstored.id)), "store=False was retrievable")

    # Bad input is an SDK error, not a crash.
    try:
        client.responses.create(model=MODEL, input="hi", previous_response_id="resp_missing")
        check(False, "an unknown previous_response_id was accepted")
    except openai.BadRequestError:
        pass

    # A conversation.
    conversation = client.conversations.create(
        metadata={"topic": "boats"},
        items=[{"type": "message", "role": "user", "content": "My dinghy is yellow."}],
    )
    in_conversation = client.responses.create(
        model=MODEL, input="What colour is my dinghy?", conversation=conversation.id
    )
    check("yellow" in in_conversation.output_text, in_conversation.output_text)
    listed = client.conversations.items.list(conversation.id, order="asc")
    check(len(listed.data) == 3, listed.data)
    check(client.conversations.retrieve(conversation.id).metadata == {"topic": "boats"}, "metadata")

    with open(state_file, "w") as f:
        json.dump({"chain": first.id, "conversation": conversation.id}, f)


def after(client, state_file):
    with open(state_file) as f:
        state = json.load(f)
    # The chain and its memory survived the restart.
    chained = client.responses.create(
        model=MODEL, input="What colour is my kayak?", previous_response_id=state["chain"]
    )
    check("green" in chained.output_text, chained.output_text)
    check(chained.previous_response_id == state["chain"], chained)
    check(client.responses.retrieve(state["chain"]).status == "completed", "retrieve after restart")

    conversation = state["conversation"]
    check(len(client.conversations.items.list(conversation).data) == 3, "items after restart")
    again = client.responses.create(model=MODEL, input="What colour is my dinghy?", conversation=conversation)
    check("yellow" in again.output_text, again.output_text)
    deleted = client.conversations.delete(conversation)
    check(deleted.deleted, deleted)
    check(not_found(lambda: client.conversations.retrieve(conversation)), "deleted conversation found")

    client.responses.delete(state["chain"])
    check(not_found(lambda: client.responses.retrieve(state["chain"])), "deleted response found")


def main():
    phase, base_url, state_file = sys.argv[1:4]
    client = OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0)
    {"before": before, "after": after}[phase](client, state_file)
    print("all checks passed")


if __name__ == "__main__":
    main()
