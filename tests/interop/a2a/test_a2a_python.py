"""The official A2A Python SDK (a2a-sdk 1.3.0) as an independent client of a running sluice.

Run by tests/interop/a2a/run.sh, which starts the stub downstream and sluice with
sluice.a2a.toml. Every check drives the SDK's own client (card resolver, ClientFactory, its
JSON-RPC transport for 1.0 and its compat transport for 0.3), except the few that must look at
the wire itself (HTTP status, WWW-Authenticate, ETag, raw 0.3 shapes), which use httpx.

The checks follow the A2A test plan (runtime as an A2A server): card, blocking send, return
immediately + GetTask, streaming order, multi-turn, cancel, subscribe, push (inline config and
config CRUD), isolation between two callers, authentication, versions; the 1.0 ones again in 0.3
compat mode; and, with A2A_CLUSTER=1, a task started on one instance and followed, subscribed and
canceled on another (Redis task store).

Each check prints `PASS name` or `FAIL name: why` (with the last HTTP exchanges the SDK made);
the last line is `N passed, N failed`, also written to $A2A_SUMMARY when set.

Env: SLUICE_URL (base URL of the instance), A2A_CLUSTER=1 with SLUICE_CLUSTER_A and
SLUICE_CLUSTER_B (two instances sharing Redis), A2A_SUMMARY (file for the summary line),
A2A_VERBOSE=1 (tracebacks for failed checks).
"""

import asyncio
import json
import os
import sys
import time
import uuid

from google.protobuf.json_format import ParseDict

