"""Interop checks: the official Python MCP SDK client (`mcp==2.3.0`) against a running sluice.

Run by tests/interop/run.sh, which starts sluice and the stub downstream and sets:
  SLUICE_URL       base URL of sluice, e.g. http://127.0.0.1:PORT
  SLUICE_JSON_URL  base URL of a second sluice with `post_framing = "json"` (same fixture)
  SLUICE_CONFIG    the configuration file sluice serves (rewritten here before a reload)
  INTEROP_API      base URL of the stub downstream (for the tool added on reload)
  ADMIN_TOKEN      the `[server] admin_token` of that file
  INTEROP_SUMMARY  file that receives the summary line

Six cases, each a series of named checks with a pass/fail verdict and a 20 s ceiling:
  1. stateless (2026-07-28) with the client's default `mode="auto"` (probes `server/discover`);
  2. handshake era with `mode="legacy"` (initialize, session, GET stream, DELETE on close);
  3. the deprecated HTTP+SSE transport (`mcp.client.sse.sse_client`);
  4. the handshake era's framing: every answer an SSE stream by default (the main instance),
     every answer JSON on the `post_framing = "json"` instance;
  5. resumption with the SDK's own API (`ClientMessageMetadata`): a tools/call's stream resumed
     by GET with `Last-Event-ID` replays that answer and nothing else (default configuration);
  6. auth: the 401 challenge and its metadata, API keys.
Prints one line per check and, last, `N passed, N failed`. Exits 1 on any failure or when no check
ran. A check listed in EXPECTED_FAILURES that fails is reported as XFAIL with its reason and not
counted as failed; one that passes there is reported as XPASS and counted as failed (the entry is
stale). Timeouts only bound waits; nothing asserts on time.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
import warnings
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    handle_protected_resource_response,
)
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ClientMessageMetadata

warnings.simplefilter("ignore")  # the SDK flags ping/legacy APIs as deprecated; they are the point here

BASE = os.environ["SLUICE_URL"].rstrip("/")
CONFIG = os.environ["SLUICE_CONFIG"]
API = os.environ["INTEROP_API"].rstrip("/")
ADMIN_TOKEN = os.environ["ADMIN_TOKEN"]
SUMMARY = os.environ.get("INTEROP_SUMMARY")

MCP_URL = f"{BASE}/runtime/interop/agent/mcp"
SSE_URL = f"{BASE}/runtime/interop/agent/sse"
# The second instance, configured with `post_framing = "json"`: POSTs are answered as JSON.
JSON_ANSWERS_URL = f"{os.environ['SLUICE_JSON_URL'].rstrip('/')}/runtime/interop/agent/mcp"

# Tenant `secure` accepts only API keys (sluice.interop.toml).
SECURE_URL = f"{BASE}/runtime/secure/agent/mcp"
SECURE_KEY = "rtk_interopkey22_interop-secret-0123456789abcdefghijklmnopqr"

CASE_TIMEOUT = 20.0
READ_TIMEOUT = 20.0
MODERN = "2026-07-28"
HANDSHAKE_LATEST = "2025-11-25"

TOOLS = {"get_customer", "find_customers", "place_order"}
ADA = {"id": "c-100", "name": "Ada Lovelace", "email": "ada@example.com"}
PROMPT_TEXT = "Look customers up before placing orders."
PROMPT_URI = "sluice://prompts/crm"

# The tool a reload adds: appended to the last toolset of the fixture (TOML array-of-tables rules).
ADDED_TOOL = f"""
[[tenant.toolset.tool]]
name = "count_customers"
description = "Count the customers (added by the interop reload check)."
downstream = {{ kind = "rest", method = "GET", url = "{API}/customers", timeout_ms = 5000 }}

