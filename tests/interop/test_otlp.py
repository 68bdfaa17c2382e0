"""sluice's OpenTelemetry traces against a real OTLP/HTTP receiver built on the official
`opentelemetry-proto` package (it decodes every ExportTraceServiceRequest that arrives).

Starts the receiver, a downstream (REST API and federated provider) that records the
`traceparent` it is sent, a remote A2A agent that records the context it is sent, and
`sluice serve` with `[telemetry]` pointing at the receiver; sends MCP (both eras), REST, A2A,
federated and concentrator calls carrying W3C trace context in HTTP headers and in
`params._meta`; stops sluice (which flushes); then checks span names, kinds, attributes and
parent/child links across each downstream hop. A second
instance at `sampling_ratio = 0.0` must export nothing for requests without a sampled parent.

Env (set by run.sh): SLUICE_BIN, INTEROP_SUMMARY.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

SLUICE = os.environ["SLUICE_BIN"]
SUMMARY = os.environ.get("INTEROP_SUMMARY")

MODERN = "2026-07-28"
HTTP_TRACE = "0af7651916cd43dd8448eb211c80319c"
HTTP_PARENT = "b7ad6b7169203331"
META_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
META_PARENT = "00f067aa0ba902b7"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# === the receiver and the downstream ===

spans: list[trace_pb2.Span] = []
resources: list[dict[str, str]] = []
seen_traceparents: list[str] = []
lock = threading.Lock()


class Stub(BaseHTTPRequestHandler):
    """What the three stubs share: a 200 answer of `body` and no access log."""

    def answer(self, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


class Receiver(Stub):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        with lock:
            for rs in request.resource_spans:
                resources.append({a.key: a.value.string_value for a in rs.resource.attributes})
                for ss in rs.scope_spans:
                    spans.extend(ss.spans)
        self.answer(trace_service_pb2.ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")


PEOPLE = {"records": [{"source_identity": "crm", "external_id": "crm-1", "record_type": "person",
                        "observed_at": "2026-11-30T10:00:00Z", "version": 1,
                        "fields": {"name": "Ada", "mail": "ada@example.com"}}], "next_cursor": None}


class Downstream(Stub):
    """The REST tool's API (`/echo`) and the federated tool's provider source (`/people`)."""

    def do_GET(self) -> None:  # noqa: N802
        with lock:
            seen_traceparents.append(self.headers.get("traceparent", ""))
        self.answer(json.dumps(PEOPLE).encode() if self.path.startswith("/people") else b'{"message":"hello"}')


upstream_seen: list[tuple[str, dict]] = []


class UpstreamAgent(Stub):
    """A registered remote A2A agent: its card, and a SendMessage answered with a Message; keeps
    the `traceparent` header and the request's `metadata` of every call."""

    def do_GET(self) -> None:  # noqa: N802
        port = self.server.server_address[1]
        card = {"name": "up", "description": "Upstream agent.", "version": "1",
                "supportedInterfaces": [{"url": f"http://127.0.0.1:{port}/a2a", "protocolBinding": "JSONRPC",
                                         "protocolVersion": "1.0"}],
                "capabilities": {"streaming": False}, "defaultInputModes": ["text/plain"],
                "defaultOutputModes": ["text/plain"], "skills": []}
        self.answer(json.dumps(card).encode())

    def do_POST(self) -> None:  # noqa: N802
        request = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        with lock:
            upstream_seen.append((self.headers.get("traceparent", ""), request.get("params", {}).get("metadata", {})))
        self.answer(json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "result": {"message": {
            "messageId": "up-1", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}}}).encode())


def serve(handler) -> int:
    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return port


