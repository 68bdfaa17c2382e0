// The official A2A JavaScript SDK (@a2a-js/sdk 1.3.0, pinned in package-lock.json) as a second
// independent client of a running sluice (Node >= 20). Run by tests/interop/a2a/run.sh, which
// copies this file next to the installed node_modules.
//
// Checks: card resolution through the SDK's resolver and ClientFactory (and the SDK's typed view of
// the card's security schemes), a blocking SendMessage
// running get_customer, the order of a SendStreamingMessage stream, cancel (and cancel again:
// TaskNotCancelable), and one 0.3 call through the SDK's legacy JSON-RPC transport
// (`legacyCompat`) picked from the card's 0.3 interface. Each check prints `PASS name` or
// `FAIL name: why`; the last line is `N passed, N failed`.
//
// Env: SLUICE_URL (base URL of the instance).

import { randomUUID } from 'node:crypto';
import {
  CancelTaskRequest,
  GetTaskRequest,
  SendMessageRequest,
  StreamResponse,
  Task,
} from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  createAuthenticatingFetchWithRetry,
} from '@a2a-js/sdk/client';

const BASE = (process.env.SLUICE_URL ?? 'http://127.0.0.1:8080').replace(/\/$/, '');
const AGENT_URL = `${BASE}/runtime/a2a/agent/a2a`;
const ALICE = 'rtk_a2aalicekey2_alice-a2a-interop-secret-0123456789abcdefgh';
const ADA = { id: 'c-100', name: 'Ada Lovelace', city: 'London' };
const GRACE = { id: 'c-200', name: 'Grace Hopper', city: 'New York' };
const TERMINAL = new Set([
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
]);
const CHECK_TIMEOUT_MS = 30_000;

// The last HTTP exchanges, printed when a check fails.
const wire = [];
const loggingFetch = async (url, init) => {
  const entry = { request: `${init?.method ?? 'GET'} ${url}`, body: init?.body ?? '' };
  const headers = new Headers(init?.headers);
  entry.version = headers.get('a2a-version');
  wire.push(entry);
  if (wire.length > 6) wire.shift();
  const response = await fetch(url, init);
  entry.status = response.status;
  const type = response.headers.get('content-type') ?? '';
  entry.response = type.includes('text/event-stream') ? '(event stream)' : await response.clone().text();
  return response;
};

// The SDK's own way of presenting a credential: an authenticating fetch.
const authFetch = createAuthenticatingFetchWithRetry(loggingFetch, {
  headers: async () => ({ Authorization: `Bearer ${ALICE}` }),
  shouldRetryWithHeaders: async () => undefined,
});

function factory(legacy = false) {
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [
      new JsonRpcTransportFactory({ fetchImpl: authFetch, legacyCompat: { enabled: legacy } }),
    ],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: loggingFetch }),
  });
  return new ClientFactory(options);
}

function expect(condition, why) {
  if (!condition) throw new Error(why);
}

function toolMessage(tool, args, { asText = false } = {}) {
  const call = { tool, arguments: args };
  return {
    messageId: randomUUID(),
    role: 'ROLE_USER',
    parts: [asText ? { text: JSON.stringify(call) } : { data: call }],
  };
}

function sendRequest(message, configuration = {}) {
  return SendMessageRequest.fromJSON({ message, configuration });
}

function taskJson(result) {
  expect(result && typeof result === 'object' && 'status' in result && 'id' in result,
    `the answer is not a Task: ${JSON.stringify(result)?.slice(0, 300)}`);
  return Task.toJSON(result);
}

function dataParts(artifact) {
  return (artifact?.parts ?? []).filter((p) => 'data' in p).map((p) => p.data);
}

function same(a, b) {
  const norm = (v) => JSON.stringify(v, Object.keys(v ?? {}).sort());
  return norm(a) === norm(b);
}

function errorName(err) {
  return err?.cause?.name ?? err?.name ?? String(err);
}

async function expectError(promise, name) {
  let result;
  try {
    result = await promise;
  } catch (err) {
    expect(errorName(err) === name, `expected ${name}, got ${errorName(err)}: ${err?.message}`);
    return err;
  }
  throw new Error(`expected ${name}, got a result: ${JSON.stringify(result)?.slice(0, 300)}`);
}

