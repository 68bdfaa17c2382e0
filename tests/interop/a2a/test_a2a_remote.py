"""The concentrator through official SDKs on both sides: a2a-sdk 1.3.0 clients call sluice, which
proxies them to remote agents built on the same SDK (remote_agent.py), one serving 1.0 and one
serving only 0.3.

Run by run.sh, which starts the remote agents, then sluice with sluice.a2a.toml (its
`[[tenant.a2a_agent]]` tables register them). The checks follow the concentrator test plan:
card synthesis (no signatures, the runtime's URL and schemes, unassigned clients get 404), the
relay is what calling the agent directly gives (same events and states, ids and timestamps
aside), the upstream sees only the runtime's credential, the isolation matrix, `ListTasks` from
the ledger, multi-turn, cancel and subscribe passing through, the push relay end to end and a
forged relay POST, the three transport failures (`UPSTREAM_UNAVAILABLE`, `UPSTREAM_AUTH_FAILED`,
`UPSTREAM_TIMEOUT`), the audit records, the `ask_{agentId}` MCP tools of the agents exposed as
tools (and, through the official MCP Python SDK client in its own venv, `mcp_ask.py`, their
progress notifications); with A2A_CLUSTER=1, a task sent on one instance and
subscribed to and canceled on the other (the ledger on Redis).

Env: SLUICE_URL; A2A_UPSTREAM_V1 and A2A_UPSTREAM_V03 (the agents' base URLs, for the direct
calls and their `GET /_seen` record); A2A_UPSTREAM_SECRET (their bearer secret); A2A_DOOMED_PID
(the agent the failure check stops); A2A_AUDIT (sluice's audit file); A2A_CLUSTER=1 with
SLUICE_CLUSTER_A and SLUICE_CLUSTER_B; MCP_PY (the MCP interop venv's Python); A2A_SUMMARY;
A2A_VERBOSE=1.
"""

import asyncio
import json
import os
import signal
import sys
import time
import uuid

import httpx

from a2a.client import A2ACardResolver
from a2a.types.a2a_pb2 import (
    AuthenticationInfo,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Role,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError

from harness import *  # noqa: F403 - the shared helpers and constants

AGENTS_PATH = f"{AGENT_PATH}/agents"
UPSTREAM = {"v1": os.environ.get("A2A_UPSTREAM_V1", ""), "v03": os.environ.get("A2A_UPSTREAM_V03", "")}
SECRET = os.environ.get("A2A_UPSTREAM_SECRET", "")
DAVE = "rtk_a2adavekey23_dave-a2a-interop-secret-0123456789abcdefghi"


def say(text, *, task_id=None, context_id=None):
    message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER)
    message.parts.add().text = text
    if task_id:
        message.task_id = task_id
    if context_id:
        message.context_id = context_id
    return message


def shape(events):
    """A stream as what matters to a caller: kinds, states, status texts, artifact names and
    texts (no ids, no timestamps)."""
    out = []
    for kind, data in events:
        if kind == "task":
            out.append(("task", data.get("status", {}).get("state")))
        elif kind == "statusUpdate":
            out.append(("status", data["status"].get("state"), status_text(data)))
        elif kind == "artifactUpdate":
            artifact = data.get("artifact", {})
            out.append(("artifact", artifact.get("name"), text_parts(artifact)))
        else:
            out.append((kind, text_parts(data)))
    return out


async def sluice_peer(agent, token=ALICE, version="1.0", base=BASE):
    """An SDK peer of the synthesized card of `agent` (its interface of protocol `version`)."""
    async with http_client() as http:
        card = await A2ACardResolver(http, f"{base}{AGENTS_PATH}/{agent}").get_agent_card()
    return Peer(interface_card(card, version), token)


async def direct_peer(agent):
    """An SDK peer of the upstream itself, with the upstream's secret (what sluice presents)."""
    async with http_client() as http:
        card = await A2ACardResolver(http, UPSTREAM[agent]).get_agent_card()
    return Peer(card, SECRET)


async def seen(agent):
    async with httpx.AsyncClient(timeout=10.0) as http:
        return (await http.get(f"{UPSTREAM[agent]}/_seen")).json()


async def raw_call(agent, method, params, token=ALICE, headers=None, base=BASE):
    """One JSON-RPC call over httpx: (HTTP status, the decoded answer)."""
    async with http_client(token) as http:
        response = await http.post(
            f"{base}{AGENTS_PATH}/{agent}",
            json={"jsonrpc": "2.0", "id": "raw-1", "method": method, "params": params},
            headers={"A2A-Version": "1.0", **(headers or {})},
        )
    try:
        return response.status_code, response.json()
    except ValueError:
        return response.status_code, response.text


