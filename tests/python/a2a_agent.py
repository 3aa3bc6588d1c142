"""An A2A agent built with the official SDK (a2a-sdk 1.3.0: A2A 1.0, JSON-RPC binding, SSE
streaming), wrapping a scripted model: fast and deterministic, it remembers what it is told in a
context (facts, places visited, who lives where) and answers questions about it, so the judge's
long-term-memory tests score above nothing and below everything. tests/a2a.rs benchmarks it with
`judge ltm` and `judge sim` over A2A (docs/contracts/a2a.md).

    a2a_agent.py PORT [--stateless] [--control] [--no-streaming] [--reply task|message]
                      [--fail-every N --fail-state failed|rejected|canceled|input-required|auth-required]

- Memory is per `contextId` (the judge's session). `--stateless` forgets after each message: the
  agent then knows only what the message itself carries (with `judge --history full`, the earlier
  conversation in its `history` part).
- `--control` serves the judge's control plane reset at the base URL (`POST
  /control/session/reset`, the session in `X-Session-Id`): it forgets that context.
- `X-Mock-Time` is today's date: "What is today's date?" is answered with it.
- `--reply task` (the default) answers with a task: submitted, working, the answer as an artifact
  in two chunks, completed; `--reply message` with a direct message.
- `--fail-every N` ends every N-th message's task in `--fail-state` instead of answering.

Prints nothing; logs go to stderr. Stops on SIGTERM or SIGINT.
"""

import argparse
import datetime
import re
import sys
import threading

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Role,
    TaskState,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

FILLER = "Background reading:"


class Memory:
    """What one context was told."""

    def __init__(self):
        self.attributes: dict[str, str] = {}
        self.relations: dict[str, str] = {}
        self.homes: dict[str, str] = {}
        self.visited: list[str] = []

    def learn(self, text: str) -> None:
        for line in text.splitlines():
            if FILLER in line:
                continue
            line = re.sub(r"^(User|Agent|System): ", "", line)
            for sentence in re.findall(r"[^.?!]+[.?!]?", line):
                self.learn_sentence(sentence.strip())

    def learn_sentence(self, sentence: str) -> None:
        if sentence.endswith("?"):
            return
        if m := re.match(r"My ([\w ]+?) is called (\w+)\.?$", sentence):
            self.relations[m[1].lower()] = m[2]
        elif m := re.match(r"My ([\w ]+?) is (?:now )?(.+?)\.?$", sentence):
            self.attributes[m[1].lower()] = m[2]
        elif m := re.match(r"(\w+) lives in (.+?)\.?$", sentence):
            self.homes[m[1]] = m[2]
        elif m := re.match(r"Remember that I have visited (.+?)\.?$", sentence):
            if m[1] not in self.visited:
                self.visited.append(m[1])

    def answer(self, question: str, today: datetime.date) -> str:
        if re.search(r"today's date", question, re.I):
            return f"Today is {today.isoformat()}."
        if m := re.search(r"In which city does my ([\w ]+?) live\?", question):
            name = self.relations.get(m[1].lower())
            if name and name in self.homes:
                return f"Your {m[1]} {name} lives in {self.homes[name]}."
            return f"I don't know where your {m[1]} lives."
        if re.search(r"Which cities have I visited\?", question):
            if not self.visited:
                return "You have not told me of any city you visited."
            if len(self.visited) == 1:
                return f"You have visited {self.visited[0]}."
            return f"You have visited {', '.join(self.visited[:-1])} and {self.visited[-1]}."
        if m := re.search(r"What is my ([\w ]+?)\?", question):
            key = m[1].lower()
            if key in self.attributes:
                return f"Your {key} is {self.attributes[key]}."
            return f"I don't know; you have not told me your {key}."
        if question.rstrip().endswith("?"):
            return "I don't know."
        return "Noted."