[[tenant.toolset.tool.output]]
source = "count"
exposed = "total"
type = "integer"
"""

# Check name → why it is expected to fail (a server bug found by these tests, reported, not fixed).
EXPECTED_FAILURES: dict[str, str] = {}


# === reporting ===


class Report:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0
        self.xfailed = 0

    def record(self, name: str, error: BaseException | None) -> None:
        reason = EXPECTED_FAILURES.get(name)
        if error is None and reason is None:
            self.passed += 1
            print(f"PASS   {name}", flush=True)
        elif error is None:
            self.failed += 1
            print(f"XPASS  {name}  (listed as expected to fail: {reason}; remove the entry)", flush=True)
        elif reason is not None:
            self.xfailed += 1
            print(f"XFAIL  {name}  ({reason}): {describe(error)}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL   {name}: {describe(error)}", flush=True)
            if os.environ.get("INTEROP_VERBOSE"):
                traceback.print_exception(error)

    def summary(self) -> str:
        return f"{self.passed} passed, {self.failed} failed"


def describe(error: BaseException) -> str:
    if isinstance(error, MCPError):
        return f"MCPError {error.error.code}: {error.error.message}"
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(e) for e in error.exceptions)
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}"


class Case:
    """One case: named checks run in order under one deadline; a check that cannot run because
    an earlier one it needs failed is recorded as failed with that reason."""

    def __init__(self, report: Report, prefix: str) -> None:
        self.report = report
        self.prefix = prefix
        self.pending: list[str] = []

    async def check(self, name: str, body: Callable[[], Awaitable[Any]]) -> bool:
        full = f"{self.prefix}: {name}"
        try:
            await body()
        except Exception as error:  # noqa: BLE001 - every failure is a verdict
            self.report.record(full, error)
            return False
        self.report.record(full, None)
        return True

    def skip_rest(self, names: list[str], why: str) -> None:
        for name in names:
            self.report.record(f"{self.prefix}: {name}", RuntimeError(f"not run: {why}"))


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


# === wire recording ===


class Wire:
    """Records every HTTP exchange of one client through httpx event hooks."""

    def __init__(self) -> None:
        self.requests: list[httpx2.Request] = []
        self.responses: list[httpx2.Response] = []
        self.session_ids: list[str] = []
        self.get_stream_open = anyio.Event()
        self.deleted: list[int] = []

    async def on_request(self, request: httpx2.Request) -> None:
        self.requests.append(request)

    async def on_response(self, response: httpx2.Response) -> None:
        self.responses.append(response)
        sid = response.headers.get("mcp-session-id")
        if sid:
            self.session_ids.append(sid)
        method = response.request.method
        content_type = response.headers.get("content-type", "")
        if method == "GET" and response.status_code == 200 and content_type.startswith("text/event-stream"):
            self.get_stream_open.set()
        if method == "DELETE":
            self.deleted.append(response.status_code)

    def client(self) -> httpx2.AsyncClient:
        http = create_mcp_http_client()
        http.event_hooks = {"request": [self.on_request], "response": [self.on_response]}
        return http

    def posts(self) -> list[tuple[httpx2.Request, dict[str, Any]]]:
        out = []
        for request in self.requests:
            if request.method == "POST":
                try:
                    body = json.loads(request.content)
                except ValueError:
                    body = {}
                out.append((request, body))
        return out


# === server helpers ===


async def reload_config(text: str) -> dict[str, Any]:
    """Writes `text` as sluice's configuration and asks for a reload; returns the answer."""
    with open(CONFIG, "w", encoding="utf-8") as f:
        f.write(text)
    async with httpx2.AsyncClient(timeout=10.0) as http:
        answer = await http.post(f"{BASE}/admin/reload", headers={"authorization": f"Bearer {ADMIN_TOKEN}"})
    expect(answer.status_code == 200, f"POST /admin/reload answered {answer.status_code}: {answer.text}")
    body = answer.json()
    expect(
        {"tenant": "interop", "client": "agent"} in body.get("changed", []),
        f"the reload did not report interop/agent as changed: {body}",
    )
    return body


def original_config() -> str:
    with open(CONFIG, encoding="utf-8") as f:
        return f.read()


# === shared checks (both eras) ===


async def check_tools_list(client: Client, *, modern: bool) -> types.ListToolsResult:
    listed = await client.list_tools()
    names = {tool.name for tool in listed.tools}
    expect(TOOLS <= names, f"tools/list lacks some of {sorted(TOOLS)}: {sorted(names)}")
    for tool in listed.tools:
        expect(tool.input_schema.get("type") == "object", f"{tool.name}: inputSchema root is not an object")
    if modern:
        fields = listed.model_fields_set
        expect("ttl_ms" in fields and "cache_scope" in fields, f"no ttlMs/cacheScope on the wire: {sorted(fields)}")
        expect(listed.cache_scope == "private", f"cacheScope {listed.cache_scope!r}, want 'private'")
        expect(listed.result_type == "complete", f"resultType {listed.result_type!r}")
    return listed