const state = {};
let passed = 0;
let failed = 0;

async function check(name, fn) {
  wire.length = 0;
  const started = Date.now();
  let timer;
  try {
    await Promise.race([
      fn(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${CHECK_TIMEOUT_MS / 1000}s`)), CHECK_TIMEOUT_MS);
      }),
    ]);
    passed += 1;
    console.log(`PASS   ${name} (${((Date.now() - started) / 1000).toFixed(1)}s)`);
  } catch (err) {
    failed += 1;
    console.log(`FAIL   ${name}: ${err?.message ?? err}`.slice(0, 1500));
    for (const entry of wire.slice(-3)) {
      console.log(`    > ${entry.request} a2a-version=${entry.version}`);
      if (entry.body) console.log(`    > ${String(entry.body).slice(0, 700)}`);
      console.log(`    < ${entry.status} ${String(entry.response ?? '').slice(0, 700)}`);
    }
  } finally {
    clearTimeout(timer);
  }
}

async function untilTerminal(client, id) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const task = Task.toJSON(await client.getTask(GetTaskRequest.fromJSON({ id })));
    if (TERMINAL.has(task.status?.state)) return task;
    expect(Date.now() < deadline, `task ${id} never ended: ${JSON.stringify(task.status)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// === the checks ===

await check('js: card resolution (resolver + ClientFactory pick the JSONRPC 1.0 interface)', async () => {
  // The resolver resolves the relative `.well-known/agent-card.json` against the base as a URL, so
  // the agent's base URL is given with its trailing slash (…/a2a/.well-known/agent-card.json).
  const card = await new DefaultAgentCardResolver({ fetchImpl: loggingFetch }).resolve(`${AGENT_URL}/`);
  state.card = card;
  const interfaces = card.supportedInterfaces ?? [];
  expect(
    interfaces.some((i) => i.url === AGENT_URL && i.protocolBinding === 'JSONRPC' && i.protocolVersion === '1.0'),
    `no JSONRPC 1.0 interface at ${AGENT_URL}: ${JSON.stringify(interfaces)}`,
  );
  expect(card.capabilities?.streaming === true, `capabilities ${JSON.stringify(card.capabilities)}`);
  const skills = (card.skills ?? []).map((s) => s.id).sort();
  expect(JSON.stringify(skills) === JSON.stringify(['fail', 'get_customer', 'slow']), `skills ${skills}`);
  const client = await factory().createFromUrl(`${AGENT_URL}/`);
  expect(client.protocolVersion === '1.0', `the client speaks ${client.protocolVersion}`);
  state.client = client;
});

await check('js: the resolver takes the card for a 1.0 (ProtoJSON) card: typed security schemes', async () => {
  // DefaultAgentCardResolver parses a card with AgentCard.fromJSON only when it looks like
  // ProtoJSON; a security scheme carrying a 0.3 `type` member makes it keep the raw JSON, and the
  // SDK's typed view (`scheme.$case`) of the schemes is then empty.
  expect(state.card, 'no card');
  const scheme = state.card.securitySchemes?.apiKey?.scheme;
  expect(
    scheme?.$case === 'httpAuthSecurityScheme' && scheme.value?.scheme === 'Bearer',
    `securitySchemes.apiKey.scheme is ${JSON.stringify(scheme)}, not the SDK's typed HTTP bearer scheme ` +
      `(the card's first scheme: ${JSON.stringify(Object.values(state.card.securitySchemes ?? {})[0])?.slice(0, 300)})`,
  );
});

if (!state.client) {
  console.log('FAIL   js: no client could be built from the card');
  failed += 1;
} else {
  const client = state.client;

  await check('js: blocking sendMessage runs get_customer: COMPLETED with the artifact data', async () => {
    const task = taskJson(await client.sendMessage(sendRequest(toolMessage('get_customer', { id: 'c-100' }))));
    expect(task.status?.state === 'TASK_STATE_COMPLETED', `state ${JSON.stringify(task.status)}`);
    const artifact = task.artifacts?.[0];
    expect(artifact?.artifactId === 'result', `artifact ${JSON.stringify(artifact)}`);
    expect(same(dataParts(artifact)[0], ADA), `artifact data ${JSON.stringify(dataParts(artifact))}`);
  });

  await check('js: sendMessageStream: the Task first, WORKING, the artifact, COMPLETED last', async () => {
    const events = [];
    for await (const event of client.sendMessageStream(sendRequest(toolMessage('get_customer', { id: 'c-200' })))) {
      events.push(StreamResponse.toJSON(event));
    }
    const kinds = events.map((e) => Object.keys(e)[0]);
    expect(kinds[0] === 'task', `the first event is ${kinds[0]}: ${kinds}`);
    const states = events.filter((e) => e.statusUpdate).map((e) => e.statusUpdate.status?.state);
    expect(states.at(-1) === 'TASK_STATE_COMPLETED', `last status ${states.at(-1)}: ${states}`);
    expect(kinds.at(-1) === 'statusUpdate', `the stream does not end with the status: ${kinds}`);
    const artifactAt = kinds.indexOf('artifactUpdate');
    expect(artifactAt > 0 && artifactAt < kinds.length - 1, `artifact position in ${kinds}`);
    const workingAt = events.findIndex((e) => e.statusUpdate?.status?.state === 'TASK_STATE_WORKING');
    const firstState = events[0].task?.status?.state;
    expect(firstState === 'TASK_STATE_WORKING' || (workingAt > 0 && workingAt < artifactAt),
      `no WORKING before the artifact: ${JSON.stringify(states)} (first ${firstState})`);
    const artifact = events[artifactAt].artifactUpdate.artifact;
    expect(same(dataParts(artifact)[0], GRACE), `artifact data ${JSON.stringify(dataParts(artifact))}`);
    const taskId = events[0].task.id;
    expect(events.slice(1).every((e) => (e.statusUpdate ?? e.artifactUpdate)?.taskId === taskId), 'an event of another task');
  });

  await check('js: cancel a slow task: CANCELED; cancel again: TaskNotCancelableError', async () => {
    const started = taskJson(await client.sendMessage(
      sendRequest(toolMessage('slow', { ms: 3000 }, { asText: true }), { returnImmediately: true }),
    ));
    expect(!TERMINAL.has(started.status?.state), `the slow task is already ${started.status?.state}`);
    const canceled = Task.toJSON(await client.cancelTask(CancelTaskRequest.fromJSON({ id: started.id })));
    expect(canceled.status?.state === 'TASK_STATE_CANCELED', `cancel answered ${JSON.stringify(canceled.status)}`);
    const err = await expectError(client.cancelTask(CancelTaskRequest.fromJSON({ id: started.id })), 'TaskNotCancelableError');
    expect(err.envelopeCode === -32002, `code ${err.envelopeCode}`);
    await expectError(client.cancelTask(CancelTaskRequest.fromJSON({ id: randomUUID() })), 'TaskNotFoundError');
  });

  await check('js 0.3: legacyCompat transport on the card\'s 0.3 interface: message/send, then tasks/get', async () => {
    const legacy = (state.card.supportedInterfaces ?? []).filter(
      (i) => i.protocolBinding === 'JSONRPC' && i.protocolVersion === '0.3',
    );
    expect(legacy.length === 1, `the card has no single JSONRPC 0.3 interface: ${JSON.stringify(state.card.supportedInterfaces)}`);
    const card = { ...state.card, supportedInterfaces: legacy };
    const old = await factory(true).createFromAgentCard(card);
    expect(old.protocolVersion === '0.3', `the legacy client speaks ${old.protocolVersion}`);
    const task = taskJson(await old.sendMessage(sendRequest(toolMessage('get_customer', { id: 'c-100' }))));
    const sent = wire.find((e) => String(e.body).includes('message/send'));
    expect(sent, `the SDK sent no message/send: ${wire.map((e) => String(e.body).slice(0, 80))}`);
    expect(task.status?.state === 'TASK_STATE_COMPLETED', `state ${JSON.stringify(task.status)}`);
    expect(same(dataParts(task.artifacts?.[0])[0], ADA), `artifact ${JSON.stringify(task.artifacts)}`);
    const again = await untilTerminal(old, task.id);
    expect(again.id === task.id && again.status?.state === 'TASK_STATE_COMPLETED', `tasks/get ${JSON.stringify(again.status)}`);
  });
}

console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed ? 1 : 0;
