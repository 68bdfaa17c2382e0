"""The `ask_{agentId}` MCP tools through the official MCP Python SDK client (mcp 2.3.0, the
pinned tests/interop/requirements.txt; it cannot share the A2A SDK's venv, so
test_a2a_remote.py runs this script with the MCP interop venv's Python).

Connects to SLUICE_URL's `a2a`/`agent` MCP endpoint as alice (a bearer token), once in the SDK's
default mode (the stateless 2026-07-28 protocol) and once in `legacy` mode (an `initialize`
session), calls `ask_{agent}` with `message` and a progress callback in each, and prints one
JSON line per mode: the negotiated version, every progress callback (progress, total, message)
in order, and the CallToolResult. Prints `{"error": …}` and exits 1 on any failure.

Usage: mcp_ask.py AGENT MESSAGE. Env: SLUICE_URL, ASK_TOKEN.
"""

import json
import os
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def ask(url, token, agent, message, mode):
    steps = []

    async def on_progress(progress, total, text):
        steps.append({"progress": progress, "total": total, "message": text})

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30.0) as http:
        kwargs = {"mode": mode} if mode else {}
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=30, **kwargs) as client:
            result = await client.call_tool(f"ask_{agent}", {"message": message}, progress_callback=on_progress)
            return {
                "mode": mode or "default",
                "version": client.protocol_version,
                "progress": steps,
                "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
            }


async def main():
    agent, message = sys.argv[1], sys.argv[2]
    url = os.environ["SLUICE_URL"].rstrip("/") + "/runtime/a2a/agent/mcp"
    token = os.environ["ASK_TOKEN"]
    for mode in (None, "legacy"):
        print(json.dumps(await ask(url, token, agent, message, mode)), flush=True)


if __name__ == "__main__":
    try:
        anyio.run(main)
    except Exception as err:  # noqa: BLE001 - the caller reads the reason
        print(json.dumps({"error": f"{type(err).__name__}: {err}"}), flush=True)
        sys.exit(1)