async def check_call(client: Client) -> None:
    result = await client.call_tool("get_customer", {"id": "c-100"})
    expect(not result.is_error, f"isError result: {result.content}")
    expect(result.structured_content == ADA, f"structuredContent {result.structured_content!r}, want {ADA!r}")
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    expect(texts, f"no text content: {result.content}")
    expect(json.loads(texts[0]) == ADA, f"text content {texts[0]!r} is not the translated result")
    expect("internal_score" not in texts[0], "an unmapped downstream field leaked into the result")

    found = await client.call_tool("find_customers", {"city": "London"})
    want = {"total": 1, "customers": [{"id": "c-100", "name": "Ada Lovelace"}]}
    expect(not found.is_error, f"find_customers isError: {found.content}")
    expect(found.structured_content == want, f"find_customers {found.structured_content!r}, want {want!r}")


async def check_bad_arguments(client: Client) -> None:
    for arguments in ({}, {"id": 42}):
        result = await client.call_tool("get_customer", arguments)
        expect(result.is_error, f"get_customer{arguments} is not an isError result: {result}")
        texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
        expect(texts and texts[0], f"get_customer{arguments}: isError result without text")
        expect(result.structured_content is None, "an isError result carries structuredContent")
    missing = await client.call_tool("get_customer", {"id": "c-404"})
    expect(missing.is_error, f"a downstream 404 is not an isError result: {missing}")


async def check_unknown_tool(client: Client) -> None:
    try:
        await client.call_tool("no_such_tool", {})
    except MCPError as error:
        expect(error.error.code == -32602, f"unknown tool: code {error.error.code}, want -32602")
        return
    raise AssertionError("calling an unknown tool did not raise")


async def check_resources(client: Client, *, modern: bool) -> None:
    listed = await client.list_resources()
    uris = [str(resource.uri) for resource in listed.resources]
    expect(PROMPT_URI in uris, f"resources/list lacks {PROMPT_URI}: {uris}")
    if modern:
        expect("ttl_ms" in listed.model_fields_set, "resources/list without ttlMs")
    read = await client.read_resource(PROMPT_URI)
    texts = [c.text for c in read.contents if isinstance(c, types.TextResourceContents)]
    expect(texts and PROMPT_TEXT in texts[0], f"resources/read: {read.contents}")
    if modern:
        expect("ttl_ms" in read.model_fields_set, "resources/read without ttlMs")


async def check_prompts(client: Client) -> None:
    listed = await client.list_prompts()
    names = [prompt.name for prompt in listed.prompts]
    expect("crm" in names, f"prompts/list lacks crm: {names}")
    got = await client.get_prompt("crm")
    texts = [m.content.text for m in got.messages if isinstance(m.content, types.TextContent)]
    expect(texts and PROMPT_TEXT in texts[0], f"prompts/get: {got.messages}")


# === case 1: stateless, auto mode ===


