"""A remote A2A agent built on the official SDK (a2a-sdk 1.3.0), for the concentrator checks of
test_a2a_remote.py: sluice registers it as a `[[tenant.a2a_agent]]` and proxies callers to it.

    remote_agent.py --protocol 1.0|0.3 --secret-file PATH

Prints its port on the first line of stdout, then serves on 127.0.0.1 until killed. With
`--protocol 1.0` the card offers one JSON-RPC interface of protocol 1.0 (and the endpoint accepts
0.3 too, the SDK's compat mode); with `--protocol 0.3` the card is a 0.3 card and the endpoint
refuses every 1.0 method name, so the concentrator must translate.

The agent does what the first text part of the message says, deterministically:
  hello       completes with the text artifact `hello from {name}`
  need-input  asks for input (input-required); the next message on the task completes it
              with the artifact `got {text}`
  slow        five working updates 300 ms apart, then an artifact, then completed
  fail        fails (TASK_STATE_FAILED)
  reject      rejects (TASK_STATE_REJECTED)
  anything else is echoed back as the artifact and the task completes.

Every JSON-RPC POST must carry `Authorization: Bearer <the secret>` (else 401), and every request
is recorded (its Authorization, A2A-Version, traceparent, X-Correlation-Id, JSON-RPC method) for
`GET /_seen`, the test's view of what the upstream saw. Push notifications are the SDK's own
(its in-memory config store and its sender).
"""

import argparse
import asyncio
import json
import socket
import sys

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from a2a.compat.v0_3.conversions import to_compat_agent_card
from a2a.helpers.proto_helpers import new_task, new_text_message, new_text_part
from a2a.server.agent_execution.agent_executor import AgentExecutor
from a2a.server.request_handlers.default_request_handler_v2 import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks.base_push_notification_sender import BasePushNotificationSender
from a2a.server.tasks.inmemory_push_notification_config_store import (
    InMemoryPushNotificationConfigStore,
)
from a2a.server.tasks.inmemory_task_store import InMemoryTaskStore
from a2a.server.tasks.task_updater import TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentCardSignature,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    Role,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    TaskState,
)

RECORDED_HEADERS = ("authorization", "a2a-version", "traceparent", "x-correlation-id", "a2a-extensions")


def first_text(message):
    for part in message.parts if message is not None else []:
        if part.HasField("text"):
            return part.text.strip()
    return ""


class Executor(AgentExecutor):
    """The deterministic behaviours of the module doc."""

    def __init__(self, name):
        self.name = name

    async def execute(self, context, event_queue):
        text = first_text(context.message)
        task = context.current_task
        if task is None:
            task = new_task(context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED, history=[context.message])
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.add_artifact([new_text_part(f"got {text}")], name="answer")
            await updater.complete()
            return
        await updater.start_work()
        if text == "hello":
            await updater.add_artifact([new_text_part(f"hello from {self.name}")], name="greeting")
            await updater.complete()
        elif text == "need-input":
            await updater.requires_input(self.agent_says(context, "what is your name?"))
        elif text == "slow":
            for step in range(1, 6):
                await asyncio.sleep(0.3)
                await updater.update_status(TaskState.TASK_STATE_WORKING, self.agent_says(context, f"step {step}"))
            await updater.add_artifact([new_text_part("slow done")], name="result")
            await updater.complete()
        elif text == "fail":
            await updater.failed(self.agent_says(context, "it failed"))
        elif text == "reject":
            await updater.reject(self.agent_says(context, "not doing that"))
        else:
            await updater.add_artifact([new_text_part(text)], name="echo")
            await updater.complete()

    async def cancel(self, context, event_queue):
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()

    @staticmethod
    def agent_says(context, text):
        message = new_text_message(text, context_id=context.context_id, task_id=context.task_id)
        message.role = Role.ROLE_AGENT
        return message


def build_card(name, url, protocol):
    """The upstream card: a skill with its own security requirement and a (fake) signature, both of
    which the concentrator must drop from the card it synthesizes."""
    bearer = SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
    requirement = SecurityRequirement()
    requirement.schemes["upstream_bearer"].CopyFrom(StringList())
    return AgentCard(
        name=name,
        description=f"The {name} remote agent of the A2A interop tests.",
        version="7.1.0",
        provider=AgentProvider(organization="Interop Upstream Ltd", url="https://upstream.invalid"),
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0" if protocol == "1.0" else "0.3.0")
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="behaviours",
                name="Deterministic behaviours",
                description="hello, need-input, slow, fail, reject",
                tags=["test"],
                security_requirements=[requirement],
            )
        ],
        security_schemes={"upstream_bearer": bearer},
        security_requirements=[requirement],
        signatures=[AgentCardSignature(protected="eyJhbGciOiJFUzI1NiJ9", signature="c2lnbmVkLWJ5LXVwc3RyZWFt")],
    )


class Gate:
    """ASGI middleware: records every request for `GET /_seen`, requires the bearer secret on the
    JSON-RPC endpoint, and (0.3-only agent) refuses 1.0 method names."""

    def __init__(self, app, secret, only_v03):
        self.app = app
        self.secret = secret
        self.only_v03 = only_v03
        self.seen = []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if scope["path"] == "/_seen":
            return await JSONResponse(self.seen)(scope, receive, send)
        if scope["method"] != "POST":
            self.seen.append({"path": scope["path"], **{h: headers.get(h) for h in RECORDED_HEADERS}})
            return await self.app(scope, receive, send)
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        try:
            method = json.loads(body).get("method")
        except (ValueError, AttributeError):
            method = None
        self.seen.append({"path": scope["path"], "method": method, **{h: headers.get(h) for h in RECORDED_HEADERS}})
        if headers.get("authorization") != f"Bearer {self.secret}":
            response = JSONResponse({"error": "unauthorized"}, status_code=401, headers={"WWW-Authenticate": "Bearer"})
            return await response(scope, receive, send)
        if self.only_v03 and isinstance(method, str) and "/" not in method:
            response = JSONResponse(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32601, "message": f"0.3 only: no method {method}"}}
            )
            return await response(scope, receive, send)
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--protocol", choices=["1.0", "0.3"], required=True)
    parser.add_argument("--secret-file", required=True)
    args = parser.parse_args()
    with open(args.secret_file) as handle:
        secret = handle.read().strip()

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    name = "upstream-v1" if args.protocol == "1.0" else "upstream-v03"
    card = build_card(name, url, args.protocol)

    push_store = InMemoryPushNotificationConfigStore()
    handler = DefaultRequestHandlerV2(
        agent_executor=Executor(name),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        push_config_store=push_store,
        push_sender=BasePushNotificationSender(httpx.AsyncClient(timeout=10.0), push_store),
    )
    routes = create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True)
    if args.protocol == "1.0":
        routes += create_agent_card_routes(card)
    else:
        legacy = to_compat_agent_card(card).model_dump(mode="json", by_alias=True, exclude_none=True)

        async def legacy_card(request):
            return JSONResponse(legacy)

        routes.append(Route("/.well-known/agent-card.json", legacy_card, methods=["GET"]))
    app = Gate(Starlette(routes=routes), secret, only_v03=args.protocol == "0.3")

    print(port, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    sys.exit(main())
