"""What the A2A interop suites share: the fixture's addresses and keys, a wire log printed when a
check fails, httpx clients presenting a key, a plain-http webhook receiver, the suite runner, and
SDK peers built from a card.

Imported by test_a2a_python.py (the runtime as an A2A agent) and test_a2a_remote.py (the
concentrator in front of remote SDK agents), both run by run.sh.
"""

import asyncio
import collections
import json
import os
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from google.protobuf.json_format import MessageToDict, ParseDict

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    AgentCard,
    AgentInterface,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    SendMessageConfiguration,
    SendMessageRequest,
)

BASE = os.environ.get("SLUICE_URL", "http://127.0.0.1:8080").rstrip("/")
AGENT_PATH = "/runtime/a2a/agent/a2a"
OTHER_TENANT_PATH = "/runtime/other/agent/a2a"

# The fixture's API keys (sluice.a2a.toml holds their hashes).
ALICE = "rtk_a2aalicekey2_alice-a2a-interop-secret-0123456789abcdefgh"
BOB = "rtk_a2abobkey234_bob-a2a-interop-secret-0123456789abcdefghij"

TERMINAL = {
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
}
# A single check never runs longer than this.
CHECK_TIMEOUT = 40.0
# How long a check waits for a task or a push delivery before it gives up.
WAIT = 15.0

VERBOSE = os.environ.get("A2A_VERBOSE") == "1"

ADA = {"id": "c-100", "name": "Ada Lovelace", "city": "London"}
GRACE = {"id": "c-200", "name": "Grace Hopper", "city": "New York"}


# === the wire log: the last HTTP exchanges, printed when a check fails ===

WIRE = collections.deque(maxlen=6)


async def _log_request(request):
    body = request.content.decode("utf-8", "replace") if request.content else ""
    WIRE.append({"request": f"{request.method} {request.url}", "headers": _shown(request.headers), "body": body})


async def _log_response(response):
    entry = WIRE[-1] if WIRE else {}
    entry["status"] = response.status_code
    kind = response.headers.get("content-type", "")
    if "text/event-stream" in kind:
        entry["response"] = "(event stream)"
    else:
        await response.aread()
        entry["response"] = response.text


def _shown(headers):
    keep = ("a2a-version", "content-type", "accept")
    return {k: v for k, v in headers.items() if k.lower() in keep}


def wire_dump():
    lines = []
    for entry in list(WIRE)[-3:]:
        lines.append(f"    > {entry.get('request')} {json.dumps(entry.get('headers'))}")
        if entry.get("body"):
            lines.append(f"    > {entry['body'][:700]}")
        lines.append(f"    < {entry.get('status')} {str(entry.get('response', ''))[:700]}")
    return "\n".join(lines)


def http_client(token=None, header="bearer", **kwargs):
    """An httpx client presenting `token` (as a bearer token or as X-API-Key)."""
    headers = {}
    if token and header == "bearer":
        headers["Authorization"] = f"Bearer {token}"
    elif token:
        headers["X-API-Key"] = token
    return httpx.AsyncClient(
        headers=headers,
        timeout=httpx.Timeout(30.0),
        event_hooks={"request": [_log_request], "response": [_log_response]},
        **kwargs,
    )


# === the webhook receiver ===


class Receiver:
    """A plain-http webhook receiver on 127.0.0.1 recording every POST (path, headers, body)."""

    def __init__(self):
        self.posts = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
                pass

            def do_POST(self):  # noqa: N802 - the stdlib's name
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                with outer.lock:
                    outer.posts.append(
                        {
                            "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": body,
                        }
                    )
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def received(self, path):
        with self.lock:
            return [p for p in self.posts if p["path"] == path]

    def close(self):
        self.server.shutdown()


# === helpers ===


def tool_message(tool, arguments, *, task_id=None, context_id=None, as_text=False):
    """A user message whose one part runs `tool` (a data part, or a text part holding the JSON)."""
    call = {"tool": tool, "arguments": arguments}
    part = {"text": json.dumps(call)} if as_text else {"data": call}
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [part]}
    if task_id:
        message["taskId"] = task_id
    if context_id:
        message["contextId"] = context_id
    return ParseDict(message, Message())