async def case_stateless(report: Report) -> None:
    case = Case(report, "stateless/auto")
    wire = Wire()
    names = [
        "connect (server/discover, 2026-07-28 adopted)",
        "tools/list (resultType, ttlMs, cacheScope)",
        "tools/call (translated result, structuredContent)",
        "tools/call bad arguments -> isError",
        "tools/call unknown tool -> -32602",
        "resources/list + resources/read",
        "prompts/list + prompts/get",
        "subscriptions/listen gets tools/list_changed after a reload",
        "wire: no session, version header on every POST",
    ]
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(wire.client())
        client = Client(streamable_http_client(MCP_URL, http_client=http), read_timeout_seconds=READ_TIMEOUT)

        async def connect() -> None:
            await stack.enter_async_context(client)
            expect(client.protocol_version == MODERN, f"negotiated {client.protocol_version!r}, want {MODERN}")
            first = wire.posts()[0][1]
            expect(first.get("method") == "server/discover", f"first POST was {first.get('method')!r}")
            discovered = client.session.discover_result
            expect(discovered is not None, "no DiscoverResult adopted")
            expect(MODERN in discovered.supported_versions, f"supportedVersions {discovered.supported_versions}")
            expect(discovered.capabilities.tools is not None, "discover: no tools capability")

        if not await case.check(names[0], connect):
            case.skip_rest(names[1:], "no connection")
            return
        await case.check(names[1], lambda: check_tools_list(client, modern=True))
        await case.check(names[2], lambda: check_call(client))
        await case.check(names[3], lambda: check_bad_arguments(client))
        await case.check(names[4], lambda: check_unknown_tool(client))
        await case.check(names[5], lambda: check_resources(client, modern=True))
        await case.check(names[6], lambda: check_prompts(client))

        async def listen() -> None:
            before = original_config()
            async with client.listen(tools_list_changed=True) as sub:
                expect(sub.honored is not None and sub.honored.tools_list_changed, f"ack honored {sub.honored}")
                try:
                    await reload_config(before + ADDED_TOOL)
                    with anyio.fail_after(READ_TIMEOUT):
                        async for event in sub:
                            expect(isinstance(event, ToolsListChanged), f"unexpected event {event!r}")
                            break
                finally:
                    with anyio.CancelScope(shield=True):  # restore even when the case times out
                        await reload_config(before)
            relisted = await client.list_tools(cache_mode="refresh")
            expect("count_customers" not in {t.name for t in relisted.tools}, "the restored catalog still lists it")

        await case.check(names[7], listen)

        async def wire_rules() -> None:
            posts = wire.posts()
            expect(posts, "no POST recorded")
            for request, body in posts:
                if "id" in body:
                    version = request.headers.get("mcp-protocol-version")
                    expect(version == MODERN, f"{body.get('method')}: MCP-Protocol-Version {version!r}")
                    expect(request.headers.get("mcp-method") == body.get("method"), "Mcp-Method mismatch")
            expect(not wire.session_ids, f"sluice minted a session on the stateless path: {wire.session_ids}")
            expect(not any(r.method in ("GET", "DELETE") for r in wire.requests), "the client sent GET/DELETE")

        await case.check(names[8], wire_rules)


# === case 2: handshake era, legacy mode ===


