"""The official A2A Python SDK's client (a2a-sdk, A2A 1.0, JSON-RPC binding) against agent-server.

Run by tests/a2a_sdk.rs in two steps around a restart of the server, which keeps its data:

    a2a_sdk_check.py BASE_URL before STATE_FILE
        resolves the agent card; sends a message (a task, completed, its reply the artifact);
        streams the next message of the same context (the task, artifact chunks, the completion)
        and finds the first one remembered; a foreign session is refused its task and context;
        a data part is refused by content type. Writes the task's id and context to STATE_FILE.
    a2a_sdk_check.py BASE_URL after STATE_FILE
        after the restart: resolves the card again, gets the task back as it was answered (and
        with no history when asked), the context still remembers, a foreign session is still
        refused, and a completed task is not cancelable.

Each step prints "all checks passed" last; any failed check raises.
"""

import asyncio
import json
import sys
import uuid

import httpx

from a2a.client import A2ACardResolver, ClientCallContext, ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import get_artifact_text, new_data_part, new_text_message
from a2a.types.a2a_pb2 import (
    ROLE_AGENT,
    ROLE_USER,
    TASK_STATE_COMPLETED,
    TASK_STATE_WORKING,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    SendMessageRequest,
)
from a2a.utils.errors import (
    ContentTypeNotSupportedError,
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
)


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print(f"ok: {what}")


def as_session(session):
    """A call made as `session` (agent-server's X-Session-Id, an HTTP service parameter)."""
    return ClientCallContext(service_parameters={"X-Session-Id": session})


def user_message(text, context_id):
    message = new_text_message(text, context_id=context_id)
    message.role = ROLE_USER
    return message


async def resolve(base_url, http):
    card = await A2ACardResolver(http, base_url).get_agent_card()
    interface = card.supported_interfaces[0]
    check(interface.protocol_binding == "JSONRPC", "the card's interface is JSON-RPC")
    check(interface.protocol_version == "1.0", "of A2A 1.0")
    check(interface.url == f"{base_url}/a2a", f"at {base_url}/a2a (got {interface.url})")
    check(card.capabilities.streaming, "the card says the agent streams")
    check(list(card.default_input_modes) == ["text/plain"], "text in")
    check(len(card.skills) >= 1 and card.name, "the card names the agent and a skill")
    return card


async def send(client, message, context=None):
    """The events a send yields (one for a blocking client, the stream for a streaming one)."""
    events = []
    async for event in client.send_message(SendMessageRequest(message=message), context=context):
        events.append(event)
    return events


async def refused(call, error, what):
    try:
        await call
    except error as e:
        print(f"ok: {what} ({type(e).__name__}: {e})")
        return
    raise AssertionError(f"{what}: no {error.__name__}")


async def before(base_url, state_file):
    context_id = f"sdk-{uuid.uuid4()}"
    async with httpx.AsyncClient(timeout=30) as http:
        card = await resolve(base_url, http)
        blocking = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        streaming = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)

        events = await send(blocking, user_message("My locker code is 4512.", context_id))
        check(len(events) == 1 and events[0].HasField("task"), "SendMessage answers with a task")
        task = events[0].task
        check(task.status.state == TASK_STATE_COMPLETED, "completed")
        check(task.context_id == context_id, "in the context the message named")
        reply = get_artifact_text(task.artifacts[0])
        check("4512" in reply, f"its artifact holds the reply ({reply!r})")
        check(
            [m.role for m in task.history] == [ROLE_USER, ROLE_AGENT],
            "its history is the exchange",
        )

        events = await send(streaming, user_message("What is my locker code?", context_id))
        kinds = [e.WhichOneof("payload") for e in events]
        print(f"stream: {kinds}")
        check(kinds[0] == "task", "the stream opens with the task")
        check(events[0].task.status.state == TASK_STATE_WORKING, "working")
        check(kinds[-1] == "status_update", "and ends with a status update")
        check(events[-1].status_update.status.state == TASK_STATE_COMPLETED, "completing it")
        chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
        check(len(chunks) >= 1 and chunks[-1].last_chunk, "the reply comes as artifact chunks")
        streamed = "".join(get_artifact_text(c.artifact, "") for c in chunks)
        check("4512" in streamed, f"the context remembers across messages ({streamed!r})")

        other = f"sdk-other-{uuid.uuid4()}"
        await refused(
            blocking.get_task(GetTaskRequest(id=task.id), context=as_session(other)),
            TaskNotFoundError,
            "another session cannot get the task",
        )
        await refused(
            send(blocking, user_message("What is my locker code?", context_id), as_session(other)),
            InvalidParamsError,
            "another session cannot send into the context",
        )
        data = Message(
            message_id=str(uuid.uuid4()),
            role=ROLE_USER,
            context_id=context_id,
            parts=[new_data_part({"k": "v"})],
        )
        await refused(
            send(blocking, data),
            ContentTypeNotSupportedError,
            "a data part is refused by content type",
        )
        await blocking.close()
        await streaming.close()
    with open(state_file, "w") as f:
        json.dump({"task_id": task.id, "context_id": context_id, "reply": reply}, f)
    print("all checks passed")


async def after(base_url, state_file):
    with open(state_file) as f:
        state = json.load(f)
    async with httpx.AsyncClient(timeout=30) as http:
        card = await resolve(base_url, http)
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        task = await client.get_task(GetTaskRequest(id=state["task_id"]))
        check(task.status.state == TASK_STATE_COMPLETED, "the task is back after the restart")
        check(get_artifact_text(task.artifacts[0]) == state["reply"], "with its reply")
        check(len(task.history) == 2, "and its history")
        bare = await client.get_task(GetTaskRequest(id=state["task_id"], history_length=0))
        check(len(bare.history) == 0, "historyLength 0 leaves the history out")
        events = await send(client, user_message("What is my locker code?", state["context_id"]))
        reply = get_artifact_text(events[0].task.artifacts[0])
        check("4512" in reply, f"the context still remembers ({reply!r})")
        await refused(
            client.get_task(
                GetTaskRequest(id=state["task_id"]),
                context=as_session(f"sdk-other-{uuid.uuid4()}"),
            ),
            TaskNotFoundError,
            "another session still cannot get it",
        )
        await refused(
            client.cancel_task(CancelTaskRequest(id=state["task_id"])),
            TaskNotCancelableError,
            "a completed task is not cancelable",
        )
        await client.close()
    print("all checks passed")


def main():
    base_url, step, state_file = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
    asyncio.run({"before": before, "after": after}[step](base_url, state_file))


if __name__ == "__main__":
    main()