def send_request(message, *, return_immediately=False, push=None, history_length=None):
    configuration = SendMessageConfiguration(return_immediately=return_immediately)
    if push is not None:
        configuration.task_push_notification_config.CopyFrom(push)
    if history_length is not None:
        configuration.history_length = history_length
    return SendMessageRequest(message=message, configuration=configuration)


def as_dict(message):
    return MessageToDict(message)


def state_of(task):
    return as_dict(task).get("status", {}).get("state", "")


def event_kind(event):
    """`task`, `statusUpdate`, `artifactUpdate` or `message` and the event's JSON."""
    which = event.WhichOneof("payload")
    data = as_dict(event)
    key = {"status_update": "statusUpdate", "artifact_update": "artifactUpdate"}.get(which, which)
    return key, data.get(key, {})


def data_parts(artifact):
    return [p["data"] for p in artifact.get("parts", []) if "data" in p]


def text_parts(artifact):
    return [p["text"] for p in artifact.get("parts", []) if "text" in p]


def status_text(task_json):
    parts = task_json.get("status", {}).get("message", {}).get("parts", [])
    return " ".join(p.get("text", "") for p in parts)


def expect(condition, why):
    if not condition:
        raise AssertionError(why)


def _names(kind):
    return " or ".join(k.__name__ for k in kind) if isinstance(kind, tuple) else kind.__name__


async def expect_error(awaitable, kind):
    """Awaits `awaitable` and returns the typed SDK error it raises (`kind`, a class or a tuple of
    them), failing otherwise."""
    try:
        result = await awaitable
    except kind as err:
        return err
    except Exception as err:  # noqa: BLE001 - the wrong error is the finding
        raise AssertionError(f"expected {_names(kind)}, got {type(err).__name__}: {err}") from err
    raise AssertionError(f"expected {_names(kind)}, got a result: {result!r}"[:600])


async def first_of(iterator):
    async for item in iterator:
        return item
    raise AssertionError("the iterator ended with no item")


async def collect(iterator, limit=200):
    events = []
    async for event in iterator:
        events.append(event)
        if len(events) >= limit:
            break
    return events


async def consume_stream(stream):
    """Reads a stream of StreamResponse into (kind, json) pairs until it closes."""
    return [event_kind(event) for event in await collect(stream)]


async def drive_stream(iterator):
    """Reads a subscription through to the end, raising the first error it meets."""
    return await collect(iterator)


def check_stream_order(events, task_id=None, final="TASK_STATE_COMPLETED", artifact=True):
    """The A2A stream shape: the Task first, then updates in order, the terminal status last."""
    kinds = [kind for kind, _ in events]
    expect(events, "the stream had no event")
    expect(kinds[0] == "task", f"the first event is {kinds[0]}, not the Task: {kinds}")
    first = events[0][1]
    if task_id:
        expect(first.get("id") == task_id, f"the first event is task {first.get('id')}, not {task_id}")
    states = [data.get("status", {}).get("state") for kind, data in events if kind == "statusUpdate"]
    expect(states, f"no status update in {kinds}")
    expect(states[-1] == final, f"the last status is {states[-1]}, not {final}: {states}")
    expect(kinds[-1] == "statusUpdate", f"the stream does not end with the terminal status: {kinds}")
    first_state = first.get("status", {}).get("state")
    if first_state == "TASK_STATE_SUBMITTED":
        expect("TASK_STATE_WORKING" in states, f"SUBMITTED, then no WORKING: {states}")
    if artifact:
        expect("artifactUpdate" in kinds, f"no artifact update in {kinds}")
        expect(
            kinds.index("artifactUpdate") < len(kinds) - 1,
            f"the artifact comes after the terminal status: {kinds}",
        )
        if "TASK_STATE_WORKING" in states:
            working_at = next(
                i for i, (k, d) in enumerate(events) if k == "statusUpdate" and d["status"]["state"] == "TASK_STATE_WORKING"
            )
            expect(working_at < kinds.index("artifactUpdate"), f"WORKING after the artifact: {kinds}")
    for kind, data in events[1:]:
        if kind in ("statusUpdate", "artifactUpdate") and task_id:
            expect(data.get("taskId") == task_id, f"an event of another task: {data}")


# === the suite ===