async def case_handshake(report: Report) -> None:
    case = Case(report, "handshake/legacy")
    wire = Wire()
    list_changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            list_changed.set()

    names = [
        "initialize (session minted, 2025-11-25)",
        "tools/list",
        "tools/call (translated result, structuredContent)",
        "tools/call bad arguments -> isError",
        "tools/call unknown tool -> -32602",
        "resources/list + resources/read",
        "prompts/list + prompts/get",
        "ping",
        "GET stream gets tools/list_changed after a reload",
        "wire: session id and version header on every request after initialize",
        "DELETE on close, then the old session id is 404",
    ]
    session_id: str | None = None
    async with AsyncExitStack() as outer:
        http = await outer.enter_async_context(wire.client())
        client = Client(
            streamable_http_client(MCP_URL, http_client=http),
            mode="legacy",
            read_timeout_seconds=READ_TIMEOUT,
            message_handler=on_message,
        )
        async with AsyncExitStack() as stack:

            async def connect() -> None:
                nonlocal session_id
                await stack.enter_async_context(client)
                expect(
                    client.protocol_version == HANDSHAKE_LATEST,
                    f"negotiated {client.protocol_version!r}, want {HANDSHAKE_LATEST}",
                )
                first = wire.posts()[0]
                expect(first[1].get("method") == "initialize", f"first POST was {first[1].get('method')!r}")
                expect(wire.session_ids, "initialize minted no Mcp-Session-Id")
                session_id = wire.session_ids[0]
                expect(all(0x21 <= ord(ch) <= 0x7E for ch in session_id), f"session id {session_id!r}")
                expect(client.server_info is not None, "no serverInfo")

            if not await case.check(names[0], connect):
                case.skip_rest(names[1:], "no connection")
                return
            await case.check(names[1], lambda: check_tools_list(client, modern=False))
            await case.check(names[2], lambda: check_call(client))
            await case.check(names[3], lambda: check_bad_arguments(client))
            await case.check(names[4], lambda: check_unknown_tool(client))
            await case.check(names[5], lambda: check_resources(client, modern=False))
            await case.check(names[6], lambda: check_prompts(client))

            async def ping() -> None:
                await client.send_ping()

            await case.check(names[7], ping)

            async def get_stream() -> None:
                with anyio.fail_after(READ_TIMEOUT):
                    await wire.get_stream_open.wait()
                before = original_config()
                try:
                    await reload_config(before + ADDED_TOOL)
                    with anyio.fail_after(READ_TIMEOUT):
                        await list_changed.wait()
                    relisted = await client.list_tools()
                    expect("count_customers" in {t.name for t in relisted.tools}, "the added tool is not listed")
                    counted = await client.call_tool("count_customers", {})
                    expect(counted.structured_content == {"total": 2}, f"count_customers {counted}")
                finally:
                    with anyio.CancelScope(shield=True):  # restore even when the case times out
                        await reload_config(before)

            await case.check(names[8], get_stream)

            async def wire_rules() -> None:
                posts = wire.posts()
                init_request, _ = posts[0]
                expect("mcp-session-id" not in init_request.headers, "initialize carried a session id")
                expect("mcp-protocol-version" not in init_request.headers, "initialize carried a version header")
                for request, body in posts[1:]:
                    expect(request.headers.get("mcp-session-id") == session_id, f"{body.get('method')}: session id")
                    version = request.headers.get("mcp-protocol-version")
                    expect(version == HANDSHAKE_LATEST, f"{body.get('method')}: MCP-Protocol-Version {version!r}")
                gets = [r for r in wire.requests if r.method == "GET"]
                expect(gets, "the client opened no GET stream")
                expect(all(r.headers.get("mcp-session-id") == session_id for r in gets), "GET without session id")
                expect(len(set(wire.session_ids)) == 1, f"more than one session id: {set(wire.session_ids)}")

            await case.check(names[9], wire_rules)
        # The client is closed here: the SDK sends DELETE with the session id.

        async def deleted() -> None:
            expect(session_id is not None, "no session id")
            expect(wire.deleted and wire.deleted[-1] in (200, 204), f"DELETE answered {wire.deleted}")
            async with httpx2.AsyncClient(timeout=10.0) as raw:
                answer = await raw.post(
                    MCP_URL,
                    headers={
                        "content-type": "application/json",
                        "accept": "application/json, text/event-stream",
                        "mcp-session-id": session_id,
                        "mcp-protocol-version": HANDSHAKE_LATEST,
                    },
                    content=json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}),
                )
            expect(answer.status_code == 404, f"old session id answered {answer.status_code}: {answer.text}")

        await case.check(names[10], deleted)


# === case 3: the 2024-11-05 HTTP+SSE transport ===


async def case_legacy_sse(report: Report) -> None:
    case = Case(report, "legacy-sse")
    names = [
        "initialize over /sse + /messages",
        "tools/list",
        "tools/call (translated result, structuredContent)",
        "tools/call bad arguments -> isError",
        "auto mode (server/discover probe) falls back to initialize",
    ]
    session_ids: list[str] = []
    transport = sse_client(SSE_URL, timeout=READ_TIMEOUT, on_session_created=session_ids.append)
    client = Client(transport, mode="legacy", read_timeout_seconds=READ_TIMEOUT)
    async with AsyncExitStack() as stack:

        async def connect() -> None:
            await stack.enter_async_context(client)
            expect(session_ids, "the endpoint event named no sessionId")
            expect(client.protocol_version is not None, "nothing negotiated")
            expect(client.server_info is not None, "no serverInfo")

        if not await case.check(names[0], connect):
            case.skip_rest(names[1:], "no connection")
            return
        await case.check(names[1], lambda: check_tools_list(client, modern=False))
        await case.check(names[2], lambda: check_call(client))
        await case.check(names[3], lambda: check_bad_arguments(client))

    async def auto_fallback() -> None:
        # The SDK's default mode probes server/discover, which the legacy transport must refuse
        # in a way the client reads as "not modern" (here: -32601 inside the session).
        transport = sse_client(SSE_URL, timeout=READ_TIMEOUT)
        async with Client(transport, read_timeout_seconds=READ_TIMEOUT) as auto:
            expect(auto.protocol_version == HANDSHAKE_LATEST, f"negotiated {auto.protocol_version!r}")
            listed = await auto.list_tools()
            expect(TOOLS <= {tool.name for tool in listed.tools}, "tools/list after the fallback")

    await case.check(names[4], auto_fallback)


# === case 4: the handshake era's framing (post_framing) ===