from a2a.types.a2a_pb2 import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import (
    A2AError,
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from harness import *  # noqa: F403 - the shared helpers and constants


# === the checks ===


def card_checks(state):
    async def resolves():
        card = await resolve_card(BASE)
        state["card"] = card
        data = as_dict(card)
        url = f"{BASE}{AGENT_PATH}"
        interfaces = data.get("supportedInterfaces", [])
        expect(
            any(i.get("url") == url and i.get("protocolBinding") == "JSONRPC" and i.get("protocolVersion") == "1.0" for i in interfaces),
            f"no JSONRPC 1.0 interface at {url}: {interfaces}",
        )
        caps = data.get("capabilities", {})
        expect(caps.get("streaming") is True and caps.get("pushNotifications") is True, f"capabilities {caps}")
        skills = sorted(s["id"] for s in data.get("skills", []))
        expect(skills == ["fail", "get_customer", "slow"], f"skills {skills}")
        schemes = data.get("securitySchemes", {})
        expect(
            any("httpAuthSecurityScheme" in s and s["httpAuthSecurityScheme"].get("scheme", "").lower() == "bearer" for s in schemes.values()),
            f"no HTTP bearer scheme in {schemes}",
        )
        expect(data.get("securityRequirements"), "no securityRequirements")

    async def revalidates():
        async with http_client() as http:
            url = f"{BASE}{AGENT_PATH}/.well-known/agent-card.json"
            first = await http.get(url)
            expect(first.status_code == 200, f"card GET answered {first.status_code}")
            etag = first.headers.get("etag")
            expect(etag, f"no ETag on the card: {dict(first.headers)}")
            expect(first.headers.get("cache-control"), "no Cache-Control on the card")
            again = await http.get(url, headers={"If-None-Match": etag})
            expect(again.status_code == 304, f"If-None-Match answered {again.status_code}, not 304")

    async def extended():
        peer = Peer(interface_card(state["card"], "1.0"), ALICE)
        try:
            async with peer.client() as client:
                card = await client.get_extended_agent_card(GetExtendedAgentCardRequest())
        finally:
            await peer.close()
        data = as_dict(card)
        extensions = data.get("capabilities", {}).get("extensions", [])
        schemas = next((e for e in extensions if "tool-schemas" in e.get("uri", "")), None)
        expect(schemas, f"no tool-schemas extension on the extended card: {extensions}")
        expect("get_customer" in schemas.get("params", {}), f"no get_customer schema: {schemas}")

    return [
        ("card: the SDK's resolver reads the card (interface, capabilities, skills, security)", resolves),
        ("card: ETag and Cache-Control; If-None-Match answers 304", revalidates),
        ("card: GetExtendedAgentCard adds the skills' input schemas", extended),
    ]


def task_checks(mode, state, receiver):
    """The checks run once per protocol version (`1.0` or `0.3`)."""
    label = f"{mode}: "

    def peer(token=ALICE, header="bearer"):
        return Peer(interface_card(state["card"], mode), token, header)

    async def blocking():
        alice = peer()
        try:
            task = as_dict(await alice.send(send_request(tool_message("get_customer", {"id": "c-100"}))))
        finally:
            await alice.close()
        expect(task.get("status", {}).get("state") == "TASK_STATE_COMPLETED", f"state: {task.get('status')}")
        artifacts = task.get("artifacts", [])
        expect(artifacts, f"no artifact: {task}")
        result = artifacts[0]
        expect(result.get("artifactId") == "result", f"artifact id {result.get('artifactId')}")
        expect(data_parts(result) == [ADA], f"artifact data {data_parts(result)}")
        expect(text_parts(result), f"no text part in the artifact: {result}")
        state.setdefault("alice_tasks", []).append(task["id"])

    async def polling():
        alice = peer()
        try:
            started = await alice.slow(ms=800)
            state.setdefault("alice_tasks", []).append(started["id"])
            task = as_dict(await alice.until_terminal(started["id"]))
            expect(task["status"]["state"] == "TASK_STATE_COMPLETED", f"state {task['status']}")
            expect(data_parts(task["artifacts"][0]) == [{"slept_ms": 800}], f"artifact {task['artifacts']}")
            if mode == "1.0":
                trimmed = as_dict(await alice.get(started["id"], history_length=1))
                expect(len(trimmed.get("history", [])) <= 1, f"historyLength 1 gave {len(trimmed.get('history', []))} messages")
                none = as_dict(await alice.get(started["id"], history_length=0))
                expect(not none.get("history"), f"historyLength 0 gave history {none.get('history')}")
        finally:
            await alice.close()

    async def streaming():
        alice = peer()
        try:
            async with alice.client(streaming=True) as client:
                events = await consume_stream(client.send_message(send_request(tool_message("get_customer", {"id": "c-200"}))))
        finally:
            await alice.close()
        check_stream_order(events)
        artifact = next(data for kind, data in events if kind == "artifactUpdate")["artifact"]
        expect(data_parts(artifact) == [GRACE], f"artifact data {data_parts(artifact)}")

    async def multi_turn():
        alice = peer()
        try:
            started = await alice.slow(ms=1500)
            task_id, context_id = started["id"], started["contextId"]
            # A foreign contextId on the task is refused.
            err = await expect_error(
                alice.send(send_request(tool_message("get_customer", {"id": "c-100"}, task_id=task_id, context_id="not-" + context_id))),
                A2AError,
            )
            state.setdefault("notes", []).append(f"{mode} mismatched contextId -> {type(err).__name__}: {err}")
            # The same taskId + contextId joins the running task; blocking, it answers the end.
            task = as_dict(
                await alice.send(send_request(tool_message("get_customer", {"id": "c-100"}, task_id=task_id, context_id=context_id)))
            )
            expect(task["id"] == task_id and task["contextId"] == context_id, f"another task answered: {task['id']}")
            expect(task["status"]["state"] == "TASK_STATE_COMPLETED", f"state {task['status']}")
            ids = [a.get("artifactId") for a in task.get("artifacts", [])]
            expect(ids == ["result", "result-2"], f"artifacts {ids} (the slow call's, then the follow-up's)")
            expect(data_parts(task["artifacts"][1]) == [ADA], f"follow-up artifact {task['artifacts'][1]}")
            # A terminal task takes no more messages.
            await expect_error(
                alice.send(send_request(tool_message("get_customer", {"id": "c-100"}, task_id=task_id, context_id=context_id))),
                UnsupportedOperationError,
            )
            # An unknown taskId is TaskNotFound.
            await expect_error(
                alice.send(send_request(tool_message("get_customer", {"id": "c-100"}, task_id=str(uuid.uuid4())))),
                TaskNotFoundError,
            )
        finally:
            await alice.close()

    async def cancel():
        alice = peer()
        try:
            started = await alice.slow(ms=3000)
            task_id = started["id"]
            canceled = as_dict(await alice.cancel(task_id))
            expect(canceled["status"]["state"] == "TASK_STATE_CANCELED", f"cancel answered {canceled['status']}")
            again = as_dict(await alice.get(task_id))
            expect(again["status"]["state"] == "TASK_STATE_CANCELED", f"GetTask after cancel: {again['status']}")
            await expect_error(alice.cancel(task_id), TaskNotCancelableError)
            async with alice.client(streaming=True) as client:
                await expect_error(drive_stream(client.subscribe(SubscribeToTaskRequest(id=task_id))), UnsupportedOperationError)
            await expect_error(alice.cancel(str(uuid.uuid4())), TaskNotFoundError)
        finally:
            await alice.close()

    async def subscribe():
        alice = peer()
        try:
            started = await alice.slow(ms=1500)
            async with alice.client(streaming=True) as client:
                events = await consume_stream(client.subscribe(SubscribeToTaskRequest(id=started["id"])))
        finally:
            await alice.close()
        expect(events and events[0][0] == "task", f"the first event is not the Task: {[k for k, _ in events]}")
        expect(events[0][1].get("id") == started["id"], "the snapshot is another task")
        expect(
            events[0][1]["status"]["state"] in ("TASK_STATE_WORKING", "TASK_STATE_SUBMITTED"),
            f"snapshot state {events[0][1]['status']}",
        )
        check_stream_order(events, task_id=started["id"])

    async def push_inline():
        path = f"/hook-{mode}"
        push = TaskPushNotificationConfig(
            url=receiver.url(path),
            token=f"tok-{mode}",
            authentication=AuthenticationInfo(scheme="Bearer", credentials=f"secret-{mode}"),
        )
        alice = peer()
        try:
            task = as_dict(await alice.send(send_request(tool_message("get_customer", {"id": "c-100"}), push=push)))
        finally:
            await alice.close()
        expect(task["status"]["state"] == "TASK_STATE_COMPLETED", f"state {task['status']}")
        deadline = time.monotonic() + WAIT
        while True:
            posts = receiver.received(path)
            if any(_is_terminal_delivery(p["body"], task["id"]) for p in posts):
                break
            expect(
                time.monotonic() < deadline,
                f"no delivery of the terminal status within {WAIT:.0f}s ({len(posts)} received: "
                f"{[_delivery_kind(p['body']) for p in posts]})",
            )
            await asyncio.sleep(0.1)
        for post in posts:
            headers = post["headers"]
            expect(headers.get("authorization") == f"Bearer secret-{mode}", f"Authorization {headers.get('authorization')!r}")
            expect(headers.get("x-a2a-notification-token") == f"tok-{mode}", f"X-A2A-Notification-Token {headers.get('x-a2a-notification-token')!r}")
            kind = _delivery_kind(post["body"])
            expect(kind is not None, f"a delivery that is no StreamResponse: {post['body']}")
        state[f"push_posts_{mode}"] = posts
        state.setdefault("notes", []).append(f"{mode} push deliveries: {[_delivery_kind(p['body']) for p in posts]}")

    async def push_shape_03():
        # A webhook registered by a 0.3 client expects 0.3 bodies: both SDKs' 0.3 senders post the
        # task (or event) in 0.3 shape, `kind` and lowercase states (a2a-js
        # V03PushNotificationSerializer; a2a-python 0.x BasePushNotificationSender).
        posts = state.get("push_posts_0.3")
        expect(posts, "no deliveries to look at (the 0.3 push check failed)")
        shapes = [_delivery_kind(p["body"]) for p in posts]
        expect(all(str(kind).startswith("0.3 ") for kind in shapes), f"deliveries to a 0.3 config are {shapes}")
        for post in posts:
            state_name = (post["body"].get("status") or {}).get("state")
            expect(state_name is None or not state_name.startswith("TASK_STATE_"), f"a 1.0 state in a 0.3 body: {post['body']}")

    async def push_crud():
        alice = peer()
        path = f"/crud-{mode}"
        try:
            started = await alice.slow(ms=3000)
            task_id = started["id"]
            async with alice.client() as client:
                created = as_dict(
                    await client.create_task_push_notification_config(
                        TaskPushNotificationConfig(
                            task_id=task_id,
                            id="cfg-1",
                            url=receiver.url(path),
                            token="tok-crud",
                            authentication=AuthenticationInfo(scheme="Bearer", credentials="crud-secret"),
                        )
                    )
                )
                expect(created.get("id") == "cfg-1" and created.get("url") == receiver.url(path), f"created {created}")
                expect(created.get("taskId") == task_id, f"created config names task {created.get('taskId')}")
                got = as_dict(
                    await client.get_task_push_notification_config(GetTaskPushNotificationConfigRequest(task_id=task_id, id="cfg-1"))
                )
                expect(got.get("url") == receiver.url(path) and got.get("token") == "tok-crud", f"got {got}")
                listed = as_dict(
                    await client.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task_id))
                )
                ids = [c.get("id") for c in listed.get("configs", [])]
                expect(ids == ["cfg-1"], f"listed {ids}")
                await client.delete_task_push_notification_config(DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="cfg-1"))
                # Deleting twice is fine.
                await client.delete_task_push_notification_config(DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="cfg-1"))
                listed = as_dict(
                    await client.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task_id))
                )
                expect(not listed.get("configs"), f"still listed after delete: {listed}")
                await expect_error(
                    client.get_task_push_notification_config(GetTaskPushNotificationConfigRequest(task_id=task_id, id="cfg-1")),
                    A2AError,
                )
                # A loopback host the tenant does not list is refused.
                await expect_error(
                    client.create_task_push_notification_config(
                        TaskPushNotificationConfig(task_id=task_id, id="cfg-2", url="http://127.0.0.2:9/hook")
                    ),
                    InvalidParamsError,
                )
                # No config on a task that is not the caller's (or does not exist).
                await expect_error(
                    client.create_task_push_notification_config(
                        TaskPushNotificationConfig(task_id=str(uuid.uuid4()), id="cfg-3", url=receiver.url(path))
                    ),
                    TaskNotFoundError,
                )
            await alice.cancel(task_id)
        finally:
            await alice.close()

    async def isolation():
        alice = peer()
        bob = peer(BOB, header="x-api-key")
        try:
            started = await alice.slow(ms=3000)
            task_id, context_id = started["id"], started["contextId"]
            await expect_error(bob.get(task_id), TaskNotFoundError)
            await expect_error(bob.cancel(task_id), TaskNotFoundError)
            async with bob.client(streaming=True) as client:
                await expect_error(drive_stream(client.subscribe(SubscribeToTaskRequest(id=task_id))), TaskNotFoundError)
            await expect_error(
                bob.send(send_request(tool_message("get_customer", {"id": "c-100"}, task_id=task_id, context_id=context_id))),
                TaskNotFoundError,
            )
            async with bob.client() as client:
                await expect_error(
                    client.get_task_push_notification_config(GetTaskPushNotificationConfigRequest(task_id=task_id, id=task_id)),
                    TaskNotFoundError,
                )
                if mode == "1.0":
                    listed = as_dict(await client.list_tasks(ListTasksRequest(page_size=100)))
                    expect(task_id not in [t["id"] for t in listed.get("tasks", [])], "bob's ListTasks shows alice's task")
            if mode == "1.0":
                async with alice.client() as client:
                    listed = as_dict(await client.list_tasks(ListTasksRequest(page_size=100)))
                expect(task_id in [t["id"] for t in listed.get("tasks", [])], "alice's ListTasks misses her task")
            # Still alice's and still running: bob's attempts changed nothing.
            still = as_dict(await alice.get(task_id))
            expect(still["status"]["state"] in ("TASK_STATE_WORKING", "TASK_STATE_SUBMITTED"), f"state {still['status']}")
            await alice.cancel(task_id)
        finally:
            await alice.close()
            await bob.close()

    async def extended_card():
        alice = peer()
        try:
            async with alice.client() as client:
                card = as_dict(await client.get_extended_agent_card(GetExtendedAgentCardRequest()))
        finally:
            await alice.close()
        extensions = card.get("capabilities", {}).get("extensions", [])
        expect(any("tool-schemas" in e.get("uri", "") for e in extensions), f"no tool-schemas extension: {extensions}")
        expect(sorted(s["id"] for s in card.get("skills", [])) == ["fail", "get_customer", "slow"], "skills differ")

    checks = [
        (label + "blocking SendMessage runs get_customer: COMPLETED, artifact `result` with the data", blocking),
        (label + "returnImmediately answers a running task; GetTask polls it to COMPLETED", polling),
        (label + "streaming: the Task first, WORKING, the artifact, COMPLETED last", streaming),
        (label + "multi-turn: a follow-up joins the running task; a foreign contextId is refused", multi_turn),
        (label + "cancel: CANCELED, again TaskNotCancelable, subscribe refused, unknown TaskNotFound", cancel),
        (label + "SubscribeToTask on a running task: the snapshot first, then the task to its end", subscribe),
        (label + "push: an inline config gets StreamResponse bodies with Authorization and the token", push_inline),
        (label + "push config CRUD: create, get, list, delete twice; refused host; foreign task", push_crud),
        (label + "isolation: bob cannot get, cancel, subscribe to, follow up or read configs of alice's task", isolation),
    ]
    if mode == "0.3":
        # 1.0's GetExtendedAgentCard is a card check; this is its 0.3 name through the compat transport.
        checks.append((label + "agent/getAuthenticatedExtendedCard answers the extended card", extended_card))
        checks.append((label + "push: deliveries to a config registered in 0.3 carry 0.3 bodies (kind, lowercase states)", push_shape_03))
    return checks