CONFIG = """
[server]
post_framing = "json"

[telemetry]
enabled = true
endpoint = "http://127.0.0.1:{receiver}/v1/traces"
sampling_ratio = {ratio}
service_name = "sluice-interop"

[[tenant]]
id = "acme"
auth = {{ anonymous = true }}

[[tenant.client]]
id = "app"

[[tenant.toolset]]
id = "t"

[[tenant.toolset.tool]]
name = "echo"
description = "Echo a greeting."
downstream = {{ kind = "rest", method = "GET", url = "http://127.0.0.1:{downstream}/echo" }}

[[tenant.toolset.tool.output]]
source = "message"
exposed = "message"

[[tenant.toolset.tool]]
name = "people"
description = "Federated people search."
[tenant.toolset.tool.downstream]
kind = "federated"
record_type = "person"
[[tenant.toolset.tool.downstream.source]]
source_type = "crm"
source_identity = "crm"
url = "http://127.0.0.1:{downstream}/people"
[tenant.toolset.tool.downstream.source.fields]
display_name = "name"
email = "mail"
[[tenant.toolset.tool.input]]
source = "q"
exposed = "query"

[[tenant.assignment]]
client = "app"
toolset = "t"

[[tenant.a2a_agent]]
id = "up"
card_url = "http://127.0.0.1:{upstream}/.well-known/agent-card.json"
clients = ["app"]
"""


def start(dir: Path, name: str, receiver: int, downstream: int, upstream: int, ratio: float) -> tuple[subprocess.Popen, str]:
    config = dir / f"{name}.toml"
    config.write_text(CONFIG.format(receiver=receiver, downstream=downstream, upstream=upstream, ratio=ratio))
    port = free_port()
    log = open(dir / f"{name}.log", "wb")
    proc = subprocess.Popen(
        [SLUICE, "serve", "--config", str(config), "--listen", f"127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited: {(dir / f'{name}.log').read_text()}")
        try:
            if urllib.request.urlopen(f"{base}/healthz", timeout=1).status == 200:
                return proc, base
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{name} did not become healthy")


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()


def post(url: str, body: dict, headers: dict[str, str]) -> tuple[int, dict, dict]:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST")
    request.add_header("content-type", "application/json")
    request.add_header("accept", "application/json, text/event-stream")
    for key, value in headers.items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}"), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}"), dict(error.headers)


def stateless(method: str, params: dict, name: str | None = None, extra_meta: dict | None = None) -> tuple[dict, dict]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "otlp-check", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
        **(extra_meta or {}),
    }
    headers = {"mcp-protocol-version": MODERN, "mcp-method": method}
    if name:
        headers["mcp-name"] = name
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "_meta": meta}}, headers


# === checks ===

passed = 0
failed = 0


def check(name: str, body) -> None:
    global passed, failed
    try:
        body()
        passed += 1
        print(f"PASS   otlp: {name}", flush=True)
    except Exception as error:  # noqa: BLE001 - each failure is a verdict
        failed += 1
        print(f"FAIL   otlp: {name}: {type(error).__name__}: {error}", flush=True)


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def attrs(span: trace_pb2.Span) -> dict:
    out = {}
    for a in span.attributes:
        v = a.value
        out[a.key] = v.string_value if v.HasField("string_value") else v.int_value if v.HasField("int_value") else v
    return out


def find(name: str, trace_id: str | None = None) -> trace_pb2.Span:
    with lock:
        found = [s for s in spans if s.name == name and (trace_id is None or s.trace_id.hex() == trace_id)]
    expect(len(found) == 1, f"{len(found)} spans named {name!r} (trace {trace_id}); have {sorted({s.name for s in spans})}")
    return found[0]


def children(parent: trace_pb2.Span) -> list[trace_pb2.Span]:
    with lock:
        return [s for s in spans if s.parent_span_id == parent.span_id and s.trace_id == parent.trace_id]