def raw_message(text, **extra):
    return {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}], **extra}}


def expect_reason(answer, reason):
    error = answer.get("error") if isinstance(answer, dict) else None
    expect(error, f"no JSON-RPC error: {answer}")
    expect(error.get("code") == -32603, f"code {error.get('code')}, not -32603: {error}")
    # A2A 1.0 error details: a list of google.rpc.ErrorInfo-shaped objects.
    details = error.get("data") if isinstance(error.get("data"), list) else [error.get("data") or {}]
    reasons = [d.get("reason") for d in details if isinstance(d, dict)]
    expect(reason in reasons, f"the error's reason is not {reason}: {error}")
    expect(SECRET not in json.dumps(answer), "the upstream secret leaks in the error")


async def wait_for(what, probe):
    deadline = time.monotonic() + WAIT
    while True:
        found = await probe()
        if found:
            return found
        expect(time.monotonic() < deadline, f"{what} did not happen within {WAIT:.0f}s")
        await asyncio.sleep(0.1)


def audit_records():
    path = os.environ.get("A2A_AUDIT")
    expect(path, "A2A_AUDIT is not set")
    records = []
    try:
        with open(path) as handle:
            for line in handle:
                try:
                    records.append(json.loads(line))
                except ValueError:
                    pass
    except FileNotFoundError:
        pass
    return records


# === the checks ===


def card_checks(state):
    async def synthesized(agent):
        async with http_client(ALICE) as http:
            response = await http.get(f"{BASE}{AGENTS_PATH}/{agent}/.well-known/agent-card.json")
        expect(response.status_code == 200, f"card status {response.status_code}: {response.text[:300]}")
        card = response.json()
        expect("signatures" not in card, f"the upstream's signatures were kept: {card.get('signatures')}")
        urls = {(i.get("protocolVersion"), i.get("url")) for i in card.get("supportedInterfaces", [])}
        expect(
            {version for version, _ in urls} >= {"1.0", "0.3"},
            f"the interfaces are not 1.0 and 0.3: {card.get('supportedInterfaces')}",
        )
        for _, url in urls:
            expect(url == f"{BASE}{AGENTS_PATH}/{agent}", f"an interface URL is not the runtime's: {url}")
        upstream = UPSTREAM[agent].split("//", 1)[-1]
        expect(upstream not in response.text, "the upstream address shows in the synthesized card")
        expect("upstream_bearer" not in json.dumps(card.get("securitySchemes", {})), f"upstream schemes kept: {card.get('securitySchemes')}")
        expect(card.get("securitySchemes"), "the runtime's security schemes are missing")
        for skill in card.get("skills", []):
            expect("securityRequirements" not in skill, f"a skill keeps its security requirements: {skill}")
        expected_name = "upstream-v1" if agent == "v1" else "upstream-v03"
        expect(card.get("name") == expected_name, f"name {card.get('name')!r}")
        expect(card.get("version") == "7.1.0", f"version {card.get('version')!r}")
        expect((card.get("provider") or {}).get("organization") == "Interop Upstream Ltd", f"provider {card.get('provider')}")
        expect([s.get("id") for s in card.get("skills", [])] == ["behaviours"], f"skills {card.get('skills')}")
        expect(card.get("capabilities", {}).get("streaming") is True, f"capabilities {card.get('capabilities')}")
        # The SDK resolves it and builds a client from it.
        peer = await sluice_peer(agent)
        await peer.close()

    async def unassigned():
        async with http_client(DAVE) as http:
            card = await http.get(f"{BASE}/runtime/a2a/bystander/a2a/agents/v1/.well-known/agent-card.json")
            call = await http.post(
                f"{BASE}/runtime/a2a/bystander/a2a/agents/v1",
                json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}},
                headers={"A2A-Version": "1.0"},
            )
            listing = await http.get(f"{BASE}/runtime/a2a/bystander/a2a/agents")
        expect(card.status_code == 404, f"an unassigned client's card request answered {card.status_code}")
        expect(call.status_code == 404, f"an unassigned client's call answered {call.status_code}")
        expect(listing.status_code == 200, f"the bystander's listing answered {listing.status_code}")
        expect("v1" not in listing.text, f"the bystander's listing shows v1: {listing.text[:300]}")

    async def listing():
        async with http_client(ALICE) as http:
            response = await http.get(f"{BASE}{AGENTS_PATH}")
        expect(response.status_code == 200, f"listing status {response.status_code}")
        text = response.text
        for agent in ("v1", "v03", "wrong", "tight", "doomed"):
            expect(f'"{agent}"' in text, f"the listing misses {agent}: {text[:400]}")
        expect(UPSTREAM["v1"].split("//", 1)[-1] not in text, "the listing shows an upstream address")

    return [
        ("card: the 1.0 agent's synthesized card", lambda: synthesized("v1")),
        ("card: the 0.3 agent's synthesized card (normalized to 1.0)", lambda: synthesized("v03")),
        ("card: an unassigned client gets 404", unassigned),
        ("card: the caller's agent listing", listing),
    ]