def sse_answered(wire: Wire, want: str = "text/event-stream") -> None:
    """Every JSON-RPC request POSTed through `wire` was answered with `want`."""
    answered = 0
    for response in wire.responses:
        request = response.request
        if request.method != "POST":
            continue
        try:
            body = json.loads(request.content)
        except ValueError:
            continue
        if "id" not in body:
            continue
        answered += 1
        content_type = response.headers.get("content-type", "")
        expect(
            response.status_code == 200 and content_type.startswith(want),
            f"{body.get('method')}: {response.status_code} {content_type!r}, want {want}",
        )
    expect(answered > 0, "no request was answered")


async def case_sse_answers(report: Report) -> None:
    case = Case(report, "sse-answers")

    async def json_answers() -> None:
        wire = Wire()
        async with wire.client() as http:
            transport = streamable_http_client(JSON_ANSWERS_URL, http_client=http)
            client = Client(transport, mode="legacy", read_timeout_seconds=READ_TIMEOUT)
            async with client:
                expect(client.protocol_version == HANDSHAKE_LATEST, f"negotiated {client.protocol_version!r}")
                await check_tools_list(client, modern=False)
                await check_call(client)
                await client.send_ping()
        sse_answered(wire, want="application/json")

    async def handshake() -> None:
        wire = Wire()
        async with wire.client() as http:
            transport = streamable_http_client(MCP_URL, http_client=http)
            client = Client(transport, mode="legacy", read_timeout_seconds=READ_TIMEOUT)
            async with client:
                expect(client.protocol_version == HANDSHAKE_LATEST, f"negotiated {client.protocol_version!r}")
                await check_tools_list(client, modern=False)
                await check_call(client)
                await check_bad_arguments(client)
                await check_resources(client, modern=False)
                await client.send_ping()
        sse_answered(wire)
        expect(wire.deleted and wire.deleted[-1] in (200, 204), f"DELETE answered {wire.deleted}")

    await case.check("handshake (default): initialize, lists, tools/call, resources, ping over SSE answers", handshake)
    await case.check("handshake (post_framing = json): initialize, lists, tools/call, ping over JSON", json_answers)


# === case 5: resumption (the SDK's ClientMessageMetadata) ===