def main() -> int:
    receiver = serve(Receiver)
    downstream = serve(Downstream)
    upstream = serve(UpstreamAgent)
    with tempfile.TemporaryDirectory(prefix="sluice-otlp-") as tmp:
        dir = Path(tmp)
        sluice, base = start(dir, "traced", receiver, downstream, upstream, 1.0)
        mcp = f"{base}/runtime/acme/app/mcp"
        http_tp = f"00-{HTTP_TRACE}-{HTTP_PARENT}-01"
        meta_tp = f"00-{META_TRACE}-{META_PARENT}-01"
        try:
            # 1. stateless tools/call, context in both places: _meta is the parent.
            body, headers = stateless("tools/call", {"name": "echo", "arguments": {}}, "echo", {"traceparent": meta_tp})
            status, answer, _ = post(mcp, body, {**headers, "traceparent": http_tp})
            expect(status == 200 and answer["result"]["isError"] is False, f"call: {status} {answer}")
            # 2. handshake-era session: HTTP context only.
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "otlp", "version": "1"}}}
            status, answer, response_headers = post(mcp, init, {})
            session = {k.lower(): v for k, v in response_headers.items()}["mcp-session-id"]
            hs = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
            post(mcp, {"jsonrpc": "2.0", "method": "notifications/initialized"}, hs)
            session_tp = f"00-{'1' * 32}-{'2' * 16}-01"
            call = {"jsonrpc": "2.0", "id": "call-9", "method": "tools/call", "params": {"name": "echo", "arguments": {}}}
            status, answer, _ = post(mcp, call, {**hs, "traceparent": session_tp})
            expect(status == 200, f"handshake call: {status} {answer}")
            # 3. an unknown tool: an error span.
            error_tp = f"00-{'3' * 32}-{'4' * 16}-01"
            bad = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}
            post(mcp, bad, {**hs, "traceparent": error_tp})
            # 4. REST.
            rest_tp = f"00-{'5' * 32}-{'6' * 16}-01"
            status, _, _ = post(f"{base}/runtime/acme/app/tools/echo", {}, {"traceparent": rest_tp})
            expect(status == 200, f"rest: {status}")
            # 5. A2A.
            a2a_tp = f"00-{'7' * 32}-{'8' * 16}-01"
            send = {"jsonrpc": "2.0", "id": 5, "method": "SendMessage", "params": {"message": {
                "messageId": "m-1", "role": "ROLE_USER", "parts": [{"data": {"tool": "echo", "arguments": {}}}]},
                "configuration": {"returnImmediately": False}}}
            status, answer, _ = post(f"{base}/runtime/acme/app/a2a", send, {"traceparent": a2a_tp, "a2a-version": "1.0"})
            expect(status == 200 and "error" not in answer, f"a2a: {status} {answer}")
            # 6. A federated read: one provider source.
            fed_tp = f"00-{'9' * 32}-{'a' * 16}-01"
            body, headers = stateless("tools/call", {"name": "people", "arguments": {"query": "ada"}}, "people")
            status, answer, _ = post(mcp, body, {**headers, "traceparent": fed_tp})
            expect(status == 200 and answer["result"]["isError"] is False, f"federated: {status} {answer}")
            # 7. The concentrator: a SendMessage to the registered agent "up".
            remote_tp = f"00-{'b' * 32}-{'c' * 16}-01"
            card = f"{base}/runtime/acme/app/a2a/agents/up/.well-known/agent-card.json"
            deadline = time.monotonic() + 10
            while True:
                try:
                    if urllib.request.urlopen(card, timeout=1).status == 200:
                        break
                except OSError:
                    pass
                expect(time.monotonic() < deadline, "the remote agent never became ready")
                time.sleep(0.1)
            send = {"jsonrpc": "2.0", "id": 8, "method": "SendMessage", "params": {"message": {
                "messageId": "m-2", "role": "ROLE_USER", "parts": [{"text": "hello"}]},
                "metadata": {"mine": "kept"}}}
            status, answer, _ = post(f"{base}/runtime/acme/app/a2a/agents/up", send,
                                     {"traceparent": remote_tp, "a2a-version": "1.0"})
            expect(status == 200 and "error" not in answer, f"concentrator: {status} {answer}")
        finally:
            stop(sluice)

        def stateless_span() -> None:
            span = find("tools/call echo", META_TRACE)
            a = attrs(span)
            expect(span.kind == trace_pb2.Span.SPAN_KIND_SERVER, f"kind {span.kind}")
            expect(span.parent_span_id.hex() == META_PARENT, f"parent {span.parent_span_id.hex()}, want the _meta one")
            expect(len(span.links) == 1 and span.links[0].trace_id.hex() == HTTP_TRACE
                   and span.links[0].span_id.hex() == HTTP_PARENT, f"links {span.links}")
            for key, want in [("mcp.method.name", "tools/call"), ("gen_ai.tool.name", "echo"),
                              ("gen_ai.operation.name", "execute_tool"), ("mcp.protocol.version", MODERN),
                              ("jsonrpc.request.id", "7")]:
                expect(a.get(key) == want, f"{key} = {a.get(key)!r}, want {want!r}")
            expect("mcp.session.id" not in a, "a stateless request has no session id")
            expect(a.get("sluice.execution_id"), f"no execution id: {a}")

        def downstream_hop() -> None:
            server = find("tools/call echo", META_TRACE)
            client = [s for s in children(server) if s.kind == trace_pb2.Span.SPAN_KIND_CLIENT]
            expect(len(client) == 1, f"client spans under the server span: {client}")
            c = client[0]
            a = attrs(c)
            expect(c.name == "GET" and a.get("http.request.method") == "GET", f"client span {c.name} {a}")
            expect(a.get("http.response.status_code") == 200, f"status {a.get('http.response.status_code')}")
            want = f"00-{META_TRACE}-{c.span_id.hex()}-01"
            with lock:
                expect(want in seen_traceparents, f"the downstream saw {seen_traceparents}, want {want}")

        def handshake_span() -> None:
            span = find("tools/call echo", "1" * 32)
            a = attrs(span)
            expect(span.parent_span_id.hex() == "2" * 16, "the HTTP context is the parent without _meta")
            expect(a.get("mcp.session.id") == session, f"session {a.get('mcp.session.id')!r}")
            expect(a.get("jsonrpc.request.id") == "call-9", f"id {a.get('jsonrpc.request.id')!r}")
            expect(a.get("mcp.protocol.version") == "2025-11-25", f"version {a.get('mcp.protocol.version')}")

        def error_span() -> None:
            span = find("tools/call nope", "3" * 32)
            a = attrs(span)
            expect(a.get("error.type") in ("-32602", "tool_error"), f"error.type {a.get('error.type')!r}")
            expect(span.status.code == trace_pb2.Status.STATUS_CODE_ERROR, f"status {span.status}")

        def rest_span() -> None:
            span = find("POST /runtime/{tenant}/{client}/tools/{name}", "5" * 32)
            a = attrs(span)
            expect(a.get("gen_ai.tool.name") == "echo" and a.get("http.response.status_code") == 200, f"{a}")
            expect(any(s.kind == trace_pb2.Span.SPAN_KIND_CLIENT for s in children(span)), "no client span")

        def a2a_span() -> None:
            span = find("A2A SendMessage", "7" * 32)
            tool = [s for s in children(span) if s.name == "tools/call echo"]
            expect(len(tool) == 1, f"the task's tool call under the A2A span: {[s.name for s in children(span)]}")
            expect(any(s.kind == trace_pb2.Span.SPAN_KIND_CLIENT for s in children(tool[0])), "no client span")

        def federated_span() -> None:
            server = find("tools/call people", "9" * 32)
            read = [s for s in children(server) if s.name == "federated people"]
            expect(len(read) == 1 and read[0].kind == trace_pb2.Span.SPAN_KIND_INTERNAL,
                   f"the read under the tools/call span: {[(s.name, s.kind) for s in children(server)]}")
            expect(attrs(read[0]).get("sluice.federated.sources") == 1, f"{attrs(read[0])}")
            client = [s for s in children(read[0]) if s.kind == trace_pb2.Span.SPAN_KIND_CLIENT]
            expect(len(client) == 1, f"provider CLIENT spans under the read: {client}")
            a = attrs(client[0])
            expect(a.get("sluice.source.identity") == "crm" and a.get("http.response.status_code") == 200, f"{a}")
            expect(a.get("url.full", "").endswith("/people"), f"url.full {a.get('url.full')!r} (no query)")
            want = f"00-{'9' * 32}-{client[0].span_id.hex()}-01"
            with lock:
                expect(want in seen_traceparents, f"the provider saw {seen_traceparents}, want {want}")

        def upstream_hop() -> None:
            server = [s for s in spans if s.name == "A2A SendMessage" and s.trace_id.hex() == "b" * 32
                      and s.kind == trace_pb2.Span.SPAN_KIND_SERVER]
            expect(len(server) == 1, f"{len(server)} concentrator SERVER spans")
            expect(server[0].parent_span_id.hex() == "c" * 16, "the caller's context is the parent")
            expect(attrs(server[0]).get("sluice.a2a.agent") == "up", f"{attrs(server[0])}")
            expect(attrs(server[0]).get("sluice.execution_id"), f"no execution id: {attrs(server[0])}")
            client = [s for s in children(server[0]) if s.kind == trace_pb2.Span.SPAN_KIND_CLIENT]
            expect(len(client) == 1 and client[0].name == "A2A SendMessage", f"upstream CLIENT spans {client}")
            want = f"00-{'b' * 32}-{client[0].span_id.hex()}-01"
            with lock:
                seen = list(upstream_seen)
            expect(len(seen) == 1, f"the upstream saw {seen}")
            header, metadata = seen[0]
            expect(header == want, f"the upstream's traceparent {header!r}, want {want!r}")
            expect(metadata.get("traceparent") == want and metadata.get("mine") == "kept",
                   f"the upstream's metadata {metadata}")

        def resource() -> None:
            expect(any(r.get("service.name") == "sluice-interop" for r in resources), f"resources {resources}")

        # Spans are exported on shutdown at the latest.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with lock:
                if {"A2A SendMessage", "federated people"} <= {s.name for s in spans}:
                    break
            time.sleep(0.1)
        check("stateless tools/call: SERVER span named by the conventions, _meta parent, HTTP link", stateless_span)
        check("the CLIENT span of the downstream call is the parent the downstream was sent", downstream_hop)
        check("handshake era: session id, string request id, HTTP parent", handshake_span)
        check("an unknown tool: error.type and an error status", error_span)
        check("REST: a SERVER span over the CLIENT span", rest_span)
        check("A2A: the task's tools/call span under the SendMessage span", a2a_span)
        check("federated read: an INTERNAL span over one CLIENT span per provider page", federated_span)
        check("concentrator: SERVER span, upstream CLIENT span whose context the agent gets in headers and metadata", upstream_hop)
        check("the resource names the configured service", resource)

        # Sampling 0.0: a request without a sampled parent exports nothing.
        with lock:
            before = len(spans)
        quiet, quiet_base = start(dir, "unsampled", receiver, downstream, upstream, 0.0)
        sampled_trace = "d" * 32
        try:
            body, headers = stateless("tools/call", {"name": "echo", "arguments": {}}, "echo")
            post(f"{quiet_base}/runtime/acme/app/mcp", body, headers)
            # A sampled parent in _meta only: recorded even at 0.0.
            body, headers = stateless("tools/call", {"name": "echo", "arguments": {}}, "echo",
                                      {"traceparent": f"00-{sampled_trace}-{'e' * 16}-01"})
            post(f"{quiet_base}/runtime/acme/app/mcp", body, headers)
        finally:
            stop(quiet)

        def unsampled() -> None:
            with lock:
                others = [s.name for s in spans[before:] if s.trace_id.hex() != sampled_trace]
            expect(not others, f"exported at sampling 0.0 without a sampled parent: {others}")

        def sampled_meta_parent() -> None:
            server = find("tools/call echo", sampled_trace)
            expect(server.parent_span_id.hex() == "e" * 16, "the _meta context is the parent")
            expect(len(children(server)) == 1, f"the downstream call under it: {children(server)}")

        check("sampling_ratio = 0.0 exports nothing for an unsampled request", unsampled)
        check("sampling_ratio = 0.0 still records under a sampled _meta parent", sampled_meta_parent)
        if failed:
            for log in dir.glob("*.log"):
                print(f"--- {log.name}\n{log.read_text()[-3000:]}", file=sys.stderr)
    line = f"{passed} passed, {failed} failed"
    print(line)
    if SUMMARY:
        with open(SUMMARY, "a") as out:
            out.write(line + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