def relay_checks(agent, version, state):
    label = f"{agent} via {version}"

    async def hello():
        peer = await sluice_peer(agent, version=version)
        try:
            task = as_dict(await peer.send(send_request(say("hello"))))
        finally:
            await peer.close()
        expect(task["status"]["state"] == "TASK_STATE_COMPLETED", f"state {task['status']}")
        texts = [t for a in task.get("artifacts", []) for t in text_parts(a)]
        expect(texts == [f"hello from upstream-{agent}"], f"artifacts {task.get('artifacts')}")
        state.setdefault("alice_tasks", {}).setdefault(agent, []).append(task["id"])

    async def same_as_direct():
        peer = await sluice_peer(agent, version=version)
        direct = await direct_peer(agent)
        try:
            async with peer.client(streaming=True) as client:
                through = await consume_stream(client.send_message(send_request(say("slow"))))
            async with direct.client(streaming=True) as client:
                straight = await consume_stream(client.send_message(send_request(say("slow"))))
        finally:
            await peer.close()
            await direct.close()
        expect(shape(through) == shape(straight), f"through sluice:\n      {shape(through)}\n    directly:\n      {shape(straight)}")
        expect(shape(through)[-1][:2] == ("status", "TASK_STATE_COMPLETED"), f"the stream ends with {shape(through)[-1]}")
        expect(sum(1 for s in shape(through) if s[:2] == ("status", "TASK_STATE_WORKING")) >= 5, f"working updates: {shape(through)}")
        state.setdefault("streamed", {})[agent] = through[0][1].get("id")

    async def terminal_states():
        peer = await sluice_peer(agent, version=version)
        try:
            failed = as_dict(await peer.send(send_request(say("fail"))))
            rejected = as_dict(await peer.send(send_request(say("reject"))))
        finally:
            await peer.close()
        expect(failed["status"]["state"] == "TASK_STATE_FAILED", f"fail: {failed['status']}")
        expect(status_text(failed) == "it failed", f"fail says {status_text(failed)!r}")
        expect(rejected["status"]["state"] == "TASK_STATE_REJECTED", f"reject: {rejected['status']}")

    async def multi_turn():
        peer = await sluice_peer(agent, version=version)
        try:
            asked = as_dict(await peer.send(send_request(say("need-input"))))
            expect(asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", f"need-input: {asked['status']}")
            expect(status_text(asked) == "what is your name?", f"the question is {status_text(asked)!r}")
            answered = as_dict(
                await peer.send(send_request(say("Ada", task_id=asked["id"], context_id=asked["contextId"])))
            )
            expect(answered["id"] == asked["id"], "the follow-up answered another task")
            expect(answered["status"]["state"] == "TASK_STATE_COMPLETED", f"the follow-up: {answered['status']}")
            texts = [t for a in answered.get("artifacts", []) for t in text_parts(a)]
            expect(texts == ["got Ada"], f"artifacts {texts}")
            fetched = as_dict(await peer.get(asked["id"]))
            expect(fetched["status"]["state"] == "TASK_STATE_COMPLETED", f"GetTask: {fetched['status']}")
        finally:
            await peer.close()

    async def cancel():
        peer = await sluice_peer(agent, version=version)
        try:
            started = as_dict(await peer.send(send_request(say("slow"), return_immediately=True)))
            expect(started["status"]["state"] not in TERMINAL, f"slow answered {started['status']}")
            canceled = as_dict(await peer.cancel(started["id"]))
            expect(canceled["status"]["state"] == "TASK_STATE_CANCELED", f"cancel: {canceled['status']}")
            again = as_dict(await peer.get(started["id"]))
            expect(again["status"]["state"] == "TASK_STATE_CANCELED", f"GetTask after cancel: {again['status']}")
        finally:
            await peer.close()

    async def subscribe():
        peer = await sluice_peer(agent, version=version)
        try:
            started = as_dict(await peer.send(send_request(say("slow"), return_immediately=True)))
            async with peer.client(streaming=True) as client:
                events = await consume_stream(client.subscribe(SubscribeToTaskRequest(id=started["id"])))
        finally:
            await peer.close()
        expect(events and events[0][0] == "task", f"the first event is not the Task: {shape(events)}")
        expect(events[0][1].get("id") == started["id"], "the subscription follows another task")
        expect(shape(events)[-1][:2] == ("status", "TASK_STATE_COMPLETED"), f"the subscription ends with {shape(events)[-1]}")

    return [
        (f"relay {label}: hello completes with the agent's artifact", hello),
        (f"relay {label}: a streamed task is what the agent streams directly", same_as_direct),
        (f"relay {label}: fail and reject pass through", terminal_states),
        (f"relay {label}: multi-turn (input-required, then completed)", multi_turn),
        (f"relay {label}: cancel passes through", cancel),
        (f"relay {label}: subscribe follows the task to its end", subscribe),
    ]


def isolation_checks(state):
    async def matrix():
        alice = await sluice_peer("v1")
        bob = await sluice_peer("v1", token=BOB)
        try:
            task = as_dict(await alice.send(send_request(say("need-input"))))
            task_id, context_id = task["id"], task["contextId"]
            await expect_error(bob.get(task_id), TaskNotFoundError)
            await expect_error(bob.cancel(task_id), TaskNotFoundError)
            async with bob.client(streaming=True) as client:
                await expect_error(drive_stream(client.subscribe(SubscribeToTaskRequest(id=task_id))), TaskNotFoundError)
            # Continuing alice's task, or joining her context, is refused as an unknown id.
            await expect_error(bob.send(send_request(say("Bob", task_id=task_id))), (TaskNotFoundError, InvalidParamsError))
            await expect_error(bob.send(send_request(say("hello", context_id=context_id))), (TaskNotFoundError, InvalidParamsError))
            async with bob.client() as client:
                await expect_error(
                    client.get_task_push_notification_config(GetTaskPushNotificationConfigRequest(task_id=task_id, id="x")),
                    TaskNotFoundError,
                )
                await expect_error(
                    client.create_task_push_notification_config(
                        TaskPushNotificationConfig(task_id=task_id, id="bob", url="http://127.0.0.1:9/bob")
                    ),
                    TaskNotFoundError,
                )
            # Still alice's, still waiting for her.
            mine = as_dict(await alice.get(task_id))
            expect(mine["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", f"alice's task moved: {mine['status']}")
            state["isolated"] = task_id
        finally:
            await alice.close()
            await bob.close()

    async def list_tasks():
        alice = await sluice_peer("v1")
        bob = await sluice_peer("v1", token=BOB)
        direct = await direct_peer("v1")
        try:
            bobs = as_dict(await bob.send(send_request(say("hello"))))["id"]
            async with alice.client() as client:
                listed = [t["id"] for t in as_dict(await client.list_tasks(ListTasksRequest(page_size=100))).get("tasks", [])]
            async with bob.client() as client:
                bob_listed = [t["id"] for t in as_dict(await client.list_tasks(ListTasksRequest(page_size=100))).get("tasks", [])]
            async with direct.client() as client:
                everyone = [t["id"] for t in as_dict(await client.list_tasks(ListTasksRequest(page_size=100))).get("tasks", [])]
        finally:
            await alice.close()
            await bob.close()
            await direct.close()
        expect(bobs in everyone, "the upstream does not list bob's task (the check proves nothing)")
        expect(bobs not in listed, "alice's ListTasks shows bob's task")
        expect(bobs in bob_listed, f"bob's ListTasks misses his task: {bob_listed}")
        for task_id in state.get("alice_tasks", {}).get("v1", []) + [state.get("isolated")]:
            expect(task_id in listed, f"alice's ListTasks misses her task {task_id}: {listed}")
            expect(task_id not in bob_listed, f"bob's ListTasks shows alice's task {task_id}")

    return [
        ("isolation: bob can neither read, cancel, follow, continue nor configure alice's task", matrix),
        ("isolation: ListTasks shows only the caller's tasks (the upstream lists everyone's)", list_tasks),
    ]


def wire_checks():
    async def credentials():
        for agent in ("v1", "v03"):
            records = await seen(agent)
            posts = [r for r in records if r.get("method")]
            expect(posts, f"the {agent} agent saw no call")
            for record in records:
                auth = record.get("authorization") or ""
                expect(ALICE.split("_")[-1] not in auth and BOB.split("_")[-1] not in auth, f"a caller key reached {agent}: {record}")
            for record in posts:
                expect(record.get("authorization") == f"Bearer {SECRET}", f"{agent} got Authorization {record.get('authorization')!r}")

    async def versions():
        v1 = [r for r in await seen("v1") if r.get("method")]
        v03 = [r for r in await seen("v03") if r.get("method")]
        expect(all("/" not in r["method"] for r in v1), f"0.3 methods reached the 1.0 agent: {sorted({r['method'] for r in v1})}")
        expect(all(r.get("a2a-version") == "1.0" for r in v1), f"A2A-Version to the 1.0 agent: {sorted({str(r.get('a2a-version')) for r in v1})}")
        expect(all("/" in r["method"] for r in v03), f"1.0 methods reached the 0.3 agent: {sorted({r['method'] for r in v03})}")

    async def headers_forwarded():
        correlation = f"corr-{uuid.uuid4().hex[:12]}"
        status, answer = await raw_call(
            "v1",
            "SendMessage",
            raw_message("hello"),
            headers={
                "X-Correlation-Id": correlation,
                "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                "A2A-Extensions": "https://example.com/ext/allowed, https://example.com/ext/secret",
            },
        )
        expect(status == 200 and "result" in answer, f"send answered {status}: {answer}")
        expect(answer.get("id") == "raw-1", f"the caller's id was not restored: {answer.get('id')!r}")
        record = next((r for r in reversed(await seen("v1")) if r.get("x-correlation-id") == correlation), None)
        last = [r for r in await seen("v1") if r.get("method") == "SendMessage"][-1:]
        expect(record, f"the upstream never saw the caller's correlation id {correlation} (last send: {last})")
        expect((record.get("traceparent") or "").startswith("00-0af7651916cd43dd8448eb211c80319c-"), f"traceparent {record.get('traceparent')!r}")
        extensions = record.get("a2a-extensions") or ""
        expect("https://example.com/ext/allowed" in extensions, f"the allowed extension was not forwarded: {extensions!r}")
        expect("secret" not in extensions, f"a non-allowlisted extension was forwarded: {extensions!r}")

    return [
        ("upstream: sees only the runtime's credential, never a caller's", credentials),
        ("upstream: the 1.0 agent gets 1.0, the 0.3-only agent 0.3", versions),
        ("upstream: correlation id, traceparent and allowlisted extensions", headers_forwarded),
    ]


def push_checks(receiver, state):
    async def relay_end_to_end():
        path = "/remote-push"
        push = TaskPushNotificationConfig(
            url=receiver.url(path),
            token="tok-remote",
            authentication=AuthenticationInfo(scheme="Bearer", credentials="caller-webhook-secret"),
        )
        alice = await sluice_peer("v1")
        direct = await direct_peer("v1")
        try:
            task = as_dict(await alice.send(send_request(say("slow"), return_immediately=True, push=push)))
            task_id = task["id"]
            async with direct.client() as client:
                upstream = as_dict(
                    await client.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task_id))
                )
            async with alice.client() as client:
                mine = as_dict(await client.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task_id)))
        finally:
            await alice.close()
            await direct.close()
        configs = upstream.get("configs", [])
        expect(len(configs) == 1, f"the upstream holds {len(configs)} configs: {configs}")
        relay_url = configs[0].get("url", "")
        expect(relay_url.startswith(f"{BASE}/runtime/a2a/push/"), f"the upstream's config is not the relay: {relay_url}")
        expect("caller-webhook-secret" not in json.dumps(upstream), "the caller's webhook secret reached the upstream")
        expect(str(receiver.port) not in json.dumps(upstream), "the caller's webhook URL reached the upstream")
        expect([c.get("url") for c in mine.get("configs", [])] == [receiver.url(path)], f"alice's configs: {mine}")

        async def terminal():
            posts = receiver.received(path)
            return posts if any(_terminal(p["body"], task_id) for p in posts) else None

        posts = await wait_for("the terminal delivery through the relay", terminal)
        for post in posts:
            expect(post["headers"].get("authorization") == "Bearer caller-webhook-secret", f"Authorization {post['headers'].get('authorization')!r}")
            expect(post["headers"].get("x-a2a-notification-token") == "tok-remote", f"token {post['headers'].get('x-a2a-notification-token')!r}")
        state["relay"] = {"url": relay_url, "task": task_id, "path": path, "count": len(receiver.received(path))}

    async def forged():
        relay = state.get("relay")
        expect(relay, "no relay to forge a POST to (the relay check failed)")
        body = {"statusUpdate": {"taskId": relay["task"], "contextId": "x", "status": {"state": "TASK_STATE_FAILED"}}}
        async with httpx.AsyncClient(timeout=10.0) as http:
            wrong = await http.post(relay["url"], json=body, headers={"Authorization": "Bearer guessed", "X-A2A-Notification-Token": "guessed"})
            bare = await http.post(relay["url"], json=body)
            # A relay id of the right shape that is not one: the same answer as a wrong secret.
            other = relay["url"][:-4] + ("aaaa" if not relay["url"].endswith("aaaa") else "bbbb")
            unknown = await http.post(other, json=body, headers={"Authorization": "Bearer guessed"})
        for name, response in (("wrong secret", wrong), ("no credential", bare), ("unknown relay", unknown)):
            expect(response.status_code == 401, f"a forged relay POST ({name}) answered {response.status_code}")
        await asyncio.sleep(0.5)
        after = receiver.received(relay["path"])
        expect(len(after) == relay["count"], f"a forged POST was delivered: {after[relay['count']:]}")

    async def config_crud():
        path = "/remote-crud"
        alice = await sluice_peer("v1")
        direct = await direct_peer("v1")
        try:
            task_id = as_dict(await alice.send(send_request(say("slow"), return_immediately=True)))["id"]
            async with alice.client() as client:
                await client.create_task_push_notification_config(
                    TaskPushNotificationConfig(task_id=task_id, id="mine", url=receiver.url(path), token="tok-crud")
                )
                got = as_dict(await client.get_task_push_notification_config(GetTaskPushNotificationConfigRequest(task_id=task_id, id="mine")))
                expect(got.get("url") == receiver.url(path), f"GetTaskPushNotificationConfig: {got}")
                await expect_error(
                    client.create_task_push_notification_config(
                        TaskPushNotificationConfig(task_id=task_id, id="bad", url="http://127.0.0.2:9/hook")
                    ),
                    InvalidParamsError,
                )
            async with direct.client() as client:
                upstream = as_dict(await client.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task_id)))
            urls = [c.get("url", "") for c in upstream.get("configs", [])]
            expect(len(urls) == 1 and urls[0].startswith(f"{BASE}/runtime/a2a/push/"), f"the upstream's configs: {urls}")

            async def delivered():
                return [p for p in receiver.received(path) if _terminal(p["body"], task_id)]

            await wait_for("the delivery to the config created later", delivered)
        finally:
            await alice.close()
            await direct.close()

    return [
        ("push: the upstream holds one relay config; the caller's webhook gets the events", relay_end_to_end),
        ("push: a forged relay POST is 401 and delivers nothing", forged),
        ("push: a config created on a running task is relayed too (invalid URLs refused)", config_crud),
    ]


