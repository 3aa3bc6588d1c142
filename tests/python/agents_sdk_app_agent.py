"""An agent built with the OpenAI Agents SDK, served as a Chat Completions endpoint for
`judge apps --action-mode mcp` (tests/apps_mcp.rs).

usage: agents_sdk_app_agent.py PORT MODEL_BASE_URL MODEL

Each request is one run of an `agents.Agent` whose tools come from the MCP server the judge names
in the `X-MCP-Server-URL` header (the SDK's own MCP client, `MCPServerStreamableHttp`) and whose
model is MODEL at MODEL_BASE_URL (agent-server) through Chat Completions. The request's system
message is the agent's instructions; its other messages the run's input. The final output goes
back as a chat completion. Prints `listening` once it accepts requests.
"""

import asyncio
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

PORT, MODEL_BASE_URL, MODEL = int(sys.argv[1]), sys.argv[2], sys.argv[3]
set_tracing_disabled(True)


def text_of(message):
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


async def run_agent(messages, mcp_url, session_id):
    instructions = "\n\n".join(text_of(m) for m in messages if m["role"] == "system")
    history = [
        {"role": m["role"], "content": text_of(m)}
        for m in messages
        if m["role"] in ("user", "assistant") and text_of(m)
    ]
    # The session goes to the model too, so agent-server's memory is the conversation's.
    client = AsyncOpenAI(
        base_url=MODEL_BASE_URL + "/v1",
        api_key="unused",
        default_headers={"X-Session-Id": session_id},
    )
    async with client, MCPServerStreamableHttp(
        params={"url": mcp_url, "timeout": 10}, name="apps", cache_tools_list=True
    ) as apps:
        agent = Agent(
            name="payments assistant",
            instructions=instructions,
            model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
            mcp_servers=[apps],
        )
        result = await Runner.run(agent, input=history, max_turns=8)
        return str(result.final_output)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self.answer(200, {"object": "list", "data": [{"id": "agents-sdk", "object": "model"}]})
        else:
            self.answer(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self):
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.answer(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
            return
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        mcp_url = self.headers.get("X-MCP-Server-URL")
        session_id = self.headers.get("X-Session-Id", "agents-sdk")
        if not mcp_url:
            # Not a trial (the judge's probe): plain chat with the model, no tools.
            reply = "Hello! I can operate your payment apps once a server is given."
        else:
            try:
                reply = asyncio.run(run_agent(request["messages"], mcp_url, session_id))
            except Exception as e:  # the judge classifies a 500 as the agent's error
                self.answer(500, {"error": {"message": f"{type(e).__name__}: {e}", "type": "server_error"}})
                return
        self.answer(
            200,
            {
                "id": f"chatcmpl-{time.time_ns()}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": "agents-sdk",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            },
        )


def main():
    server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    print("listening", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