async def read_replay(url: str, session_id: str, last_event_id: str) -> list[tuple[str | None, str]]:
    """GETs `url` with `Last-Event-ID` and reads the SSE stream to its end: (id, data) per event."""
    headers = {
        "accept": "text/event-stream",
        "mcp-session-id": session_id,
        "mcp-protocol-version": HANDSHAKE_LATEST,
        "last-event-id": last_event_id,
    }
    events: list[tuple[str | None, str]] = []
    async with httpx2.AsyncClient(timeout=READ_TIMEOUT) as raw:
        async with raw.stream("GET", url, headers=headers) as response:
            content_type = response.headers.get("content-type", "")
            expect(
                response.status_code == 200 and content_type.startswith("text/event-stream"),
                f"GET with Last-Event-ID answered {response.status_code} {content_type!r}",
            )
            event_id: str | None = None
            data: list[str] = []
            async for line in response.aiter_lines():
                if line == "":
                    if event_id is not None or data:
                        events.append((event_id, "\n".join(data)))
                    event_id, data = None, []
                elif line.startswith("id:"):
                    event_id = line[3:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
            if event_id is not None or data:
                events.append((event_id, "\n".join(data)))
    return events


def stream_of(event_id: str) -> str:
    """The `{instance}.{stream}` part of a sluice event id `{instance}.{stream}.{seq}`."""
    parts = event_id.split(".")
    expect(len(parts) == 3 and parts[2].isdigit(), f"event id {event_id!r} is not instance.stream.seq")
    return ".".join(parts[:2])


async def case_resumption(report: Report) -> None:
    case = Case(report, "resumption")
    wire = Wire()
    names = [
        "initialize (default configuration: 2025-11-25, SSE answers)",
        "tools/call reports resumption tokens: the priming id, then the answer's",
        "ping on its own stream (other event ids)",
        "resume the tools/call stream (GET, Last-Event-ID = its priming id) -> the same result",
        "the SDK's resumed stream carried only the tools/call answer",
        "raw replay from the priming id: only the tools/call answer",
    ]
    call_tokens: list[str] = []
    ping_tokens: list[str] = []
    resumed_tokens: list[str] = []
    first_result: types.CallToolResult | None = None
    call_id: Any = None
    ping_id: Any = None
    session_id: str | None = None

    def request_id(method: str) -> Any:
        ids = [body.get("id") for _, body in wire.posts() if body.get("method") == method]
        expect(ids, f"no {method} POST recorded")
        return ids[-1]

    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(wire.client())
        client = Client(
            streamable_http_client(MCP_URL, http_client=http), mode="legacy", read_timeout_seconds=READ_TIMEOUT
        )
        get_customer = types.CallToolRequest(
            params=types.CallToolRequestParams(name="get_customer", arguments={"id": "c-100"})
        )

        async def connect() -> None:
            nonlocal session_id
            await stack.enter_async_context(client)
            expect(client.protocol_version == HANDSHAKE_LATEST, f"negotiated {client.protocol_version!r}")
            expect(wire.session_ids, "initialize minted no Mcp-Session-Id")
            session_id = wire.session_ids[0]

        if not await case.check(names[0], connect):
            case.skip_rest(names[1:], "no connection")
            return

        async def call() -> None:
            nonlocal first_result, call_id

            async def on_token(token: str) -> None:
                call_tokens.append(token)

            first_result = await client.session.send_request(
                get_customer,
                types.CallToolResult,
                metadata=ClientMessageMetadata(on_resumption_token_update=on_token),
            )
            call_id = request_id("tools/call")
            expect(first_result.structured_content == ADA, f"structuredContent {first_result.structured_content!r}")
            expect(len(call_tokens) == 2, f"tokens {call_tokens}, want the priming id and the answer's id")
            expect(len({stream_of(t) for t in call_tokens}) == 1, f"tokens of more than one stream: {call_tokens}")

        if not await case.check(names[1], call):
            case.skip_rest(names[2:], "no resumption token")
            return

        async def ping() -> None:
            nonlocal ping_id

            async def on_token(token: str) -> None:
                ping_tokens.append(token)

            await client.session.send_request(
                types.PingRequest(), types.EmptyResult, metadata=ClientMessageMetadata(on_resumption_token_update=on_token)
            )
            ping_id = request_id("ping")
            expect(ping_tokens, "the ping's stream reported no token")
            expect(
                {stream_of(t) for t in ping_tokens}.isdisjoint({stream_of(t) for t in call_tokens}),
                f"ping tokens {ping_tokens} share the tools/call stream {call_tokens}",
            )

        await case.check(names[2], ping)

        async def resume() -> None:
            async def on_token(token: str) -> None:
                resumed_tokens.append(token)

            before = len(wire.requests)
            resumed = await client.session.send_request(
                get_customer,
                types.CallToolResult,
                metadata=ClientMessageMetadata(resumption_token=call_tokens[0], on_resumption_token_update=on_token),
            )
            expect(resumed == first_result, f"resumed result {resumed!r}, want {first_result!r}")
            sent = wire.requests[before:]
            gets = [r for r in sent if r.method == "GET" and r.headers.get("last-event-id") == call_tokens[0]]
            expect(gets, f"no GET with Last-Event-ID {call_tokens[0]}: {[(r.method, dict(r.headers)) for r in sent]}")
            expect(not any(r.method == "POST" for r in sent), "resuming POSTed the request again")
            expect(gets[0].headers.get("mcp-session-id") == session_id, "the resumption GET lacks the session id")

        if not await case.check(names[3], resume):
            case.skip_rest(names[4:], "no resumed result")
            return

        async def resumed_only_answer() -> None:
            # The SDK reports the id of each event it reads; the replay starts after the priming event.
            expect(resumed_tokens == call_tokens[1:], f"replayed event ids {resumed_tokens}, want {call_tokens[1:]}")

        await case.check(names[4], resumed_only_answer)

        async def raw_replay() -> None:
            expect(session_id is not None, "no session id")
            events = await read_replay(MCP_URL, session_id, call_tokens[0])
            messages = [(event_id, json.loads(data)) for event_id, data in events if data]
            expect(len(messages) == 1, f"replay of {len(messages)} messages, want 1: {events}")
            event_id, message = messages[0]
            expect(event_id == call_tokens[-1], f"replayed event id {event_id!r}, want {call_tokens[-1]!r}")
            expect(message.get("id") == call_id, f"replayed answer to id {message.get('id')!r}, want {call_id!r}")
            expect(message.get("id") != ping_id, "the ping's answer was replayed")
            replayed = types.CallToolResult.model_validate(message.get("result"))
            expect(replayed == first_result, f"replayed result {replayed!r}")

        await case.check(names[5], raw_replay)


async def case_auth(report: Report) -> None:
    case = Case(report, "auth")
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": HANDSHAKE_LATEST, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
    }
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

    async def discovery() -> None:
        # What the SDK's OAuth provider does on a 401: read the challenge, find the metadata.
        async with create_mcp_http_client() as http:
            response = await http.post(SECURE_URL, json=initialize, headers=headers)
            expect(response.status_code == 401, f"no credential answered {response.status_code}")
            metadata_url = extract_resource_metadata_from_www_auth(response)
            want = f"{BASE}/.well-known/oauth-protected-resource/runtime/secure/agent/mcp"
            expect(metadata_url == want, f"resource_metadata {metadata_url!r}, want {want!r}")
            expect(extract_scope_from_www_auth(response) == "mcp:tools", "challenge scope")
            urls = build_protected_resource_metadata_discovery_urls(metadata_url, SECURE_URL)
            expect(bool(urls) and urls[0] == want, f"discovery order {urls}")
            metadata = await handle_protected_resource_response(await http.get(urls[0]))
            expect(metadata is not None, "the SDK could not parse the protected-resource metadata")
            expect(str(metadata.resource).rstrip("/") == SECURE_URL, f"resource {metadata.resource}")
            servers = [str(s).rstrip("/") for s in metadata.authorization_servers]
            expect(servers == ["https://login.example.com/secure"], f"authorization_servers {servers}")

    async def with_key() -> None:
        async with create_mcp_http_client(headers={"authorization": f"Bearer {SECURE_KEY}"}) as http:
            transport = streamable_http_client(SECURE_URL, http_client=http)
            client = Client(transport, mode="legacy", read_timeout_seconds=READ_TIMEOUT)
            async with client:
                tools = await client.list_tools()
                expect([t.name for t in tools.tools] == ["get_customer"], f"tools {tools.tools}")
                result = await client.call_tool("get_customer", {"id": "c-100"})
                expect(not result.is_error, f"call failed: {result}")

    async def wrong_key() -> None:
        bad = SECURE_KEY[:-4] + "AAAA"
        async with create_mcp_http_client() as http:
            response = await http.post(SECURE_URL, json=initialize, headers={**headers, "authorization": f"Bearer {bad}"})
            expect(response.status_code == 401, f"wrong key answered {response.status_code}")
            challenge = response.headers.get("www-authenticate", "")
            expect('error="invalid_token"' in challenge, f"challenge {challenge!r}")

    await case.check("401 challenge -> SDK finds and parses the protected-resource metadata", discovery)
    await case.check("API key: initialize, tools/list, tools/call", with_key)
    await case.check("wrong API key -> 401 invalid_token", wrong_key)


# === main ===


async def run_case(report: Report, name: str, case: Callable[[Report], Awaitable[None]]) -> None:
    try:
        with anyio.fail_after(CASE_TIMEOUT):
            await case(report)
    except TimeoutError:
        report.record(f"{name}: case completed", TimeoutError(f"the case did not finish within {CASE_TIMEOUT:.0f} s"))
    except BaseException as error:  # noqa: BLE001 - a crashed case is one failure, not a crash of the run
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        report.record(f"{name}: case completed", error)


async def main() -> int:
    report = Report()
    await run_case(report, "stateless/auto", case_stateless)
    await run_case(report, "handshake/legacy", case_handshake)
    await run_case(report, "legacy-sse", case_legacy_sse)
    await run_case(report, "sse-answers", case_sse_answers)
    await run_case(report, "resumption", case_resumption)
    await run_case(report, "auth", case_auth)
    if report.xfailed:
        print(f"({report.xfailed} expected failure(s), see XFAIL lines)", flush=True)
    line = report.summary()
    if SUMMARY:
        with open(SUMMARY, "w", encoding="utf-8") as f:
            f.write(line + "\n")
    print(line, flush=True)
    return 0 if report.failed == 0 and report.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main))