def part_kind(part) -> str:
    """What the judge put in a part beside the user's words (docs/contracts/a2a.md)."""
    if part.HasField("metadata") and "agentwall/part" in part.metadata.fields:
        return part.metadata.fields["agentwall/part"].string_value
    return "turn"


def mock_today(context: RequestContext) -> datetime.date:
    headers = context.call_context.state.get("headers", {}) if context.call_context else {}
    value = headers.get("x-mock-time")
    if value:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).date()
    return datetime.date.today()


class ScriptedAgent(AgentExecutor):
    def __init__(self, args):
        self.args = args
        self.memories: dict[str, Memory] = {}
        self.lock = threading.Lock()
        self.count = 0

    def reset(self, context_id: str) -> bool:
        with self.lock:
            return self.memories.pop(context_id, None) is not None

    def reply(self, context: RequestContext) -> str:
        message = context.message
        turns = [p.text for p in message.parts if p.HasField("text") and part_kind(p) == "turn"]
        history = [p.text for p in message.parts if p.HasField("text") and part_kind(p) == "history"]
        with self.lock:
            memory = Memory() if self.args.stateless else self.memories.setdefault(context.context_id, Memory())
            for text in history + turns:
                memory.learn(text)
            question = turns[-1] if turns else ""
            return memory.answer(question, mock_today(context))

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        with self.lock:
            self.count += 1
            failing = self.args.fail_every and self.count % self.args.fail_every == 0
        text = self.reply(context)
        if self.args.reply == "message" and not failing:
            await event_queue.enqueue_event(
                new_text_message(text, context_id=context.context_id, role=Role.ROLE_AGENT)
            )
            return
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        if failing:
            why = updater.new_agent_message([Part(text=f"scripted {self.args.fail_state}")])
            state = {
                "failed": TaskState.TASK_STATE_FAILED,
                "rejected": TaskState.TASK_STATE_REJECTED,
                "canceled": TaskState.TASK_STATE_CANCELED,
                "input-required": TaskState.TASK_STATE_INPUT_REQUIRED,
                "auth-required": TaskState.TASK_STATE_AUTH_REQUIRED,
            }[self.args.fail_state]
            await updater.update_status(state, message=why)
            return
        half = len(text) // 2
        await updater.add_artifact([Part(text=text[:half])], artifact_id="reply", name="reply")
        await updater.add_artifact(
            [Part(text=text[half:])], artifact_id="reply", append=True, last_chunk=True
        )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--control", action="store_true")
    parser.add_argument("--no-streaming", action="store_true")
    parser.add_argument("--reply", choices=["task", "message"], default="task")
    parser.add_argument("--fail-every", type=int, default=0)
    parser.add_argument(
        "--fail-state",
        choices=["failed", "rejected", "canceled", "input-required", "auth-required"],
        default="failed",
    )
    args = parser.parse_args()

    base = f"http://127.0.0.1:{args.port}"
    card = AgentCard(
        name="scripted-memo",
        description="Remembers what it is told in a context and answers questions about it.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"{base}/a2a", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=not args.no_streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="remember",
                name="Remember",
                description="Keeps facts told in a conversation and answers questions about them.",
                tags=["memory"],
                examples=["My favourite colour is teal.", "What is my favourite colour?"],
            )
        ],
    )
    agent = ScriptedAgent(args)
    handler = DefaultRequestHandler(
        agent_executor=agent, task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/a2a")
    if args.control:

        async def reset(request: Request) -> JSONResponse:
            session = request.headers.get("x-session-id")
            if not session:
                return JSONResponse(
                    {"error": {"message": "X-Session-Id is required", "type": "invalid_request_error", "param": None, "code": None}},
                    status_code=400,
                )
            removed = agent.reset(session)
            return JSONResponse(
                {"session_id": session, "working_items_removed": int(removed), "facts_removed": 0}
            )

        routes.append(Route("/control/session/reset", reset, methods=["POST"]))
    app = Starlette(routes=routes)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    sys.exit(main())
