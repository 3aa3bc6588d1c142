"""The official MCP Python SDK against the judge's apps server (judge-client/tests/apps_mcp.rs).

usage: mcp_trials_check.py live URL_A URL_B   lists, acts and probes bad input on two open trials;
                                              reaches B again through the fixed URL (the server's
                                              /mcp and B's X-Session-Id)
       mcp_trials_check.py late URL           calls a tool of a trial that has ended

Prints one JSON object of what it saw; the Rust test asserts on it and on the worlds themselves.
"""

import asyncio
import json
import sys

import urllib.error
import urllib.request
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


async def session(url, work, headers=None):
    client = create_mcp_http_client(headers=headers) if headers else None
    async with streamable_http_client(url, http_client=client) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as s:
            await s.initialize()
            return await work(s)


def balance(result):
    payload = json.loads(result.content[0].text)
    return payload["data"]["balance"]


async def error_code(call):
    try:
        await call
    except MCPError as e:
        return {"code": e.error.code, "message": e.error.message}
    return None


async def live(url_a, url_b):
    seen = {}

    async def on_a(s):
        tools = await s.list_tools()
        seen["tools"] = sorted(t.name for t in tools.tools)
        seen["transfer_schema"] = next(
            t.input_schema for t in tools.tools if t.name == "paypal__transfer"
        )
        seen["a_before"] = balance(await s.call_tool("paypal__check_balance", {}))
        sent = await s.call_tool(
            "paypal__transfer", {"to": "bob", "amount": "12.50", "note": "mcp"}
        )
        seen["transfer_is_error"] = sent.is_error
        seen["transfer"] = json.loads(sent.content[0].text)
        seen["a_after"] = balance(await s.call_tool("paypal__check_balance", {}))
        seen["unknown_tool"] = await error_code(s.call_tool("paypal__fly", {}))
        wrong = await s.call_tool("paypal__transfer", {"to": {"name": "bob"}, "amount": [5]})
        seen["wrong_types_is_error"] = wrong.is_error
        seen["wrong_types"] = json.loads(wrong.content[0].text)
        seen["a_after_bad_input"] = balance(await s.call_tool("paypal__check_balance", {}))

    async def on_b(s):
        seen["b_balance"] = balance(await s.call_tool("paypal__check_balance", {}))

    async def on_fixed(s):
        seen["fixed_tools"] = len((await s.list_tools()).tools)
        await s.call_tool("paypal__transfer", {"to": "bob", "amount": 1})
        seen["fixed_b_after"] = balance(await s.call_tool("paypal__check_balance", {}))

    await session(url_a, on_a)
    await session(url_b, on_b)
    fixed = url_b.rsplit("/", 1)[0]
    await session(fixed, on_fixed, headers={"X-Session-Id": url_b.rsplit("/", 1)[1]})

    # Malformed messages, below the SDK: not JSON, and JSON that is no JSON-RPC request.
    seen["garbage"] = post(url_a, b"{not json")
    seen["unknown_method"] = post(
        url_a,
        json.dumps({"jsonrpc": "2.0", "id": 7, "method": "apps/teleport", "params": {}}).encode(),
    )
    return seen


def post(url, body):
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return {"status": response.status, "body": response.read().decode()[:300]}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": e.read().decode()[:300]}


async def late(url):
    async def on(s):
        return await error_code(s.call_tool("paypal__transfer", {"to": "bob", "amount": 1}))

    try:
        return {"late_call": await session(url, on)}
    except MCPError as e:
        # Refused as early as initialisation is refused too.
        return {"late_call": {"code": e.error.code, "message": e.error.message}}


def main():
    if sys.argv[1] == "live":
        out = asyncio.run(live(sys.argv[2], sys.argv[3]))
    else:
        out = asyncio.run(late(sys.argv[2]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