def _terminal(body, task_id):
    if not isinstance(body, dict):
        return False
    for member in ("task", "statusUpdate"):
        item = body.get(member) or {}
        ident = item.get("id") if member == "task" else item.get("taskId")
        if ident == task_id and (item.get("status") or {}).get("state") in TERMINAL:
            return True
    return False


def failure_checks(state):
    async def unavailable():
        pid = int(os.environ.get("A2A_DOOMED_PID") or 0)
        expect(pid, "A2A_DOOMED_PID is not set")
        status, before = await raw_call("doomed", "SendMessage", raw_message("hello"))
        expect(status == 200 and "result" in before, f"the doomed agent did not answer before it was stopped: {before}")
        os.kill(pid, signal.SIGTERM)
        await asyncio.sleep(1.0)
        status, answer = await raw_call("doomed", "SendMessage", raw_message("hello"))
        expect(status == 200, f"HTTP {status}")
        expect_reason(answer, "UPSTREAM_UNAVAILABLE")
        state["failures"] = state.get("failures", 0) + 1

    async def auth_failed():
        status, answer = await raw_call("wrong", "SendMessage", raw_message("hello"))
        expect(status == 200, f"HTTP {status}")
        expect_reason(answer, "UPSTREAM_AUTH_FAILED")
        records = [r for r in await seen("v1") if r.get("authorization") == "Bearer not-the-upstream-secret"]
        expect(records, "the upstream never saw the wrong secret (the check proves nothing)")

    async def timeout():
        started = time.monotonic()
        status, answer = await raw_call("tight", "SendMessage", raw_message("slow"))
        elapsed = time.monotonic() - started
        expect(status == 200, f"HTTP {status}")
        expect_reason(answer, "UPSTREAM_TIMEOUT")
        expect(elapsed < 1.4, f"the 600 ms limit answered after {elapsed:.2f}s")

    async def upstream_errors_pass_through():
        status, answer = await raw_call("v1", "GetTask", {"id": str(uuid.uuid4())})
        expect(status == 200, f"HTTP {status}")
        expect((answer.get("error") or {}).get("code") == -32001, f"an unknown task: {answer}")

    return [
        ("failure: a stopped upstream is UPSTREAM_UNAVAILABLE", unavailable),
        ("failure: a wrong upstream secret is UPSTREAM_AUTH_FAILED", auth_failed),
        ("failure: a slow upstream is UPSTREAM_TIMEOUT", timeout),
        ("failure: upstream JSON-RPC errors pass through", upstream_errors_pass_through),
    ]