class Suite:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.failures = []

    async def check(self, name, fn):
        WIRE.clear()
        started = time.monotonic()
        try:
            await asyncio.wait_for(fn(), CHECK_TIMEOUT)
        except Exception as err:  # noqa: BLE001 - every failure is reported, none stops the suite
            self.failed += 1
            why = str(err) or type(err).__name__
            if isinstance(err, asyncio.TimeoutError):
                why = f"timed out after {CHECK_TIMEOUT:.0f}s"
            print(f"FAIL   {name}: {type(err).__name__}: {why}"[:1500], flush=True)
            dump = wire_dump()
            if dump:
                print(dump, flush=True)
            if VERBOSE:
                traceback.print_exc()
            self.failures.append(name)
        else:
            self.passed += 1
            print(f"PASS   {name} ({time.monotonic() - started:.1f}s)", flush=True)

    def report(self, notes=()):
        """Prints the notes and the summary line (also to $A2A_SUMMARY); the exit status."""
        for note in notes:
            print(f"note   {note}", flush=True)
        line = f"{self.passed} passed, {self.failed} failed"
        summary = os.environ.get("A2A_SUMMARY")
        if summary:
            with open(summary, "w") as handle:
                handle.write(line + "\n")
        print(line, flush=True)
        return 1 if self.failed else 0


class Peer:
    """One caller of one agent interface: SDK clients built from `card` with the caller's key."""

    def __init__(self, card, token, header="bearer"):
        self.card = card
        self.token = token
        self.header = header
        self.http = http_client(token, header)

    def client(self, streaming=False, polling=False):
        config = ClientConfig(streaming=streaming, polling=polling, httpx_client=self.http)
        return ClientFactory(config).create(self.card)

    async def send(self, request):
        """A non-streaming SendMessage; the Task it answers (as a protobuf Task)."""
        async with self.client() as client:
            response = await first_of(client.send_message(request))
        expect(response.HasField("task"), f"the answer is not a Task: {as_dict(response)}")
        return response.task

    async def get(self, task_id, history_length=None):
        request = GetTaskRequest(id=task_id)
        if history_length is not None:
            request.history_length = history_length
        async with self.client() as client:
            return await client.get_task(request)

    async def until_terminal(self, task_id):
        deadline = time.monotonic() + WAIT
        while True:
            task = await self.get(task_id)
            if state_of(task) in TERMINAL:
                return task
            expect(time.monotonic() < deadline, f"task {task_id} never ended: {as_dict(task)}")
            await asyncio.sleep(0.1)

    async def slow(self, ms=3000):
        """A running `slow` task (return immediately); its JSON.

        The call travels as a text part holding the JSON, so `ms` stays a JSON integer: in a data
        part the SDK encodes every number as a protobuf double (`3000.0`), which the check
        `integer arguments` covers on its own."""
        message = tool_message("slow", {"ms": ms}, as_text=True)
        task = await self.send(send_request(message, return_immediately=True))
        data = as_dict(task)
        expect(
            data.get("status", {}).get("state") in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"),
            f"a slow task answered immediately is not running: {data}",
        )
        return data

    async def cancel(self, task_id):
        async with self.client() as client:
            return await client.cancel_task(CancelTaskRequest(id=task_id))

    async def close(self):
        await self.http.aclose()


def interface_card(card, version):
    """`card` with only its JSON-RPC interface of protocol `version` (so the SDK picks 1.0 or its
    0.3 compat transport)."""
    chosen = [i for i in card.supported_interfaces if i.protocol_binding == "JSONRPC" and i.protocol_version == version]
    expect(chosen, f"the card has no JSONRPC interface with protocolVersion {version}: {as_dict(card).get('supportedInterfaces')}")
    narrowed = AgentCard()
    narrowed.CopyFrom(card)
    del narrowed.supported_interfaces[:]
    narrowed.supported_interfaces.append(AgentInterface(**{
        "url": chosen[0].url,
        "protocol_binding": chosen[0].protocol_binding,
        "protocol_version": chosen[0].protocol_version,
    }))
    return narrowed


async def resolve_card(base):
    async with http_client() as http:
        return await A2ACardResolver(http, f"{base}{AGENT_PATH}").get_agent_card()