def _delivery_kind(body):
    """The member a pushed body carries: a 1.0 StreamResponse member, or a 0.3 `kind`."""
    if not isinstance(body, dict):
        return None
    members = [k for k in ("task", "message", "statusUpdate", "artifactUpdate") if k in body]
    if len(members) == 1:
        return members[0]
    if body.get("kind") in ("task", "message", "status-update", "artifact-update"):
        return f"0.3 {body['kind']}"
    return None


def _is_terminal_delivery(body, task_id):
    if not isinstance(body, dict):
        return False
    for candidate in (body.get("statusUpdate"), body.get("task"), body):
        if not isinstance(candidate, dict):
            continue
        ident = candidate.get("taskId") or candidate.get("id")
        status = candidate.get("status", {}).get("state")
        if ident == task_id and status in ("TASK_STATE_COMPLETED", "completed"):
            return True
    return False


def v1_only_checks(state):
    def peer(token=ALICE):
        return Peer(interface_card(state["card"], "1.0"), token)

    async def text_part():
        alice = peer()
        try:
            task = as_dict(await alice.send(send_request(tool_message("get_customer", {"id": "c-200"}, as_text=True))))
        finally:
            await alice.close()
        expect(task["status"]["state"] == "TASK_STATE_COMPLETED", f"state {task['status']}")
        expect(data_parts(task["artifacts"][0]) == [GRACE], f"artifact {task['artifacts']}")

    async def failed():
        alice = peer()
        try:
            task = as_dict(await alice.send(send_request(tool_message("fail", {}))))
        finally:
            await alice.close()
        expect(task["status"]["state"] == "TASK_STATE_FAILED", f"state {task['status']}")
        expect(status_text(task), f"a FAILED task without the agent's words: {task['status']}")

    async def rejected():
        alice = peer()
        try:
            plain = ParseDict({"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "hello, who are you?"}]}, Message())
            for why, message in [
                ("no tool call", plain),
                ("an unknown tool", tool_message("no_such_tool", {})),
                ("invalid arguments", tool_message("get_customer", {"wrong": 1})),
            ]:
                task = as_dict(await alice.send(send_request(message)))
                expect(task["status"]["state"] == "TASK_STATE_REJECTED", f"{why}: state {task['status']}")
                if why != "invalid arguments":
                    expect("get_customer" in status_text(task), f"{why}: the agent message names no skill: {status_text(task)!r}")
        finally:
            await alice.close()

    async def integer_arguments():
        # A data part is a google.protobuf.Value, whose numbers are doubles: the SDK sends
        # {"ms": 300} as {"ms": 300.0}. JSON Schema 2020-12 (Validation §6.1.1: "integer" matches
        # any number with a zero fractional part) makes that a valid `integer` argument.
        alice = peer()
        try:
            task = as_dict(await alice.send(send_request(tool_message("slow", {"ms": 300}))))
        finally:
            await alice.close()
        sent = WIRE[-1].get("body", "") if WIRE else ""
        expect(
            task["status"]["state"] == "TASK_STATE_COMPLETED",
            f"the SDK's {{\"ms\": 300.0}} ended {task['status']['state']}: {status_text(task)[:120]!r} (sent {sent[:200]})",
        )

    async def list_tasks():
        alice = peer()
        try:
            async with alice.client() as client:
                page = as_dict(await client.list_tasks(ListTasksRequest(page_size=2)))
                tasks = page.get("tasks", [])
                expect(1 <= len(tasks) <= 2, f"pageSize 2 gave {len(tasks)} tasks")
                expect(int(page.get("totalSize", 0)) >= len(tasks), f"totalSize {page.get('totalSize')}")
                if int(page.get("totalSize", 0)) > 2:
                    expect(page.get("nextPageToken"), f"no nextPageToken with more tasks: {page.get('totalSize')}")
                    nxt = as_dict(await client.list_tasks(ListTasksRequest(page_size=2, page_token=page["nextPageToken"])))
                    overlap = {t["id"] for t in tasks} & {t["id"] for t in nxt.get("tasks", [])}
                    expect(not overlap, f"pages overlap: {overlap}")
                stamps = [t.get("status", {}).get("timestamp", "") for t in tasks]
                expect(stamps == sorted(stamps, reverse=True), f"not newest first: {stamps}")
        finally:
            await alice.close()
        async with http_client(ALICE) as http:
            answer = await http.post(
                f"{BASE}{AGENT_PATH}",
                headers={"A2A-Version": "1.0"},
                json={"jsonrpc": "2.0", "id": 7, "method": "ListTasks", "params": {"pageSize": 0}},
            )
        body = answer.json()
        expect(answer.status_code == 200 and body.get("error", {}).get("code") == -32602, f"pageSize 0: {answer.status_code} {body}")

    async def auth():
        url = f"{BASE}{AGENT_PATH}"
        call = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageSize": 10}}
        async with http_client() as http:
            none = await http.post(url, headers={"A2A-Version": "1.0"}, json=call)
            expect(none.status_code == 401, f"no credential answered {none.status_code}")
            expect(none.headers.get("www-authenticate"), f"401 without WWW-Authenticate: {dict(none.headers)}")
            bad = await http.post(url, headers={"A2A-Version": "1.0", "Authorization": "Bearer rtk_nope"}, json=call)
            expect(bad.status_code == 401, f"a malformed key answered {bad.status_code}")
            other = await http.post(
                f"{BASE}{OTHER_TENANT_PATH}", headers={"A2A-Version": "1.0", "Authorization": f"Bearer {ALICE}"}, json=call
            )
            expect(other.status_code == 401, f"tenant a2a's key on tenant other answered {other.status_code}")
            card = await http.get(f"{url}/.well-known/agent-card.json")
            expect(card.status_code == 200, f"the public card answered {card.status_code} without a credential")
            keyed = await http.post(url, headers={"A2A-Version": "1.0", "X-API-Key": BOB}, json=call)
            expect(keyed.status_code == 200 and "result" in keyed.json(), f"X-API-Key answered {keyed.status_code} {keyed.text[:300]}")

    async def version():
        async with http_client(ALICE) as http:
            answer = await http.post(
                f"{BASE}{AGENT_PATH}",
                headers={"A2A-Version": "2.0"},
                json={"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "x"}},
            )
        body = answer.json()
        expect(answer.status_code == 200 and body.get("error", {}).get("code") == -32009, f"A2A-Version 2.0: {answer.status_code} {body}")

    return [
        ("1.0: a text part holding the call JSON runs the tool", text_part),
        ("1.0: a downstream 500 ends the task FAILED with the agent's words", failed),
        ("1.0: no call, unknown tool, invalid arguments: REJECTED naming the skills", rejected),
        ("1.0: integer arguments: the SDK's whole-number double (300.0) in a data part is an integer", integer_arguments),
        ("1.0: ListTasks pages alice's tasks newest first; pageSize 0 is -32602", list_tasks),
        ("1.0: auth: 401 + WWW-Authenticate without a credential, bad key, other tenant; X-API-Key works", auth),
        ("1.0: an unknown A2A-Version major answers -32009", version),
    ]


def v03_wire_checks():
    async def raw_send():
        message = {
            "kind": "message",
            "messageId": str(uuid.uuid4()),
            "role": "user",
            "parts": [{"kind": "data", "data": {"tool": "get_customer", "arguments": {"id": "c-100"}}}],
        }
        async with http_client(ALICE) as http:
            # No A2A-Version header: a 0.3 request.
            answer = await http.post(
                f"{BASE}{AGENT_PATH}",
                json={"jsonrpc": "2.0", "id": "r1", "method": "message/send", "params": {"message": message}},
            )
        body = answer.json()
        expect(answer.status_code == 200 and "result" in body, f"message/send answered {answer.status_code} {body}")
        result = body["result"]
        expect(result.get("kind") == "task", f"result kind {result.get('kind')!r}, not 'task'")
        expect(result.get("status", {}).get("state") == "completed", f"0.3 state {result.get('status')}")
        parts = result.get("artifacts", [{}])[0].get("parts", [])
        expect(any(p.get("kind") == "data" and p.get("data") == ADA for p in parts), f"0.3 artifact parts {parts}")
        expect(body.get("id") == "r1", f"the answer's id is {body.get('id')!r}")

    async def raw_stream():
        message = {
            "kind": "message",
            "messageId": str(uuid.uuid4()),
            "role": "user",
            "parts": [{"kind": "text", "text": json.dumps({"tool": "get_customer", "arguments": {"id": "c-200"}})}],
        }
        frames = []
        async with http_client(ALICE) as http:
            async with http.stream(
                "POST",
                f"{BASE}{AGENT_PATH}",
                headers={"Accept": "text/event-stream"},
                json={"jsonrpc": "2.0", "id": "s1", "method": "message/stream", "params": {"message": message}},
            ) as answer:
                expect(answer.status_code == 200, f"message/stream answered {answer.status_code}")
                expect("text/event-stream" in answer.headers.get("content-type", ""), f"content-type {answer.headers.get('content-type')}")
                async for line in answer.aiter_lines():
                    if line.startswith("data:"):
                        frames.append(json.loads(line[5:].strip()))
        results = [f.get("result", {}) for f in frames]
        kinds = [r.get("kind") for r in results]
        expect(kinds and kinds[0] == "task", f"0.3 stream kinds {kinds}")
        expect(kinds[-1] == "status-update", f"0.3 stream does not end with a status update: {kinds}")
        expect(results[-1].get("final") is True, f"the last 0.3 status update lacks final: true: {results[-1]}")
        expect(results[-1].get("status", {}).get("state") == "completed", f"last state {results[-1].get('status')}")
        expect(all(r.get("final") is False for r in results[1:-1] if r.get("kind") == "status-update"), "final: true before the end")

    return [
        ("0.3 wire: a header-less message/send answers a kind=task with 0.3 states and parts", raw_send),
        ("0.3 wire: message/stream frames carry kind, and final: true on the last status", raw_stream),
    ]


def cluster_checks():
    base_a = os.environ["SLUICE_CLUSTER_A"].rstrip("/")
    base_b = os.environ["SLUICE_CLUSTER_B"].rstrip("/")
    shared = {}

    async def setup():
        card_a = await resolve_card(base_a)
        card_b = await resolve_card(base_b)
        shared["a"] = interface_card(card_a, "1.0")
        shared["b"] = interface_card(card_b, "1.0")
        url_b = shared["b"].supported_interfaces[0].url
        expect(url_b.startswith(base_b), f"instance B's card names {url_b}")

    async def across():
        on_a = Peer(shared["a"], ALICE)
        on_b = Peer(shared["b"], ALICE, header="x-api-key")
        try:
            started = await on_a.slow(ms=2500)
            task_id = started["id"]
            seen = as_dict(await on_b.get(task_id))
            expect(seen["status"]["state"] in ("TASK_STATE_WORKING", "TASK_STATE_SUBMITTED"), f"B reads {seen['status']}")
            async with on_b.client(streaming=True) as client:
                stream = client.subscribe(SubscribeToTaskRequest(id=task_id))
                first = event_kind(await stream.__anext__())
                expect(first[0] == "task" and first[1].get("id") == task_id, f"B's subscription starts with {first}")
                canceled = as_dict(await on_b.cancel(task_id))
                expect(canceled["status"]["state"] == "TASK_STATE_CANCELED", f"B's cancel answered {canceled['status']}")
                rest = [event_kind(e) for e in await asyncio.wait_for(collect(stream), WAIT)]
            states = [d.get("status", {}).get("state") for k, d in rest if k == "statusUpdate"]
            expect(states and states[-1] == "TASK_STATE_CANCELED", f"B's subscription ended with {states}")
            on_a_now = as_dict(await on_a.get(task_id))
            expect(on_a_now["status"]["state"] == "TASK_STATE_CANCELED", f"A reads {on_a_now['status']}")
            # After the downstream would have answered, the task is still CANCELED on both.
            await asyncio.sleep(3.0)
            for peer, name in ((on_a, "A"), (on_b, "B")):
                late = as_dict(await peer.get(task_id))
                expect(late["status"]["state"] == "TASK_STATE_CANCELED", f"{name} later reads {late['status']}")
                expect(not late.get("artifacts"), f"{name}: the canceled call still left an artifact")
        finally:
            await on_a.close()
            await on_b.close()

    async def stream_across():
        on_a = Peer(shared["a"], ALICE)
        on_b = Peer(shared["b"], ALICE)
        try:
            async with on_a.client(streaming=True) as client:
                stream = client.send_message(send_request(tool_message("slow", {"ms": 3000}, as_text=True)))
                first = event_kind(await stream.__anext__())
                expect(first[0] == "task", f"A's stream starts with {first[0]}")
                task_id = first[1]["id"]
                await on_b.cancel(task_id)
                rest = [event_kind(e) for e in await asyncio.wait_for(collect(stream), WAIT)]
            states = [d.get("status", {}).get("state") for k, d in rest if k == "statusUpdate"]
            expect(states and states[-1] == "TASK_STATE_CANCELED", f"A's stream ended with {states}")
        finally:
            await on_a.close()
            await on_b.close()

    return [
        ("cluster: both instances serve the agent card", setup),
        ("cluster: a task started on A is read, subscribed to and canceled on B; A sees CANCELED", across),
        ("cluster: A's SendStreamingMessage ends CANCELED when B cancels the task", stream_across),
    ]


async def main():
    suite = Suite()
    state = {}
    receiver = Receiver()
    try:
        for name, fn in card_checks(state):
            await suite.check(name, fn)
        if "card" not in state:
            print("FAIL   the card could not be resolved: no client can be built", flush=True)
            suite.failed += 1
        else:
            for name, fn in task_checks("1.0", state, receiver) + v1_only_checks(state):
                await suite.check(name, fn)
            for name, fn in task_checks("0.3", state, receiver) + v03_wire_checks():
                await suite.check(name, fn)
        if os.environ.get("A2A_CLUSTER") == "1":
            for name, fn in cluster_checks():
                await suite.check(name, fn)
    finally:
        receiver.close()
    return suite.report(state.get("notes", []))


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