def audit_checks(state):
    async def records():
        async def remote_records():
            found = [r for r in audit_records() if r.get("remote")]
            agents = {r["remote"].get("agent") for r in found}
            return found if {"v1", "v03", "wrong", "tight", "doomed"} <= agents else None

        found = await wait_for("audit records of every agent", remote_records)
        by = lambda agent, method: [r for r in found if r["remote"]["agent"] == agent and r["remote"]["method"] == method]  # noqa: E731
        sends = by("v1", "SendMessage")
        expect(sends, "no SendMessage record for v1")
        task_ids = {r["remote"].get("task_id") for r in sends}
        for task_id in state.get("alice_tasks", {}).get("v1", []):
            expect(task_id in task_ids, f"no record names the upstream task {task_id}")
        completed = [r for r in sends if r["remote"].get("state") == "TASK_STATE_COMPLETED"]
        expect(completed and all(r.get("outcome") == "ok" for r in completed[:1]), f"a completed send's record: {completed[:1]}")
        callers = {r.get("caller") for r in found if r.get("tenant") == "a2a"}
        expect(callers <= {"apikey:alice", "apikey:bob"} and "apikey:alice" in callers, f"the records' callers: {callers}")
        streams = by("v1", "SendStreamingMessage")
        marks = {r["remote"].get("stream") for r in streams}
        expect({"open", "close"} <= marks, f"stream open/close records missing: {marks}")
        closed = [r for r in streams if r["remote"].get("stream") == "close"]
        expect(any((r["remote"].get("events") or 0) >= 7 for r in closed), f"a closed stream's event count: {closed[:1]}")
        for agent, reason in (("doomed", "UPSTREAM_UNAVAILABLE"), ("wrong", "UPSTREAM_AUTH_FAILED"), ("tight", "UPSTREAM_TIMEOUT")):
            failed = [r for r in found if r["remote"]["agent"] == agent and r.get("outcome") == "error"]
            expect(failed, f"no error record for {agent} ({reason})")
        pushes = [r for r in audit_records() if r.get("call_type") == "a2a_push" and "remote-push" not in json.dumps(r)]
        expect(pushes, "no push delivery record")

    return [("audit: one record per call, stream open/close, failures, push deliveries", records)]


async def mcp_call(tool, arguments, token=ALICE):
    """A stateless-era (2026-07-28) MCP `tools/call` on the client's MCP endpoint; its result."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "a2a-interop", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    async with http_client(token) as http:
        response = await http.post(f"{BASE}/runtime/a2a/agent/mcp", json=body, headers=headers)
    expect(response.status_code == 200, f"tools/call answered {response.status_code}: {response.text[:300]}")
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        datas = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = next((d for d in reversed(datas) if '"result"' in d or '"error"' in d), "{}")
    answer = json.loads(text)
    expect("result" in answer, f"tools/call failed: {answer}")
    return answer["result"]


def ask_tool_checks():
    """The agents with `expose_as_tool` as MCP tools, against the SDK agents themselves."""

    async def hello():
        for agent in ("v1", "v03"):
            result = await mcp_call(f"ask_{agent}", {"message": "hello"})
            out = result.get("structuredContent", {})
            expect(result.get("isError") is False, f"ask_{agent}: {result}")
            expect(out.get("state") == "TASK_STATE_COMPLETED", f"ask_{agent} state: {out}")
            expect(out.get("text") == f"hello from upstream-{agent}", f"ask_{agent} text: {out.get('text')!r}")

    async def multi_turn():
        asked = (await mcp_call("ask_v03", {"message": "need-input"})).get("structuredContent", {})
        expect(asked.get("state") == "TASK_STATE_INPUT_REQUIRED", f"need-input: {asked}")
        expect(asked.get("status_message") == "what is your name?", f"the question: {asked}")
        answered = await mcp_call("ask_v03", {"message": "Ada", "task_id": asked["task_id"], "context_id": asked["context_id"]})
        out = answered.get("structuredContent", {})
        expect(out.get("state") == "TASK_STATE_COMPLETED" and out.get("text") == "got Ada", f"the follow-up: {answered}")
        # Bob cannot answer alice's question.
        refused = await mcp_call("ask_v03", {"message": "Bob", "task_id": asked["task_id"]}, token=BOB)
        expect(refused.get("isError") is True, f"bob continued alice's task: {refused}")

    async def slow_and_fail():
        slow = (await mcp_call("ask_v1", {"message": "slow"})).get("structuredContent", {})
        expect(slow.get("state") == "TASK_STATE_COMPLETED" and slow.get("text") == "slow done", f"slow: {slow}")
        failed = await mcp_call("ask_v1", {"message": "fail"})
        text = json.dumps(failed.get("content", []))
        expect(failed.get("isError") is True and "TASK_STATE_FAILED: it failed" in text, f"fail: {failed}")

    async def progress_through_the_mcp_sdk():
        # The official MCP client, in its own venv (MCP_PY): stateless and session modes.
        mcp_py = os.environ.get("MCP_PY", "")
        expect(mcp_py and os.path.exists(mcp_py), f"MCP_PY names no MCP SDK python: {mcp_py!r}")
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp_ask.py")
        proc = await asyncio.create_subprocess_exec(
            mcp_py, script, "v1", "slow",
            env={**os.environ, "SLUICE_URL": BASE, "ASK_TOKEN": ALICE},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 90)
        expect(proc.returncode == 0, f"mcp_ask.py exited {proc.returncode}: {out.decode()[-500:]} {err.decode()[-500:]}")
        runs = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
        versions = [run.get("version") for run in runs]
        expect(versions == ["2026-07-28", "2025-11-25"], f"negotiated {versions}")
        for run in runs:
            steps = run["progress"]
            messages = [step["message"] or "" for step in steps]
            values = [step["progress"] for step in steps]
            expect(values == sorted(set(values)) and values, f"{run['mode']}: progress not increasing: {values}")
            working = [m for m in messages if m.startswith("TASK_STATE_WORKING: step ")]
            expect(working == [f"TASK_STATE_WORKING: step {n}" for n in range(1, 6)], f"{run['mode']}: the steps {messages}")
            expect(messages[-1].startswith("TASK_STATE_COMPLETED"), f"{run['mode']}: last step {messages[-1:]}")
            structured = run["result"].get("structuredContent", {})
            expect(run["result"].get("isError") is False and structured.get("state") == "TASK_STATE_COMPLETED"
                   and structured.get("text") == "slow done", f"{run['mode']}: {run['result']}")

    return [
        ("mcp: ask_v1 and ask_v03 answer the task's artifacts", hello),
        ("mcp: ask_v03 multi-turn through task_id (bob refused)", multi_turn),
        ("mcp: ask_v1 waits out a slow task; a failed task is isError", slow_and_fail),
        ("mcp sdk: ask_v1 streams the task's five steps as progress (stateless and session)", progress_through_the_mcp_sdk),
    ]


def cluster_checks():
    a = os.environ.get("SLUICE_CLUSTER_A", "").rstrip("/")
    b = os.environ.get("SLUICE_CLUSTER_B", "").rstrip("/")

    async def across():
        on_a = await sluice_peer("v1", base=a)
        on_b = await sluice_peer("v1", base=b)
        bob_b = await sluice_peer("v1", token=BOB, base=b)
        try:
            followed = as_dict(await on_a.send(send_request(say("slow"), return_immediately=True)))
            async with on_b.client(streaming=True) as client:
                events = await consume_stream(client.subscribe(SubscribeToTaskRequest(id=followed["id"])))
            expect(shape(events)[-1][:2] == ("status", "TASK_STATE_COMPLETED"), f"B's subscription ends with {shape(events)[-1:]}")
            canceled = as_dict(await on_a.send(send_request(say("slow"), return_immediately=True)))
            await expect_error(bob_b.cancel(canceled["id"]), TaskNotFoundError)
            after = as_dict(await on_b.cancel(canceled["id"]))
            expect(after["status"]["state"] == "TASK_STATE_CANCELED", f"cancel on B: {after['status']}")
            async with on_b.client() as client:
                listed = [t["id"] for t in as_dict(await client.list_tasks(ListTasksRequest(page_size=100))).get("tasks", [])]
            expect(followed["id"] in listed and canceled["id"] in listed, f"B's ListTasks misses A's tasks: {listed}")
        finally:
            await on_a.close()
            await on_b.close()
            await bob_b.close()

    return [("cluster: sent on A; subscribed, listed and canceled on B (ledger on Redis)", across)]


async def main():
    suite = Suite()
    state = {}
    receiver = Receiver()
    try:
        checks = card_checks(state)
        checks += relay_checks("v1", "1.0", state) + relay_checks("v03", "1.0", state)
        checks += relay_checks("v1", "0.3", state) + relay_checks("v03", "0.3", state)
        checks += isolation_checks(state) + wire_checks() + push_checks(receiver, state)
        checks += ask_tool_checks() + failure_checks(state) + audit_checks(state)
        if os.environ.get("A2A_CLUSTER") == "1":
            checks += cluster_checks()
        for name, fn in checks:
            await suite.check(name, fn)
    finally:
        receiver.close()
    return suite.report(state.get("notes", []))


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
